//! What the worker reads from autoconsent's rules before any page loads
//! (SPEC §14 "No flash" and "Cost"): for the top frame and for subframes,
//! the selectors to prehide from the first paint, and the *marks*, the
//! selectors of which a page must show one before any rule can recognize
//! its CMP.
//!
//! A rule recognizes its CMP when every step of its `detectCmp` holds, so
//! the first step that names a selector (`exists`, `visible`; the host of a
//! shadow-root chain; every branch of an `any`) is a mark: without an
//! element it matches, the rule cannot fire. A page that shows no mark
//! never loads autoconsent (see the light script in `scripts.rs`). Site rules (a `urlPattern`)
//! are marked by their URL instead. The CMPs autoconsent writes in code
//! (its `dynamicCMPs`) are read by hand in [`DYNAMIC`]; a unit test checks
//! that list against the bundle, so an update that adds or changes one
//! fails until this file says what it looks for.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// The newest rule-step version the vendored bundle runs
/// (`SUPPORTED_RULE_STEP_VERSION`); newer rules are skipped, as it does.
const SUPPORTED_RULE_STEP_VERSION: u32 = 2;

/// Hidden in every frame by autoconsent whatever the rules
/// (`prehideElements`' `globalHidden`).
const GLOBAL_PREHIDE: &str = "#didomi-popup,.didomi-popup-container,.didomi-popup-notice,.didomi-consent-popup-preferences,#didomi-notice,.didomi-popup-backdrop,.didomi-screen-medium";

/// What a page's light script knows before the page runs.
#[derive(Debug, Serialize)]
pub struct Plan {
    pub top: FramePlan,
    pub frame: FramePlan,
    /// Rules no mark can stand for (their detection is an `eval` of the
    /// page's own objects only): not looked for before autoconsent loads.
    #[serde(skip)]
    pub unmarked: Vec<String>,
}

/// The plan for one kind of frame (the top frame, or any subframe).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FramePlan {
    /// Prehidden from the first paint (the generic rules').
    pub prehide: Vec<String>,
    /// CSS marks of the generic rules.
    pub marks: Vec<String>,
    /// XPath marks (autoconsent's `xpath/` selectors), without the prefix.
    pub xpath_marks: Vec<String>,
    /// The site rules, each `[keys, urlPattern, prehide]`: a URL the
    /// pattern matches is marked, and gets the rule's prehide selectors.
    /// `keys` are strings every URL the pattern matches contains (one per
    /// alternative; an empty one: none known), so that only a candidate's
    /// pattern is compiled: one expression of all ~600 patterns took
    /// 40 ms of every page's load.
    pub sites: Vec<(Vec<String>, String, String)>,
    /// Whether Sourcepoint's message frame (told by its URL) is looked for.
    pub sourcepoint: bool,
}

/// autoconsent's compact rule file (`compact-rules.json`).
#[derive(Deserialize)]
struct Compact {
    v: u32,
    s: Vec<String>,
    r: Vec<CompactRule>,
}

/// `[stepVersion, name, cosmetic, urlPattern, frames, prehide, detectCmp,
/// detectPopup, optOut, test, options]`; what the plan needs, the rest
/// ignored.
#[derive(Deserialize)]
struct CompactRule(
    u32,
    String,
    serde::de::IgnoredAny,
    String,
    u32,
    Vec<usize>,
    Vec<Step>,
    serde::de::IgnoredAny,
    serde::de::IgnoredAny,
    serde::de::IgnoredAny,
    serde::de::IgnoredAny,
);

/// A rule in autoconsent's declarative syntax (our own rules).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Declarative {
    name: String,
    #[serde(default)]
    prehide_selectors: Vec<String>,
    detect_cmp: Vec<Step>,
    #[serde(default)]
    run_context: RunContext,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RunContext {
    main: Option<bool>,
    frame: Option<bool>,
    url_pattern: Option<String>,
}

/// A detection step: the keys that name selectors (compact: indexes into
/// the strings), the rest ignored.
#[derive(Deserialize)]
struct Step {
    e: Option<usize>,
    v: Option<usize>,
    exists: Option<Selector>,
    visible: Option<Selector>,
    any: Option<Vec<Step>>,
}

