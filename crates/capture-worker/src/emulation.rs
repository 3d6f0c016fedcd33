//! The reader's device, language, clock and colour scheme (SPEC §14), set
//! on every target of the capture's browser context before its first byte:
//! the page's own session before it navigates, and each cross-site frame's
//! session while the frame is paused at its start (`targets.rs`). Each of
//! these is per target, so two captures side by side never see each
//! other's.
//!
//! Where SPEC is silent this does what Chrome DevTools' device mode does:
//! the user agent is the one Chrome sends on that platform, its version
//! reduced to the major (`Chrome/156.0.0.0`, as Chrome's own), and the
//! client hints agree with it (brands built the way Chromium builds them).
//! A phone is Chrome on Android (`Android 10; K`, Chrome's own reduced
//! form), with five touch points; a desktop is Chrome on Linux with a mouse
//! (the browser is launched with a desktop's pointer and hover: `browser.rs`).

use std::time::Duration;

use page_import_contract::capture::Emulation as AppliedEmulation;
use page_import_contract::job::{CaptureJob, ColorScheme, Viewport};
use serde::Serialize;

use crate::cdp::{CdpError, Command, Connection, Done};

/// What Chrome's reduced user agent says on each platform.
const DESKTOP_PLATFORM: &str = "X11; Linux x86_64";
const ANDROID_PLATFORM: &str = "Linux; Android 10; K";
/// How many touch points a phone has (`navigator.maxTouchPoints`), as
/// measured with touch emulation in FACTS.
const TOUCH_POINTS: u32 = 5;

/// The overrides one capture applies, built from its job and the browser.
#[derive(Debug, Clone)]
pub struct Emulation {
    viewport: Viewport,
    color_scheme: ColorScheme,
    locale: String,
    time_zone: String,
    user_agent: String,
    accept_language: String,
    metadata: UserAgentMetadata,
    /// `navigator.platform`.
    platform: &'static str,
}

/// Where a set of overrides goes: the page itself (its viewport too), a
/// frame in a process of its own, which takes its size from the page, or a
/// worker the page started (dedicated, shared or service), which has no
/// viewport or media of its own but speaks for the same reader: its
/// `navigator`, clock and requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Page,
    Frame,
    Worker,
}

#[derive(Debug, thiserror::Error)]
#[error("the browser's product {0:?} names no Chrome version")]
pub struct UnknownVersion(String);

impl Emulation {
    /// `product` is `Browser.getVersion`'s, e.g. `HeadlessChrome/156.0.8078.114`.
    pub fn new(job: &CaptureJob<'_>, product: &str) -> Result<Self, UnknownVersion> {
        let version = ChromeVersion::of(product).ok_or_else(|| UnknownVersion(product.to_owned()))?;
        let mobile = job.viewport.mobile;
        let user_agent = chrome_user_agent(version.major, mobile);
        Ok(Self {
            viewport: job.viewport,
            color_scheme: job.color_scheme,
            locale: job.locale.to_string(),
            time_zone: job.time_zone.to_string(),
            user_agent,
            accept_language: accept_language(&job.locale),
            metadata: UserAgentMetadata::of(&version, mobile),
            platform: if mobile { "Linux armv8l" } else { "Linux x86_64" },
        })
    }

    pub fn viewport(&self) -> Viewport {
        self.viewport
    }

    /// Sets every override on `session`, all at once.
    pub async fn apply(
        &self,
        cdp: &Connection,
        session: &str,
        target: Target,
        timeout: Duration,
    ) -> Result<(), CdpError> {
        if target == Target::Worker {
            return self.apply_to_worker(cdp, session, timeout).await;
        }
        let metrics = async {
            match target {
                Target::Page => send(cdp, session, self.device_metrics(), timeout).await,
                Target::Frame | Target::Worker => Ok(()),
            }
        };
        let touch = async {
            match self.viewport.mobile {
                true => {
                    let touch = SetTouchEmulationEnabled {
                        enabled: true,
                        max_touch_points: TOUCH_POINTS,
                    };
                    send(cdp, session, touch, timeout).await
                }
                false => Ok(()),
            }
        };
        let user_agent = SetUserAgentOverride {
            user_agent: &self.user_agent,
            accept_language: &self.accept_language,
            platform: self.platform,
            user_agent_metadata: &self.metadata,
        };
        let media = SetEmulatedMedia {
            features: [MediaFeature {
                name: "prefers-color-scheme",
                value: self.color_scheme.as_str(),
            }],
        };
        tokio::try_join!(
            metrics,
            touch,
            send(cdp, session, user_agent, timeout),
            send(cdp, session, SetLocaleOverride { locale: &self.locale }, timeout),
            send(
                cdp,
                session,
                SetTimezoneOverride {
                    timezone_id: &self.time_zone
                },
                timeout
            ),
            send(cdp, session, media, timeout),
        )?;
        Ok(())
    }

