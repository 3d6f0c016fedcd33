//! The scripts of the worker's consent world, in two stages (SPEC §14
//! "Cost": a page without a CMP pays ≤ 50 ms).
//!
//! - [`light`], in every new document before it runs: the prehide from the
//!   first paint, and a look for the marks of any CMP ([`super::rules`]) at
//!   `DOMContentLoaded`, at `load`, then every [`LOOK_EVERY_MS`] and when
//!   the capture asks ([`LOOK`]), until the capture freezes the page. It is a few dozen KiB and touches nothing else.
//! - [`engine`], only in a frame that showed a mark (the worker evaluates
//!   it in that frame's world when the light script reports `marks`): the
//!   bridge to the worker's binding, the rules, and autoconsent. Its 394 KiB
//!   (the bundle 137 KiB, the rules 257 KiB) are compiled only where a CMP
//!   may be.

use std::sync::LazyLock;
use std::time::Duration;

use super::rules::Plan;
use super::{BINDING, BUNDLE, OUR_RULES, RULES};

/// Where the bundle makes its one instance: kept on the world's `window`
/// so that the worker can ask it, after the opt-out, whether the popup is
/// still up, and hide it if it is.
const INSTANCE: &str = "const consent = new AutoConsent(";
const INSTANCE_KEPT: &str = "const consent = window.__autoconsent = new AutoConsent(";

/// The light script's source (`light.js`), before the worker fills it in.
const LIGHT_SCRIPT: &str = include_str!("light.js");

/// How often the light script looks again for a late CMP's marks
/// (autoconsent's own detection retries every 500 ms).
pub const LOOK_EVERY_MS: u32 = 500;

/// autoconsent's configuration: opt out, prehide (kept for as long as a
/// capture may wait), rules only (no text heuristic), no logs.
const CONFIG: &str = r#"{
  "enabled": true, "autoAction": "optOut", "disabledCmps": [],
  "enablePrehide": true, "prehideTimeout": 30000,
  "enableCosmeticRules": true, "enableGeneratedRules": true, "detectRetries": 20,
  "isMainWorld": false, "enableHeuristicDetection": false, "heuristicMode": "off",
  "enablePopupMutationObserver": false, "visualTest": false, "performanceLoggingEnabled": false,
  "heuristicPopupSearchTimeout": 0,
  "logs": {"lifecycle": false, "rulesteps": false, "detectionsteps": false, "evals": false,
           "errors": false, "messages": false, "waits": false}
}"#;

/// What the light script knows of the vendored rules (built once).
pub fn plan() -> &'static Plan {
    static PLAN: LazyLock<Plan> =
        LazyLock::new(|| Plan::build(RULES, OUR_RULES).expect("the vendored consent rules make a plan"));
    &PLAN
}

/// The light script, run in the world of every new document: reports
/// `{"type": "marks"}` once over the binding when the frame shows a CMP's
/// mark, and keeps `window.__pageImportLight.lift()` for the worker.
///
/// The prehide is autoconsent's own (`style#autoconsent-prehide`, opacity
/// 0): the engine, once loaded, adds to that element and removes it.
pub fn light() -> &'static str {
    static LIGHT: LazyLock<String> = LazyLock::new(|| {
        let plan = serde_json::to_string(plan()).expect("a plan is JSON");
        LIGHT_SCRIPT
            .replace("__BINDING__", BINDING)
            .replace("__LOOK_EVERY_MS__", &LOOK_EVERY_MS.to_string())
            .replace("__PLAN__", &plan)
    });
    &LIGHT
}

/// The engine, evaluated in the world of a frame that showed a mark: the
/// bridge (autoconsent's `init` answered in the world itself, every
/// message reported over the binding), then autoconsent.
pub fn engine() -> &'static str {
    static ENGINE: LazyLock<String> = LazyLock::new(|| {
        assert!(
            BUNDLE.contains(INSTANCE),
            "autoconsent no longer makes its instance as expected"
        );
        let bundle = BUNDLE.replacen(INSTANCE, INSTANCE_KEPT, 1);
        format!(
            r#"(() => {{
  const report = window.{BINDING};
  if (typeof report !== "function") return;
  const config = {CONFIG};
  const rules = {{ autoconsent: {OUR_RULES}, compact: {RULES} }};
  window.autoconsentSendMessage = (message) => {{
    if (message && message.type === "init") {{
      setTimeout(() => window.autoconsentReceiveMessage({{ type: "initResp", config, rules }}), 0);
    }}
    report(JSON.stringify(message));
    return Promise.resolve();
  }};
}})();
{bundle}"#
        )
    });
    &ENGINE
}

/// In the world, after the opt-out: whether the CMP's popup is still up
/// for a reader. autoconsent's own check of its rule (`detectPopup`, each
/// call bounded to 300 ms) says "up" for any element in the layout, and a
/// CMP that closes by fading keeps its dialog there: vanilla-cookieconsent's
/// modal ends at `visibility: hidden` inside its fixed container, which
/// autoconsent still counts as visible. So the popup is up only while an
/// element the rule looks at (its `visible` and `exists` selectors), or one
/// inside it (open shadow trees too), draws a box a reader sees (an area,
/// `visibility: visible`, not faded out), or may draw in a closed shadow
/// tree; and a popup that is closing is given `closing` to finish (its
/// transition; polled every 50 ms). A rule with no such selectors (a CMP
/// drawn by code) keeps autoconsent's answer.
pub fn popup_still_up(closing: Duration) -> String {
    POPUP_STILL_UP.replace("__CLOSING_MS__", &closing.as_millis().to_string())
}