/// A selector, or a chain through shadow roots and frames (its first
/// element is in the document).
#[derive(Deserialize)]
#[serde(untagged)]
enum Selector {
    One(String),
    Chain(Vec<String>),
}

impl Step {
    /// The selectors of which one must match for this step to hold; `None`
    /// when the step names none (an `eval`, a cookie, a wait).
    fn marks(&self, strings: &[String]) -> Result<Option<Vec<String>>, String> {
        if let Some(i) = self.e.or(self.v) {
            let selector = strings.get(i).ok_or_else(|| format!("string {i} out of range"))?;
            return Ok(Some(vec![selector.clone()]));
        }
        if let Some(selector) = self.exists.as_ref().or(self.visible.as_ref()) {
            let first = match selector {
                Selector::One(s) => s.clone(),
                Selector::Chain(chain) => chain.first().cloned().ok_or("an empty selector chain")?,
            };
            return Ok(Some(vec![first]));
        }
        if let Some(any) = &self.any {
            let mut all = Vec::new();
            for branch in any {
                match branch.marks(strings)? {
                    Some(marks) => all.extend(marks),
                    None => return Ok(None),
                }
            }
            return Ok(Some(all));
        }
        Ok(None)
    }
}

/// The first step that names selectors stands for the rule.
fn rule_marks(steps: &[Step], strings: &[String]) -> Result<Option<Vec<String>>, String> {
    for step in steps {
        if let Some(marks) = step.marks(strings)? {
            return Ok(Some(marks));
        }
    }
    Ok(None)
}

/// One rule as the plan sees it.
struct Rule {
    name: String,
    top: bool,
    frame: bool,
    url_pattern: Option<String>,
    prehide: Vec<String>,
    /// `None`: no mark can stand for it. `Some` and empty: it can never fire
    /// (autoconsent's `aria/`, `text/` and `pierce/` selectors match nothing).
    marks: Option<Vec<String>>,
    /// Told by its URL (Sourcepoint's message frame).
    by_url: bool,
}

/// A CMP autoconsent writes in code: what its class prehides and what its
/// `detectCmp` looks for, read from the bundle.
struct Dynamic {
    /// The class's name in the bundle's `dynamicCMPs`.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the test that checks the list against the bundle")
    )]
    class: &'static str,
    name: &'static str,
    top: bool,
    frame: bool,
    url_pattern: Option<&'static str>,
    prehide: &'static [&'static str],
    marks: &'static [&'static str],
    by_url: bool,
}

const fn dynamic(
    class: &'static str,
    name: &'static str,
    prehide: &'static [&'static str],
    marks: &'static [&'static str],
) -> Dynamic {
    Dynamic {
        class,
        name,
        top: true,
        frame: false,
        url_pattern: None,
        prehide,
        marks,
        by_url: false,
    }
}

/// autoconsent's `dynamicCMPs`, in its order. Admiral's second form (a
/// fixed `body > div` whose text names Admiral's VRM) has no selector of
/// its own; its consent card is the mark.
const DYNAMIC: &[Dynamic] = &[
    dynamic(
        "TrustArcTop",
        "TrustArc-top",
        &[
            ".trustarc-banner-container",
            ".truste_popframe,.truste_overlay,.truste_box_overlay,#truste-consent-track",
        ],
        &["#truste-show-consent", "#truste-consent-track"],
    ),
    dynamic(
        "Cookiebot",
        "Cybotcookiebot",
        &["#CybotCookiebotDialog,#CybotCookiebotDialogBodyUnderlay,#dtcookie-container,#cookiebanner,#cb-cookieoverlay,.modal--cookie-banner,#cookiebanner_outer,#CookieBanner"],
        // Its detection asks the page's `Cookiebot` object; the dialog it
        // shows is the mark.
        &["#CybotCookiebotDialog"],
    ),
    Dynamic {
        frame: true,
        by_url: true,
        ..dynamic(
            "SourcePoint",
            "Sourcepoint-frame",
            &["div[id^='sp_message_container_'],.message-overlay", "#sp_privacy_manager_container"],
            &[],
        )
    },
    dynamic(
        "ConsentManager",
        "consentmanager.net",
        &["#cmpbox,#cmpbox2"],
        &["#cmpbox", "#cmpbox2"],
    ),
    dynamic("Evidon", "Evidon", &[], &["#_evidon_banner"]),
    dynamic(
        "Onetrust",
        "Onetrust",
        &["#onetrust-banner-sdk,#onetrust-consent-sdk,.onetrust-pc-dark-filter,.js-consent-banner"],
        &["#onetrust-banner-sdk", "#onetrust-pc-sdk"],
    ),
    dynamic(
        "Klaro",
        "Klaro",
        &[".klaro"],
        &[".klaro > .cookie-modal", ".klaro > .cookie-notice"],
    ),
    dynamic(
        "Uniconsent",
        "Uniconsent",
        &[".unic", ".modal:has(.unic)"],
        &[".unic .unic-box,.unic .unic-bar,.unic .unic-modal"],
    ),
    dynamic("Conversant", "Conversant", &[".cmp-root"], &[".cmp-root .cmp-receptacle"]),
    Dynamic {
        url_pattern: Some("tiktok"),
        ..dynamic("Tiktok", "tiktok.com", &[], &["tiktok-cookie-banner"])
    },
    Dynamic {
        url_pattern: Some("^https://(www\\.)?tumblr\\.com/"),
        ..dynamic("Tumblr", "tumblr-com", &["#cmp-app-container"], &["#cmp-app-container"])
    },
    dynamic(
        "Admiral",
        "Admiral",
        &[],
        &["div > div[class*=Card] > div[class*=Frame] > div[class*=Pills] > button[class*=Pills__StyledPill]"],
    ),
];

