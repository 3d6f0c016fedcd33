//! The long tail (SPEC §14, decision 0044): a consent banner no rule knows,
//! found by what it is (`generic.js`), in every world of the worker's in
//! every document of the page, top and frames, through open shadow roots,
//! and in closed ones opened through CDP. Its vocabulary is autoconsent's
//! own heuristic patterns, cut from the vendored bundle at run time (the
//! file stays unmodified), and ours for the languages it lacks.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::BUNDLE;
use crate::cdp::{CdpError, Connection};
use crate::commands::{CallArgument, CallFunctionOn, DescribeNode, Evaluate, ResolveNode};

/// Where autoconsent's heuristic patterns start and end in its bundle.
const PATTERNS_START: &str = "// lib/heuristic-patterns.ts";
const PATTERNS_END: &str = "// lib/heuristics.ts";
const SCRIPT: &str = include_str!("generic.js");

/// How long a banner whose reject control was pressed may take to go
/// (most remove themselves at once, some after a short transition), then
/// it is hidden.
pub const PRESSED_WAIT: Duration = Duration::from_millis(1_000);
/// How long a pressed banner may stay before its choice is saved.
const SAVE_AFTER: Duration = Duration::from_millis(250);
const POLL: Duration = Duration::from_millis(40);
/// How long one world may take to answer a look: a world whose frame is
/// being taken away may never answer, and must not hold the capture for
/// a whole command timeout.
pub const LOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// What a scan may do: press a banner's one reject control (or hide it),
/// or only hide (the page is frozen: a press could no longer run its
/// handlers' timers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Act,
    Hide,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Act => "act",
            Mode::Hide => "hide",
        }
    }
}

/// What the scans of one look at the page found and did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Scan {
    pub found: u32,
    pub pressed: u32,
    pub hidden: u32,
    #[serde(default)]
    pub closed: u32,
}

impl Scan {
    fn add(&mut self, other: Scan) {
        self.found += other.found;
        self.pressed += other.pressed;
        self.hidden += other.hidden;
    }
}

/// The detector, with autoconsent's patterns in (built once).
pub fn script() -> &'static str {
    static FULL: LazyLock<String> = LazyLock::new(|| {
        let patterns = heuristic_patterns(BUNDLE).expect("the vendored bundle carries its heuristic patterns");
        SCRIPT.replace("__PATTERNS__", patterns)
    });
    &FULL
}

/// autoconsent's `lib/heuristic-patterns.ts`, as its bundle has it: the
/// `var … = [ … ];` lists of detection, reject, settings, accept and
/// acknowledge patterns, and the never-match lists.
fn heuristic_patterns(bundle: &str) -> Option<&str> {
    let start = bundle.find(PATTERNS_START)?;
    let end = start + bundle[start..].find(PATTERNS_END)?;
    Some(&bundle[start..end])
}

/// Looks for banners no rule knows in each of `worlds` (session, context)
/// at once, and deals with them as `mode` says; a pressed banner still
/// shown after [`PRESSED_WAIT`] is hidden. Returns what was done, and how
/// long it took when it found anything.
pub async fn look(
    cdp: &Connection,
    worlds: &[(String, i64)],
    live: impl Fn() -> Vec<(String, i64)>,
    mode: Mode,
    timeout: Duration,
) -> (Scan, Duration) {
    let started = Instant::now();
    let scans = worlds
        .iter()
        .map(|(session, world)| scan_world(cdp, session, *world, mode, timeout));
    let scans = futures::future::join_all(scans).await;
    let mut total = Scan::default();
    let mut pressed_in = Vec::new();
    for (scan, world) in scans.into_iter().zip(worlds) {
        if scan.pressed > 0 {
            pressed_in.push(world.clone());
        }
        total.add(scan);
    }
    if !pressed_in.is_empty() {
        let hidden_after = settle_pressed(cdp, &pressed_in, live).await;
        total.hidden += hidden_after;
        total.pressed -= hidden_after.min(total.pressed);
    }
    let spent = if total.found > 0 {
        started.elapsed()
    } else {
        Duration::ZERO
    };
    (total, spent)
}