    /// [`Emulation::apply`] to a page that showed an earlier reader (an
    /// import set's tab, `room.rs`): every override replaced, and a
    /// desktop's touch emulation turned off again.
    pub async fn reapply(&self, cdp: &Connection, session: &str, timeout: Duration) -> Result<(), CdpError> {
        if !self.viewport.mobile {
            let touch = SetTouchEmulationEnabled {
                enabled: false,
                max_touch_points: TOUCH_POINTS,
            };
            send(cdp, session, touch, timeout).await?;
        }
        self.apply(cdp, session, Target::Page, timeout).await
    }

    /// A worker's overrides, sent at once while it waits for the debugger
    /// (a service worker answers only once it runs, so the caller runs it
    /// meanwhile; the commands reach it first, in order). The user agent
    /// twice: `Emulation`'s sets its `navigator` (client hints, languages),
    /// `Network`'s the headers of its own requests, which a service worker
    /// makes outside any page. Chromium gives a worker in the page's
    /// process the page's locale already and refuses a second override
    /// there ("Another locale override is already in effect"): that
    /// refusal is the page's locale in force, not a failure.
    async fn apply_to_worker(&self, cdp: &Connection, session: &str, timeout: Duration) -> Result<(), CdpError> {
        let user_agent = SetUserAgentOverride {
            user_agent: &self.user_agent,
            accept_language: &self.accept_language,
            platform: self.platform,
            user_agent_metadata: &self.metadata,
        };
        let network_user_agent = NetworkSetUserAgentOverride(user_agent);
        let locale = async {
            match send(cdp, session, SetLocaleOverride { locale: &self.locale }, timeout).await {
                Err(CdpError::Protocol { message, .. }) if message.contains("already in effect") => Ok(()),
                other => other,
            }
        };
        let time_zone = SetTimezoneOverride {
            timezone_id: &self.time_zone,
        };
        tokio::try_join!(
            send(cdp, session, user_agent, timeout),
            send(cdp, session, network_user_agent, timeout),
            locale,
            send(cdp, session, time_zone, timeout),
        )?;
        Ok(())
    }

    /// What the manifest says was applied.
    pub fn applied(&self) -> AppliedEmulation<'_> {
        AppliedEmulation {
            mobile: self.viewport.mobile,
            color_scheme: self.color_scheme,
            locale: &self.locale,
            time_zone: &self.time_zone,
            user_agent: &self.user_agent,
        }
    }

    fn device_metrics(&self) -> SetDeviceMetricsOverride {
        let v = self.viewport;
        SetDeviceMetricsOverride {
            width: v.width,
            height: v.height,
            device_scale_factor: v.device_scale_factor,
            mobile: v.mobile,
            // Without them `screen.width` stays 800 (FACTS).
            screen_width: v.width,
            screen_height: v.height,
        }
    }
}

/// Sends one override; its answer is empty.
async fn send<C: Command<Reply = Done>>(
    cdp: &Connection,
    session: &str,
    command: C,
    timeout: Duration,
) -> Result<(), CdpError> {
    cdp.send(Some(session), &command, timeout).await.map(|Done {}| ())
}

/// The user agent Chrome itself sends on the platform, its version
/// reduced to the major (`Chrome/156.0.0.0`): a phone's is Chrome on
/// Android, a desktop's Chrome on Linux. Also the browser's default
/// (`browser.rs`), for what Chromium fixes before any override can reach
/// it.
pub fn chrome_user_agent(major: u32, mobile: bool) -> String {
    let (platform, suffix) = if mobile {
        (ANDROID_PLATFORM, "Mobile Safari/537.36")
    } else {
        (DESKTOP_PLATFORM, "Safari/537.36")
    };
    format!("Mozilla/5.0 ({platform}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 {suffix}")
}

/// `Accept-Language` for a tag, as Chrome's own list `tag, language` makes
/// it: `ja-JP` → `ja-JP,ja` (Chrome adds `;q=0.9` to the second on the
/// wire, and `navigator.languages` is `["ja-JP", "ja"]`); a tag that is its
/// language alone stays alone.
fn accept_language(tag: &str) -> String {
    match tag.split_once('-') {
        Some((language, _)) => format!("{tag},{language}"),
        None => tag.to_owned(),
    }
}

/// Chrome's version, from a product string.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ChromeVersion {
    major: u32,
    full: String,
}