const POPUP_STILL_UP: &str = r#"(async () => {
  const ac = window.__autoconsent;
  const cmp = ac && ac.foundCmp;
  if (!cmp) return false;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const detected = () => Promise.race([cmp.detectPopup().then((v) => !!v, () => false), sleep(300).then(() => false)]);
  const selectors = ((cmp.rule && cmp.rule.detectPopup) || [])
    .flatMap((step) => [step.visible, step.exists])
    .filter(Boolean);
  const faded = (el) => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
      if (parseFloat(getComputedStyle(e).opacity) < 0.05) return true;
    }
    return false;
  };
  const drawn = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1 && getComputedStyle(el).visibility === "visible" && !faded(el);
  };
  // The element and what is under it, open shadow trees too (500 at
  // most). A custom element with no open shadow root may draw in a
  // closed one nobody here can see: it is taken as up.
  const seen = (root) => {
    const stack = [root];
    for (let n = 0; stack.length && n < 500; n++) {
      const e = stack.pop();
      if (drawn(e)) return true;
      if (e.localName.includes("-") && !e.shadowRoot) return true;
      if (e.shadowRoot) stack.push(...e.shadowRoot.children);
      stack.push(...e.children);
    }
    return false;
  };
  const up = async () => {
    if (!(await detected())) return false;
    if (!selectors.length) return true;
    return selectors.some((s) => {
      try { return ac.domActions.elementSelector(s).some(seen); } catch (e) { return true; }
    });
  };
  const until = performance.now() + __CLOSING_MS__;
  while (await up()) {
    if (performance.now() >= until) return true;
    await sleep(50);
  }
  return false;
})()"#;

/// In the world: hides the CMP's elements (its rule's own selectors, and
/// every known CMP's prehide selectors) and releases a scroll lock left on
/// `html` or `body`. True when the frame had a CMP to hide.
pub const HIDE: &str = r#"(() => {
  const ac = window.__autoconsent;
  const cmp = ac && ac.foundCmp;
  if (!cmp) return false;
  const selectors = (cmp.prehideSelectors || []).concat(cmp.rule && cmp.rule.prehideSelectors || []);
  if (selectors.length) ac.domActions.hide(selectors.join(","), "display");
  ac.prehideElements();
  for (const el of [document.documentElement, document.body]) {
    if (!el) continue;
    const style = getComputedStyle(el);
    if (style.overflow === "hidden" || style.overflowY === "hidden") {
      el.style.setProperty("overflow", "visible", "important");
    }
  }
  return true;
})()"#;

/// In the world, when the capture deals with the banner: a look for marks
/// now (a CMP may have come between two of the light script's looks).
/// True when the frame shows one (it was reported too).
pub const LOOK: &str = r#"(() => {
  const light = window.__pageImportLight;
  return !!(light && light.look());
})()"#;

/// In the world, once the capture is about to freeze the page: the look
/// for marks stopped and the prehide lifted. autoconsent keeps its prehide
/// while it still looks for a CMP (20 tries, 500 ms apart) or for
/// `prehideTimeout`, and the light script until this; on a page without a
/// banner, that would capture any element a rule's prehide selector
/// matches at `opacity: 0`, and the prehide's own `<style>` as the page's.
pub const LIFT_PREHIDE: &str = r#"(() => {
  const light = window.__pageImportLight;
  if (!light) return false;
  light.lift();
  return true;
})()"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closing_popup_is_given_what_it_is_told() {
        let script = popup_still_up(Duration::from_millis(250));
        assert!(script.contains("performance.now() + 250;"), "{script}");
        assert!(!script.contains("__CLOSING_MS__"));
    }

    #[test]
    fn the_engine_keeps_autoconsents_instance_and_carries_the_rules() {
        let engine = engine();
        assert!(
            engine.contains(INSTANCE_KEPT),
            "the bundle's instance is kept on the world's window"
        );
        assert!(engine.contains(r#""autoAction": "optOut""#));
        assert!(engine.contains(r#""enableHeuristicDetection": false"#));
        assert!(serde_json::from_str::<serde_json::Value>(CONFIG).is_ok());
    }

    #[test]
    fn the_light_script_is_light_and_carries_the_plan_not_the_rules() {
        let light = light();
        assert!(light.len() < 96 * 1024, "the light script is {} bytes", light.len());
        assert!(light.contains(r#"".klaro > .cookie-notice""#));
        assert!(light.contains(r#"style.id = "autoconsent-prehide""#));
        assert!(!light.contains("AutoConsent"), "no part of the bundle");
        for placeholder in ["__BINDING__", "__PLAN__", "__LOOK_EVERY_MS__"] {
            assert!(!light.contains(placeholder), "{placeholder} is filled in");
        }
        assert!(
            BUNDLE.contains(r#"getStyleElement("autoconsent-prehide")"#),
            "the engine's prehide is the same element as the light script's"
        );
    }
}