/// One world: the detector defined there if it is not yet, a scan, and
/// the closed shadow roots it met opened and scanned.
async fn scan_world(cdp: &Connection, session: &str, world: i64, mode: Mode, timeout: Duration) -> Scan {
    // The detector's ~50 KiB are sent and compiled once per world: asked
    // first whether it is there.
    let scan_expression = format!(
        "window.__pageImportGeneric ? window.__pageImportGeneric.scan({:?}) : null",
        mode.as_str()
    );
    let mut scanned = evaluate(cdp, session, world, &scan_expression, timeout).await;
    if matches!(scanned, Ok(Value::Null)) {
        scanned = match evaluate(cdp, session, world, script(), timeout).await {
            Ok(_) => evaluate(cdp, session, world, &scan_expression, timeout).await,
            Err(e) => Err(e),
        };
    }
    let mut scan: Scan = match scanned {
        Ok(value) => serde_json::from_value(value).unwrap_or_default(),
        Err(e) => {
            tracing::debug!(error = %e, "a world could not look for a banner (its frame may be gone)");
            return Scan::default();
        }
    };
    for host in 0..scan.closed {
        match scan_closed(cdp, session, world, host, mode, timeout).await {
            Ok(closed) => scan.add(closed),
            Err(e) => tracing::debug!(error = %e, "a closed shadow root could not be looked into"),
        }
    }
    scan
}

/// The closed shadow root of the `index`th host the detector met, opened
/// through CDP (`DOM.describeNode` pierces it, `DOM.resolveNode` gives it
/// to the worker's world), scanned there.
async fn scan_closed(
    cdp: &Connection,
    session: &str,
    world: i64,
    index: u32,
    mode: Mode,
    timeout: Duration,
) -> Result<Scan, CdpError> {
    let host = cdp
        .send(
            Some(session),
            &Evaluate {
                expression: &format!("window.__pageImportGeneric.closedHosts[{index}]"),
                context_id: Some(world),
                await_promise: false,
                return_by_value: false,
            },
            timeout,
        )
        .await?;
    let Some(host) = host.result.object_id else {
        return Ok(Scan::default());
    };
    let describe = DescribeNode {
        backend_node_id: None,
        object_id: Some(&host),
        depth: 1,
        pierce: true,
    };
    let described = cdp.send(Some(session), &describe, timeout).await?;
    let Some(root) = described.node.shadow_roots.first() else {
        return Ok(Scan::default());
    };
    let resolve = ResolveNode {
        backend_node_id: root.backend_node_id,
        execution_context_id: world,
    };
    let Some(root) = cdp.send(Some(session), &resolve, timeout).await?.object.object_id else {
        return Ok(Scan::default());
    };
    let function = format!(
        "function (host) {{ return window.__pageImportGeneric.scanClosed(host, this, {:?}); }}",
        mode.as_str()
    );
    let call = CallFunctionOn {
        object_id: &root,
        function_declaration: &function,
        arguments: vec![CallArgument { object_id: &host }],
        return_by_value: true,
    };
    let scanned = cdp.send(Some(session), &call, timeout).await?;
    Ok(scanned
        .value()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default())
}