impl ChromeVersion {
    fn of(product: &str) -> Option<Self> {
        let (_, full) = product.split_once('/')?;
        let major = full.split('.').next()?.parse().ok()?;
        Some(Self {
            major,
            full: full.to_owned(),
        })
    }
}

/// `Emulation.UserAgentMetadata`: the client hints (`Sec-CH-UA-*`,
/// `navigator.userAgentData`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct UserAgentMetadata {
    brands: Vec<Brand>,
    full_version_list: Vec<Brand>,
    platform: &'static str,
    platform_version: &'static str,
    architecture: &'static str,
    model: &'static str,
    mobile: bool,
    bitness: &'static str,
    wow64: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Brand {
    brand: String,
    version: String,
}

impl UserAgentMetadata {
    /// What Chromium itself sends on Linux (measured: the same as a plain
    /// headless Chromium's, `HeadlessChrome` aside, which is only in the user
    /// agent string) and on Android (platform `Android`, the version of the
    /// user agent string; no model, as the reduced user agent names none).
    fn of(version: &ChromeVersion, mobile: bool) -> Self {
        let (platform, platform_version, architecture) = match mobile {
            true => ("Android", "10.0.0", ""),
            false => ("Linux", "", "x86"),
        };
        Self {
            brands: brands(version.major, &version.major.to_string(), false),
            full_version_list: brands(version.major, &version.full, true),
            platform,
            platform_version,
            architecture,
            model: "",
            mobile,
            bitness: "64",
            wow64: false,
        }
    }
}

/// The brand list of a Chromium build of this major version, as Chromium
/// builds it (`GenerateBrandVersionList` and
/// `GetGreasedUserAgentBrandVersion` in
/// `components/embedder_support/user_agent_utils.cc`): a placeholder
/// ("GREASE") brand whose punctuation, version and place the major version
/// picks, then `Chromium`. In the full version list the placeholder's
/// version is `N.0.0.0`.
fn brands(major: u32, version: &str, full: bool) -> Vec<Brand> {
    const GREASEY_CHARS: [char; 11] = [' ', '(', ':', '-', '.', '/', ')', ';', '=', '?', '_'];
    const GREASED_VERSIONS: [&str; 3] = ["8", "99", "24"];
    let seed = major as usize;
    let placeholder = Brand {
        brand: format!(
            "Not{}A{}Brand",
            GREASEY_CHARS[seed % GREASEY_CHARS.len()],
            GREASEY_CHARS[(seed + 1) % GREASEY_CHARS.len()]
        ),
        version: match full {
            true => format!("{}.0.0.0", GREASED_VERSIONS[seed % GREASED_VERSIONS.len()]),
            false => GREASED_VERSIONS[seed % GREASED_VERSIONS.len()].to_owned(),
        },
    };
    let chromium = Brand {
        brand: "Chromium".to_owned(),
        version: version.to_owned(),
    };
    // Two brands: the seed's parity orders them.
    match seed % 2 {
        0 => vec![placeholder, chromium],
        _ => vec![chromium, placeholder],
    }
}

// ---- The commands (each binds its method and its answer).

/// The viewport; also the `capture_floor` example's.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetDeviceMetricsOverride {
    pub width: i32,
    pub height: i32,
    pub device_scale_factor: f32,
    pub mobile: bool,
    pub screen_width: i32,
    pub screen_height: i32,
}

impl Command for SetDeviceMetricsOverride {
    const METHOD: &'static str = "Emulation.setDeviceMetricsOverride";
    type Reply = Done;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SetTouchEmulationEnabled {
    enabled: bool,
    max_touch_points: u32,
}

impl Command for SetTouchEmulationEnabled {
    const METHOD: &'static str = "Emulation.setTouchEmulationEnabled";
    type Reply = Done;
}

#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct SetUserAgentOverride<'a> {
    user_agent: &'a str,
    accept_language: &'a str,
    platform: &'a str,
    user_agent_metadata: &'a UserAgentMetadata,
}

impl Command for SetUserAgentOverride<'_> {
    const METHOD: &'static str = "Emulation.setUserAgentOverride";
    type Reply = Done;
}

/// The same override for the requests a target makes itself.
#[derive(Serialize)]
#[serde(transparent)]
struct NetworkSetUserAgentOverride<'a>(SetUserAgentOverride<'a>);

impl Command for NetworkSetUserAgentOverride<'_> {
    const METHOD: &'static str = "Network.setUserAgentOverride";
    type Reply = Done;
}

#[derive(Serialize)]
struct SetLocaleOverride<'a> {
    locale: &'a str,
}

impl Command for SetLocaleOverride<'_> {
    const METHOD: &'static str = "Emulation.setLocaleOverride";
    type Reply = Done;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SetTimezoneOverride<'a> {
    timezone_id: &'a str,
}