/// `selector` with what it leaves open closed, as Chromium's selector
/// parser closes it at the end of the string: a rule's selector that lacks
/// its last `]` or `)` is read alone, but in a list it would swallow the
/// selectors after it.
fn closed(selector: &str) -> String {
    let mut open = Vec::new();
    let mut quote = None;
    let mut chars = selector.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => open.push(')'),
            (None, '[') => open.push(']'),
            (None, ')' | ']') if open.last() == Some(&c) => {
                open.pop();
            }
            (None, _) => {}
        }
    }
    let mut closed = selector.to_owned();
    closed.extend(quote);
    closed.extend(open.iter().rev());
    closed
}

/// Strings that every string `pattern` (a JavaScript regular expression
/// of a URL) matches contains: for each of its top-level alternatives, the
/// longest run of literal characters outside any group, class or
/// optional part (an empty string when there is none).
fn literal_keys(pattern: &str) -> Vec<String> {
    top_level_alternatives(pattern)
        .into_iter()
        .map(longest_literal)
        .collect()
}

/// `pattern` cut at its `|`s outside groups and classes.
fn top_level_alternatives(pattern: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut class, mut start) = (Vec::new(), 0usize, false, 0);
    let mut chars = pattern.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !class => class = true,
            ']' if class => class = false,
            '(' if !class => depth += 1,
            ')' if !class => depth = depth.saturating_sub(1),
            '|' if !class && depth == 0 => {
                parts.push(&pattern[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&pattern[start..]);
    parts
}

/// The longest literal run of one alternative (see [`literal_keys`]).
fn longest_literal(alternative: &str) -> String {
    let chars: Vec<char> = alternative.chars().collect();
    let (mut runs, mut run) = (Vec::new(), String::new());
    let mut i = 0;
    while i < chars.len() {
        // The next atom: a literal character, or something that is not one.
        let (literal, next) = match chars[i] {
            '\\' if chars.get(i + 1).is_some_and(|c| !c.is_ascii_alphanumeric()) => (Some(chars[i + 1]), i + 2),
            '\\' => (None, i + 2),
            '(' | '[' => (None, skip_group(&chars, i)),
            '.' | '^' | '$' => (None, i + 1),
            c => (Some(c), i + 1),
        };
        i = next;
        // A quantifier after it: optional (`?`, `*`, `{…}`) is no literal;
        // `+` keeps one and ends the run.
        let quantifier = chars.get(i).copied().filter(|q| matches!(q, '?' | '*' | '+' | '{'));
        match (literal, quantifier) {
            (Some(c), None) => run.push(c),
            (Some(c), Some('+')) => {
                run.push(c);
                runs.push(std::mem::take(&mut run));
            }
            _ => runs.push(std::mem::take(&mut run)),
        }
        if let Some(q) = quantifier {
            i = match q {
                '{' => chars[i..]
                    .iter()
                    .position(|c| *c == '}')
                    .map_or(chars.len(), |end| i + end + 1),
                _ => i + 1,
            };
            // A lazy quantifier's `?`.
            if chars.get(i) == Some(&'?') {
                i += 1;
            }
        }
    }
    runs.push(run);
    // Every URL has its scheme: the rest of a run is the key.
    let without_scheme = |run: String| match run.strip_prefix("https://").or(run.strip_prefix("http://")) {
        Some(rest) => rest.to_owned(),
        None => run,
    };
    runs.into_iter()
        .map(without_scheme)
        .max_by_key(String::len)
        .unwrap_or_default()
}

/// The index after the group or class that starts at `start`.
fn skip_group(chars: &[char], start: usize) -> usize {
    let (mut depth, mut class, mut i) = (0usize, false, start);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' if !class => class = true,
            ']' if class => {
                class = false;
                if depth == 0 {
                    return i + 1;
                }
            }
            '(' if !class => depth += 1,
            ')' if !class => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// Run-context digits of a compact rule: tens for the top frame, units for
/// subframes; 1 yes, 0 no, anything else autoconsent's default (top yes,
/// subframes no).
fn frames(code: u32) -> (bool, bool) {
    let digit = |d: u32, default: bool| match d {
        1 => true,
        0 => false,
        _ => default,
    };
    (digit(code / 10 % 10, true), digit(code % 10, false))
}

/// Autoconsent's compact rules of a step version this worker reads.
fn compact_rules(compact: &Compact) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for r in compact.r.iter().filter(|r| r.0 <= SUPPORTED_RULE_STEP_VERSION) {
        let (top, frame) = frames(r.4);
        let prehide =
            r.5.iter()
                .map(|&i| {
                    compact
                        .s
                        .get(i)
                        .cloned()
                        .ok_or_else(|| format!("{}: string {i} out of range", r.1))
                })
                .collect::<Result<_, _>>()?;
        rules.push(Rule {
            name: r.1.clone(),
            top,
            frame,
            url_pattern: (!r.3.is_empty()).then(|| r.3.clone()),
            prehide,
            marks: rule_marks(&r.6, &compact.s).map_err(|e| format!("{}: {e}", r.1))?,
            by_url: false,
        });
    }
    Ok(rules)
}

impl Plan {
    /// The plan of autoconsent's compact rules and ours.
    pub fn build(compact: &str, ours: &str) -> Result<Plan, String> {
        let compact: Compact = serde_json::from_str(compact).map_err(|e| format!("compact rules: {e}"))?;
        if compact.v > 1 {
            return Err(format!("compact rule format {} (this worker reads 1)", compact.v));
        }
        let ours: Vec<Declarative> = serde_json::from_str(ours).map_err(|e| format!("our rules: {e}"))?;
        let mut rules = compact_rules(&compact)?;
        for rule in ours {
            rules.push(Rule {
                top: rule.run_context.main.unwrap_or(true),
                frame: rule.run_context.frame.unwrap_or(false),
                url_pattern: rule.run_context.url_pattern.filter(|p| !p.is_empty()),
                prehide: rule.prehide_selectors,
                marks: rule_marks(&rule.detect_cmp, &[]).map_err(|e| format!("{}: {e}", rule.name))?,
                name: rule.name,
                by_url: false,
            });
        }
        for cmp in DYNAMIC {
            rules.push(Rule {
                name: cmp.name.to_owned(),
                top: cmp.top,
                frame: cmp.frame,
                url_pattern: cmp.url_pattern.map(str::to_owned),
                prehide: cmp.prehide.iter().map(|s| s.to_string()).collect(),
                marks: Some(cmp.marks.iter().map(|s| s.to_string()).collect()),
                by_url: cmp.by_url,
            });
        }
        let unmarked = rules
            .iter()
            .filter(|r| r.marks.is_none() && !r.by_url && r.url_pattern.is_none())
            .map(|r| r.name.clone())
            .collect();
        Ok(Plan {
            top: FramePlan::of(rules.iter().filter(|r| r.top)),
            frame: FramePlan::of(rules.iter().filter(|r| r.frame)),
            unmarked,
        })
    }
}

impl FramePlan {
    fn of<'a>(rules: impl Iterator<Item = &'a Rule>) -> FramePlan {
        let mut plan = FramePlan {
            prehide: vec![GLOBAL_PREHIDE.to_owned()],
            ..FramePlan::default()
        };
        let mut seen = HashSet::new();
        for rule in rules {
            plan.sourcepoint |= rule.by_url;
            if let Some(pattern) = &rule.url_pattern {
                let selectors: Vec<_> = rule.prehide.iter().map(|s| closed(s)).collect();
                plan.sites
                    .push((literal_keys(pattern), pattern.clone(), selectors.join(",")));
                continue;
            }
            for selector in rule.prehide.iter().map(|s| closed(s)) {
                if seen.insert(("prehide", selector.clone())) {
                    plan.prehide.push(selector);
                }
            }
            for mark in rule.marks.iter().flatten().map(|s| closed(s)) {
                if !seen.insert(("mark", mark.clone())) {
                    continue;
                }
                if let Some(xpath) = mark.strip_prefix("xpath/") {
                    plan.xpath_marks.push(xpath.to_owned());
                } else if !["aria/", "text/", "pierce/"].iter().any(|p| mark.starts_with(p)) {
                    plan.marks.push(mark);
                }
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consent::{BUNDLE, OUR_RULES, RULES};

    fn plan() -> Plan {
        Plan::build(RULES, OUR_RULES).expect("the vendored rules make a plan")
    }

    #[test]
    fn every_generic_rule_is_marked_or_named() {
        let plan = plan();
        assert_eq!(
            plan.unmarked,
            vec!["gdpr-legal-cookie".to_owned()],
            "a rule whose detection names no selector is looked for only once autoconsent loads: \
             a new one must be seen here"
        );
        assert!(plan.top.marks.len() > 150, "{} marks", plan.top.marks.len());
        assert!(plan.frame.marks.len() < plan.top.marks.len());
    }

    #[test]
    fn the_libraries_the_tests_use_are_marked_and_prehidden() {
        let plan = plan();
        let top = &plan.top;
        for mark in [
            ".klaro > .cookie-notice",
            ".orejime-Env",
            "#onetrust-banner-sdk",
            "#CybotCookiebotDialog",
        ] {
            assert!(top.marks.iter().any(|m| m == mark), "{mark} is a mark");
        }
        for prehide in [".klaro", ".orejime-Banner", GLOBAL_PREHIDE] {
            assert!(top.prehide.iter().any(|p| p == prehide), "{prehide} is prehidden");
        }
        assert!(
            top.sourcepoint && plan.frame.sourcepoint,
            "Sourcepoint is told by URL in every frame"
        );
        assert!(
            !plan.frame.marks.iter().any(|m| m == ".klaro > .cookie-notice"),
            "Klaro runs in the top frame only"
        );
    }

    #[test]
    fn site_rules_are_keyed_by_what_their_urls_must_contain() {
        let plan = plan();
        let site = |plan: &FramePlan, pattern: &str| plan.sites.iter().find(|(_, p, _)| p == pattern).cloned();
        let coasthotels = r"^https?://(www\.)?coasthotels\.com/";
        assert_eq!(
            site(&plan.frame, coasthotels).map(|(keys, _, _)| keys),
            Some(vec!["coasthotels.com/".to_owned()]),
            "a site rule for its frames"
        );
        assert!(site(&plan.top, coasthotels).is_none(), "not for its top frame");
        assert!(site(&plan.top, "tiktok").is_some());
        let weak: Vec<_> = plan
            .top
            .sites
            .iter()
            .filter(|(keys, _, _)| keys.iter().any(|k| k.len() < 5))
            .collect();
        assert!(weak.len() < 10, "patterns compiled on too many pages: {weak:?}");
    }

    #[test]
    fn a_patterns_keys_are_in_every_url_it_matches() {
        let keys = |p: &str| literal_keys(p);
        assert_eq!(keys(r"^https?://(www\.)?coasthotels\.com/"), ["coasthotels.com/"]);
        assert_eq!(keys(r"^https://(www|help)\.coinbase\.com"), [".coinbase.com"]);
        assert_eq!(keys("tiktok"), ["tiktok"]);
        assert_eq!(
            keys(r"^https?://(www\.)?a\.com/|^https?://(www\.)?bb\.org/"),
            ["a.com/", "bb.org/"]
        );
        assert_eq!(keys(r"^https://(\w+\.)+dji\.com/"), ["dji.com/"]);
        assert_eq!(keys(r"^https://plus\.gmx\.com/lt(?:[?#]|$)"), ["plus.gmx.com/lt"]);
        assert_eq!(keys(r"^https://(www\.)?ebay\.([.a-z]+)/"), ["ebay."]);
        assert_eq!(
            keys("ab?cd"),
            ["cd"],
            "an optional character ends the run without itself"
        );
        assert_eq!(keys("x{0,2}yz"), ["yz"]);
        assert_eq!(keys("a+bc"), ["bc"]);
        assert_eq!(keys(r"\d+"), [""]);
    }

    #[test]
    fn a_selector_left_open_is_closed_as_chromium_closes_it() {
        assert_eq!(
            closed(r#"a[href^="https://policies.google.com/technologies/cookies""#),
            r#"a[href^="https://policies.google.com/technologies/cookies"]"#
        );
        assert_eq!(closed("div:not(.a"), "div:not(.a)");
        assert_eq!(closed(r#"a[title="x"#), r#"a[title="x"]"#);
        assert_eq!(
            closed(r#"a[title="(]"]"#),
            r#"a[title="(]"]"#,
            "inside quotes nothing opens"
        );
        assert_eq!(closed(r"#a\(b"), r"#a\(b", "an escaped parenthesis opens nothing");
        assert_eq!(closed(".a:is(.b, [c=')'])"), ".a:is(.b, [c=')'])");
        let plan = plan();
        assert!(plan
            .top
            .marks
            .iter()
            .any(|m| m == r#"a[href^="https://policies.google.com/technologies/cookies"]"#));
    }

    #[test]
    fn run_contexts_read_as_autoconsent_reads_them() {
        assert_eq!(frames(10), (true, false));
        assert_eq!(frames(1), (false, true));
        assert_eq!(frames(11), (true, true));
        assert_eq!(frames(22), (true, false), "2 is autoconsent's 'unset'");
        assert_eq!(frames(12), (true, false));
    }

    #[test]
    fn steps_give_their_selectors_and_an_eval_gives_none() {
        let strings = vec!["#a".to_owned(), "#b".to_owned()];
        let steps: Vec<Step> = serde_json::from_str(
            r##"[{"eval": "EVAL_X"}, {"any": [{"e": 0}, {"exists": ["#host", "button"]}]}, {"v": 1}]"##,
        )
        .unwrap();
        assert_eq!(
            rule_marks(&steps, &strings).unwrap(),
            Some(vec!["#a".to_owned(), "#host".to_owned()])
        );
        let eval_only: Vec<Step> = serde_json::from_str(r#"[{"any": [{"eval": "X"}, {"e": 0}]}]"#).unwrap();
        assert_eq!(rule_marks(&eval_only, &strings).unwrap(), None);
        let broken: Vec<Step> = serde_json::from_str(r#"[{"e": 9}]"#).unwrap();
        assert!(
            rule_marks(&broken, &strings).is_err(),
            "a string index out of range is an error"
        );
    }

    #[test]
    fn the_hand_read_cmps_are_the_bundles_own() {
        let start = BUNDLE
            .find("var dynamicCMPs = [")
            .expect("the bundle lists its dynamic CMPs");
        let end = start + BUNDLE[start..].find("];").unwrap();
        let classes: Vec<&str> = BUNDLE[start..end]
            .trim_start_matches("var dynamicCMPs = [")
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let ours: Vec<&str> = DYNAMIC.iter().map(|d| d.class).collect();
        assert_eq!(
            classes, ours,
            "a new or renamed CMP in code: read its prehide and detection"
        );
        for cmp in DYNAMIC {
            assert!(
                BUNDLE.contains(&format!("\"{}\"", cmp.name)),
                "{} is named in the bundle",
                cmp.name
            );
            for selector in cmp.prehide.iter().chain(cmp.marks) {
                // TrustArc builds one of its selectors from constants.
                let literal = selector.replace(",#truste-consent-track", "");
                assert!(
                    BUNDLE.contains(&literal),
                    "{}'s {selector} is not in the bundle any more",
                    cmp.name
                );
            }
        }
    }
}
