// The consent world's light script (SPEC §14, decision 0038), run in every
// new document before the page's own scripts: the prehide from the first
// paint, and a look for the marks of any CMP the rules know, at
// DOMContentLoaded, at load, at an interval and when the worker asks
// (`window.__pageImportLight.look()`), until the worker lifts it (`lift()`)
// before the page is frozen. It reports `{"type": "marks"}` once over the
// binding; the worker then loads autoconsent in this world.
//
// The worker fills in the upper-case placeholders (`consent/scripts.rs`):
// the binding's name, the plan (`consent/rules.rs`: the marks, the prehide
// and the site rules of the top frame and of subframes) and the interval.
(() => {
  const report = window.__BINDING__;
  if (typeof report !== "function") return;
  const all = __PLAN__;
  const isTop = window.top === window && (!location.ancestorOrigins || location.ancestorOrigins.length === 0);
  const plan = isTop ? all.top : all.frame;
  const href = location.href;
  const sites = plan.sites.filter(([keys, pattern]) => keys.some((k) => href.includes(k)) && new RegExp(pattern).test(href));
  const site = sites.length > 0;
  const hidden = plan.prehide.concat(sites.map(([, , s]) => s).filter((s) => s));
  const rule = hidden.join(",") + " { opacity: 0 !important; z-index: -1 !important; pointer-events: none !important; } ";
  const prehide = () => {
    const parent = document.head || document.documentElement;
    if (!parent) return false;
    const style = document.createElement("style");
    style.id = "autoconsent-prehide";
    style.textContent = rule;
    parent.appendChild(style);
    return true;
  };
  if (!prehide()) {
    const observer = new MutationObserver(() => { if (prehide()) observer.disconnect(); });
    observer.observe(document, { childList: true, subtree: true });
  }
  const sourcepoint = () => {
    try {
      const url = new URL(href);
      const q = url.searchParams;
      return (q.has("message_id") && url.hostname === "ccpa-notice.sp-prod.net") || url.hostname === "ccpa-pm.sp-prod.net" ||
        (["/index.html", "/privacy-manager/index.html", "/ccpa_pm/index.html", "/us_pm/index.html"].includes(url.pathname) &&
         (q.has("message_id") || q.has("requestUUID") || q.has("consentUUID")));
    } catch (e) { return false; }
  };
  // Each mark parsed once on a detached element: those that also parse in
  // a list are asked in one query, the rest (a selector Chromium accepts
  // alone by closing it at its end) one by one, as autoconsent asks them.
  let css = null;
  let alone = [];
  const parse = () => {
    const probe = document.createElement("i");
    const parses = (s) => { try { probe.matches(s); return true; } catch (e) { return false; } };
    const listed = [];
    for (const m of plan.marks) {
      if (parses(m + ",i")) listed.push(m);
      else if (parses(m)) alone.push(m);
    }
    css = listed.join(",");
  };
  const matches = () => {
    if (css === null) parse();
    if (css && document.querySelector(css)) return true;
    if (alone.some((m) => document.querySelector(m))) return true;
    return plan.xpathMarks.some((x) => {
      try { return !!document.evaluate(x, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue; } catch (e) { return false; }
    });
  };
  let marked = false;
  let stopped = false;
  let timer = 0;
  const look = () => {
    if (marked || stopped || document.readyState === "loading") return marked;
    clearTimeout(timer);
    if (site || (plan.sourcepoint && sourcepoint()) || matches()) {
      marked = true;
      report(JSON.stringify({ type: "marks" }));
      return true;
    }
    timer = setTimeout(look, __LOOK_EVERY_MS__);
    return false;
  };
  document.addEventListener("DOMContentLoaded", look, { once: true });
  window.addEventListener("load", look, { once: true });
  look();
  window.__pageImportLight = {
    look,
    lift() {
      stopped = true;
      clearTimeout(timer);
      if (window.__autoconsent) window.__autoconsent.undoPrehide();
      else for (const style of document.querySelectorAll("style#autoconsent-prehide")) style.remove();
    },
  };
})();