/// Waits until no pressed banner is still shown in `worlds`, at most
/// [`PRESSED_WAIT`]; one still shown after [`SAVE_AFTER`] has its toggles
/// turned off and its one save control pressed (a CMP whose "decline"
/// only unticks its purposes); what is still shown at the end is hidden
/// (the next scan does it). Returns how many were hidden. A world that is
/// gone (`live` no longer has it: its frame was removed after the choice,
/// as a CMP's frame is) has nothing pending, and is never asked again.
async fn settle_pressed(cdp: &Connection, pressed_in: &[(String, i64)], live: impl Fn() -> Vec<(String, i64)>) -> u32 {
    let started = Instant::now();
    let mut saved = false;
    let timeout = PRESSED_WAIT;
    loop {
        let live = live();
        let worlds: Vec<_> = pressed_in.iter().filter(|w| live.contains(w)).collect();
        let pending = worlds.iter().map(|(session, world)| async move {
            // A world that is gone (its frame removed after the choice)
            // has nothing pending.
            evaluate(cdp, session, *world, "window.__pageImportGeneric.pending()", timeout)
                .await
                .map(|v| v == Value::Bool(true))
                .unwrap_or(false)
        });
        let still = futures::future::join_all(pending).await.into_iter().any(|p| p);
        if !still {
            return 0;
        }
        if started.elapsed() >= PRESSED_WAIT {
            break;
        }
        if !saved && started.elapsed() >= SAVE_AFTER {
            saved = true;
            for (session, world) in &worlds {
                if let Err(e) = evaluate(cdp, session, *world, "window.__pageImportGeneric.save()", timeout).await {
                    tracing::debug!(error = %e, "a pressed banner's choice could not be saved (its frame may be gone)");
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
    let mut hidden = 0;
    let live = live();
    for (session, world) in pressed_in.iter().filter(|w| live.contains(w)) {
        if let Ok(value) = evaluate(
            cdp,
            session,
            *world,
            "window.__pageImportGeneric.scan(\"hide\")",
            timeout,
        )
        .await
        {
            hidden += serde_json::from_value::<Scan>(value).map(|s| s.hidden).unwrap_or(0);
        }
    }
    hidden
}

async fn evaluate(
    cdp: &Connection,
    session: &str,
    world: i64,
    expression: &str,
    timeout: Duration,
) -> Result<Value, CdpError> {
    super::evaluate(cdp, session, world, expression, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autoconsents_patterns_are_cut_from_its_bundle() {
        let patterns = heuristic_patterns(BUNDLE).unwrap();
        for list in [
            "DETECT_PATTERNS",
            "REJECT_PATTERNS",
            "SETTINGS_PATTERNS",
            "ACCEPT_PATTERNS",
            "ACKNOWLEDGE_PATTERNS",
            "BUTTON_NEVER_MATCH_PATTERNS",
            "DETECT_NEVER_MATCH_PATTERNS",
        ] {
            assert!(patterns.contains(&format!("var {list} = [")), "{list}");
        }
        assert!(
            !patterns.contains("function "),
            "patterns only, no code of the heuristic"
        );
        let script = script();
        assert!(!script.contains("__PATTERNS__"));
        assert!(script.contains("var REJECT_PATTERNS_GERMAN"));
    }

    /// The long tail's decision (`decide` in `generic.js`: a banner or not,
    /// and the one control to press), run in Node.js on the detector as the
    /// worker builds it. Each case: the layer's text, its controls' labels,
    /// and the answer (`None`: no banner; `Some(-1)`: a banner to hide;
    /// `Some(i)`: press control `i`).
    #[test]
    fn the_long_tail_presses_only_a_lone_reject_in_every_language_and_never_accept() {
        let cases: &[(&str, &[&str], Option<i64>)] = &[
            (
                "We use cookies to improve your experience.",
                &["Accept all", "Reject all"],
                Some(1),
            ),
            ("This website uses cookies.", &["Necessary only", "Allow all"], Some(0)),
            (
                "Wir verwenden Cookies, um unsere Website zu verbessern.",
                &["Alle akzeptieren", "Nur notwendige"],
                Some(1),
            ),
            (
                "Nous utilisons des cookies pour mesurer l'audience.",
                &["Tout accepter", "Tout refuser"],
                Some(1),
            ),
            (
                "Utilizamos cookies propias y de terceros.",
                &["Aceptar", "Rechazar"],
                Some(1),
            ),
            (
                "Utilizziamo i cookie per migliorare il sito.",
                &["Accetta", "Rifiuta"],
                Some(1),
            ),
            (
                "Utilizamos cookies para melhorar a sua experiência.",
                &["Aceitar", "Rejeitar"],
                Some(1),
            ),
            (
                "Wij gebruiken cookies om de website te verbeteren.",
                &["Accepteren", "Weigeren"],
                Some(1),
            ),
            (
                "Używamy plików cookie, aby ulepszyć stronę.",
                &["Akceptuję", "Odrzuć"],
                Some(1),
            ),
            (
                "Vi använder cookies för att förbättra webbplatsen.",
                &["Godkänn alla", "Avvisa"],
                Some(1),
            ),
            ("Vi bruger cookies til statistik.", &["Accepter", "Afvis"], Some(1)),
            ("Vi bruker informasjonskapsler (cookies).", &["Godta", "Avvis"], Some(1)),
            (
                "Käytämme evästeitä sivuston parantamiseen.",
                &["Hyväksy kaikki", "Hylkää"],
                Some(1),
            ),
            (
                "Používáme soubory cookie ke zlepšení webu.",
                &["Přijmout vše", "Odmítnout"],
                Some(1),
            ),
            (
                "当サイトではクッキーを使用しています。",
                &["同意する", "拒否する"],
                Some(1),
            ),
            ("이 사이트는 쿠키를 사용합니다.", &["동의", "거부"], Some(1)),
            ("本网站使用cookie来改善体验。", &["接受", "拒绝"], Some(1)),
            // Two controls say reject, or none does: hidden, nothing pressed.
            ("We use cookies.", &["Reject all", "Decline"], Some(-1)),
            ("We use cookies.", &["Accept", "Settings"], Some(-1)),
            (
                "We use cookies and similar technologies.",
                &["Continue with technically required cookies only", "Agree and continue"],
                Some(0),
            ),
            (
                "We use cookies to give you the best experience.",
                &["OK, got it"],
                Some(-1),
            ),
            (
                "We use cookies.",
                &["Accept all", "Agree", "Allow", "OK", "Got it", "Continue"],
                Some(-1),
            ),
            // Not consent: left alone.
            (
                "Subscribe to our newsletter. We respect your privacy.",
                &["Subscribe", "No thanks"],
                None,
            ),
            (
                "You must be 18 or older to enter this site.",
                &["Yes, I am 18", "No"],
                None,
            ),
            ("Do you like our new design?", &["Accept", "Decline"], None),
            (
                "Sign in. Read our privacy policy.",
                &["Sign in", "Privacy policy"],
                None,
            ),
            (
                "The best chocolate chip cookies recipe: butter, sugar, flour.",
                &["Print recipe"],
                None,
            ),
            ("Choose your region", &["Europe", "United States"], None),
            (
                "Choose your region to see prices. We use cookies to remember it.",
                &["Accept all", "Reject all"],
                None,
            ),
            (
                "Subscribe to our newsletter. We use cookies to remember you.",
                &["Subscribe", "No thanks"],
                None,
            ),
        ];
        let harness = format!(
            "globalThis.window = globalThis;\n{}\nconst cases = {};\n\
             process.stdout.write(JSON.stringify(cases.map(([t, l]) => window.__pageImportGeneric.decide(t, l))));",
            script(),
            serde_json::to_string(&cases.iter().map(|(t, l, _)| (t, l)).collect::<Vec<_>>()).unwrap()
        );
        let dir = std::env::temp_dir().join(format!("generic-decide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("decide.js");
        std::fs::write(&file, harness).unwrap();
        let output = std::process::Command::new("node")
            .arg(&file)
            .output()
            .expect("node runs the detector (scripts/lib.sh installs npm, and Node.js with it)");
        std::fs::remove_dir_all(&dir).ok();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let answers: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
        for ((text, labels, expected), answer) in cases.iter().zip(&answers) {
            let got = answer["banner"]
                .as_bool()
                .unwrap()
                .then(|| answer["press"].as_i64().unwrap());
            assert_eq!(got, *expected, "{text} {labels:?}: {answer}");
        }
    }
}