impl Command for SetTimezoneOverride<'_> {
    const METHOD: &'static str = "Emulation.setTimezoneOverride";
    type Reply = Done;
}

#[derive(Serialize)]
struct SetEmulatedMedia {
    features: [MediaFeature; 1],
}

#[derive(Serialize)]
struct MediaFeature {
    name: &'static str,
    value: &'static str,
}

impl Command for SetEmulatedMedia {
    const METHOD: &'static str = "Emulation.setEmulatedMedia";
    type Reply = Done;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(mobile: bool, locale: &str) -> CaptureJob<'static> {
        let mut job: CaptureJob<'static> = serde_json::from_value(serde_json::json!({
            "schemaVersion": 1, "pageImportId": "a", "attempt": 1, "nonce": "n",
            "source": {"kind": "public_url", "url": "https://example.com/"},
            "viewport": {"width": 390, "height": 844, "deviceScaleFactor": 3.0, "mobile": mobile},
            "readySelector": null, "colorScheme": "dark", "timeZone": "Asia/Tokyo",
            "artifacts": {"bucket": "b", "prefix": "page-imports/a/1/"}, "callbackUrl": "http://127.0.0.1/"
        }))
        .unwrap();
        job.locale = locale.to_owned().into();
        job
    }

    #[test]
    fn the_user_agent_is_chromes_own_for_the_platform_never_headless() {
        let product = "HeadlessChrome/156.0.8078.114";
        let desktop = Emulation::new(&job(false, "en-US"), product).unwrap();
        assert_eq!(
            desktop.user_agent,
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
        );
        let phone = Emulation::new(&job(true, "en-US"), product).unwrap();
        assert_eq!(
            phone.user_agent,
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36"
        );
        assert!(phone.metadata.mobile && phone.metadata.platform == "Android");
        assert!(!desktop.metadata.mobile && desktop.metadata.platform == "Linux");
        assert!(Emulation::new(&job(false, "en-US"), "Chromium").is_err());
    }

    /// Chromium 156's own list, read from `navigator.userAgentData` of a
    /// plain headless Chromium 156 (the integration test compares with the
    /// browser at hand).
    #[test]
    fn brands_are_built_as_chromium_builds_them() {
        let brand = |b: &str, v: &str| Brand {
            brand: b.to_owned(),
            version: v.to_owned(),
        };
        assert_eq!(
            brands(156, "156", false),
            [brand("Not:A-Brand", "8"), brand("Chromium", "156")]
        );
        assert_eq!(
            brands(156, "156.0.8078.114", true),
            [brand("Not:A-Brand", "8.0.0.0"), brand("Chromium", "156.0.8078.114")]
        );
        // 150: "Not;A=Brand" v8 (Chromium's own table for that milestone).
        assert_eq!(brands(150, "150", false)[0], brand("Not;A=Brand", "8"));
        assert_eq!(brands(157, "157", false)[0].brand, "Chromium");
    }

    #[test]
    fn accept_language_is_the_tag_then_its_language() {
        assert_eq!(accept_language("ja-JP"), "ja-JP,ja");
        assert_eq!(accept_language("zh-Hant-TW"), "zh-Hant-TW,zh");
        assert_eq!(accept_language("de"), "de");
    }

    #[test]
    fn commands_carry_chromes_parameter_names() {
        let e = Emulation::new(&job(true, "ja-JP"), "HeadlessChrome/156.0.8078.114").unwrap();
        let metrics = serde_json::to_value(e.device_metrics()).unwrap();
        assert_eq!(
            metrics,
            serde_json::json!({"width": 390, "height": 844, "deviceScaleFactor": 3.0, "mobile": true,
                               "screenWidth": 390, "screenHeight": 844})
        );
        let ua = serde_json::to_value(SetUserAgentOverride {
            user_agent: &e.user_agent,
            accept_language: &e.accept_language,
            platform: e.platform,
            user_agent_metadata: &e.metadata,
        })
        .unwrap();
        assert_eq!(ua["acceptLanguage"], "ja-JP,ja");
        assert_eq!(ua["platform"], "Linux armv8l");
        assert_eq!(
            ua["userAgentMetadata"]["fullVersionList"][1]["version"],
            "156.0.8078.114"
        );
        assert_eq!(ua["userAgentMetadata"]["platformVersion"], "10.0.0");
        assert_eq!(
            serde_json::to_value(SetTimezoneOverride {
                timezone_id: "Asia/Tokyo"
            })
            .unwrap(),
            serde_json::json!({"timezoneId": "Asia/Tokyo"})
        );
        assert_eq!(SetEmulatedMedia::METHOD, "Emulation.setEmulatedMedia");
    }
}
