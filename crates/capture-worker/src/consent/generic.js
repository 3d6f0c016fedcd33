// The long tail (SPEC §14 "The long tail", decision 0044): a consent banner
// no rule knows, found by what it is, in the worker's own world of any
// document. The worker evaluates this once per world when it deals with
// banners (`consent/generic.rs`), and asks `window.__pageImportGeneric`:
//
// - `scan(mode)`: finds the banners now shown and deals with each:
//   `mode` "act" presses its one reject control or hides it, "hide" only
//   hides (the page is frozen). Answers `{found, pressed, hidden, closed}`;
//   `closed` counts custom elements whose shadow root is closed (the worker
//   opens them through CDP and calls `scanClosed` for each).
// - `pending()`: whether a banner whose reject control was pressed is still
//   shown; `save()`: in each such banner, its toggles turned off and its
//   one save control pressed (once); the worker waits a moment, then
//   `scan("hide")` hides what is still shown.
//
// A banner is an element laid over the page or pinned to an edge of the
// viewport (fixed or sticky, a dialog, modal or top-layer element, or a bar
// at the very start or end of the body), whose text speaks of cookies or
// of consent to storing data or tracking (autoconsent's own heuristic
// patterns, put in by the worker, and ours for the languages it lacks), minus the
// pages autoconsent excludes (age checks), and whose controls are a choice
// about that (one of them reads as reject, settings, accept or a lone
// acknowledgement). Only a control that reads as reject (or "necessary
// only") is ever pressed, and only when it is the banner's only one;
// otherwise the banner is hidden with its backdrop and its scroll lock.
(() => {
  if (window.__pageImportGeneric) return;
  __PATTERNS__
  // Ours: languages autoconsent's patterns lack (SPEC §14 lists them), and
  // plainer phrasings of cookie use. Each needs cookie (or tracking)
  // wording: "privacy" alone never makes a banner.
  const OUR_DETECT = [
    /\b(we|this (web)?site|our (web)?site|site)\b.{0,60}\b(use[sd]?|using|store[sd]?|set[s]?)\b.{0,40}\bcookies?\b/is,
    /\bcookies?\b.{0,80}\b(consent|accept|agree|reject|decline|preferences|settings|your choice|experience|analytics|advertising|personali[sz])/is,
    /\b(consent|agree|accept)\b.{0,80}\b(cookies?|tracking|tracker)/is,
    /\b(tracking|trackers)\b.{0,80}\b(consent|accept|agree|reject|decline|opt)/is,
    /cookies?\b.{0,80}\b(verwenden|nutzen|einwilligung|zustimm|akzeptier|ablehnen)/is,
    /(クッキー|cookie).{0,40}(使用|利用|同意|拒否|保存|設定)/is,
    /(使用|利用).{0,40}(クッキー|cookie)/is,
    /(쿠키|cookie).{0,40}(사용|이용|동의|거부|저장|설정)/is,
    /(cookie|曲奇|小型文字檔|缓存文件).{0,40}(使用|同意|接受|拒绝|拒絕|存储|儲存|设置|設定)/is,
    /(使用|采用|採用).{0,40}(cookie)/is,
    /(evästeitä|evästeet|evästeiden)/is,
    /(informasjonskapsler|bruker cookies|benytter cookies|bruger cookies|anvender cookies)/is,
    /(vi använder|använder).{0,40}(kakor|cookies)/is,
    /(používáme|používá|používají).{0,40}(cookies|soubory cookie)/is,
    /(usamos|utilizamos|este site (usa|utiliza)|utiliza).{0,40}cookies/is,
    /(utilizziamo|questo sito (usa|utilizza)).{0,40}cookie/is,
    /(wij gebruiken|we gebruiken|deze website gebruikt).{0,40}cookies/is,
  ];
  // The page's own dialogs that may mention cookies in passing (SPEC §14
  // "Only consent"): a region, country or language picker, a newsletter, a
  // sign-in. autoconsent's own exclusions (age checks) come with it.
  const OUR_NEVER = [
    /\b(choose|select|change|pick|confirm)\s+(your|a|the)\s+(region|country|language|location|store|currency|delivery)\b/i,
    /\b(wählen sie|wähle)\s+(ihre|deine|ein)\s+(region|land|sprache)\b/i,
    /\b(choisissez|sélectionnez)\s+(votre|une)\s+(région|pays|langue)\b/i,
    /\b(elige|selecciona)\s+(tu|su)\s+(región|país|idioma)\b/i,
    /(地域|国|言語)を(選択|選んで)/,
    /\b(newsletter|subscribe to our|sign up for our|sign in to|log in to)\b/i,
  ];
  const OUR_REJECT = [
    /^(continue|proceed)\s+with\s+(only\s+)?(the\s+)?(technically|strictly)?\s*(necessary|essential|required)(\s+cookies)?(\s+only)?$/i,
    /^(use|accept|allow)?\s*(only\s+)?(the\s+)?(technically|strictly)\s+(necessary|essential|required)(\s+cookies)?(\s+only)?$/i,
    /^(拒否|拒否する|すべて拒否|全て拒否|同意しない|同意しません|辞退|辞退する|必要なもののみ|必須のみ|必要な(cookie|クッキー)のみ(許可)?|必須(cookie|クッキー)のみ(許可)?)$/i,
    /^(거부|모두 거부|거절|동의하지 않음|동의 안 함|필수만|필수 쿠키만( 허용)?)$/i,
    /^(拒绝|全部拒绝|拒絕|全部拒絕|不同意|仅必要|僅必要|仅限必要|只接受必要的?(cookie)?|仅接受必要的?(cookie)?)$/i,
    /^(afvis|afvis alle|kun nødvendige( cookies)?|avvis|avvis alle|avslå|avslå alle|bare nødvendige( cookies)?)$/i,
    /^(hylkää|hylkää kaikki|kieltäydy|vain välttämättömät( evästeet)?)$/i,
    /^(odmítnout|odmítnout vše|pouze nezbytné( cookies)?)$/i,
    /^(nur (technisch )?notwendige( cookies)?|alle ablehnen|ablehnen)$/i,
  ];
  const OUR_ACCEPT = [
    /^(同意|同意する|すべて同意|全て同意|受け入れる|すべて許可|全て許可|許可|ok|はい)$/i,
    /^(동의|모두 동의|수락|모두 허용|허용|확인)$/i,
    /^(接受|全部接受|同意|允许|允許|确定|確定|好的)$/i,
    /^(accepter|acceptér|godta|godkjenn|godkänn|hyväksy|hyväksy kaikki|přijmout|přijmout vše|tillåt|tillad)( alle| kaikki| vše)?$/i,
  ];
  // What confirms a choice once its toggles are off: "each toggle off,
  // then save" (SPEC §14).
  const SAVE = /^(save|save (and|&) (close|exit|continue)|save (my |your |the )?(choices|choice|settings|preferences|selection)|confirm (my |your )?(choices|choice|selection)|speichern|auswahl speichern|einstellungen speichern|enregistrer|sauvegarder|enregistrer (mes|les) (choix|préférences)|guardar|guardar (configuración|preferencias|selección)|opslaan|zapisz|salva|salva (le )?(preferenze|impostazioni)|spara|gem|lagre|tallenna|uložit|保存|設定を保存|저장|确认|確認|保存设置)$/i;
  const BUTTONS = 'button, input[type="button"], input[type="submit"], a[href], a[role="button"], [role="button"], [onclick], [tabindex="0"]';
  const REJECT = REJECT_PATTERNS.concat(OUR_REJECT);
  const ACCEPT = ACCEPT_PATTERNS.concat(OUR_ACCEPT);
  const DETECT = DETECT_PATTERNS.concat(OUR_DETECT);
  const TEXT_LIMIT = 20000;

  const clean = (text) => text.toLowerCase()
    .replace(/[“”"'/#&[\]→✕×⟩❯><✗×‘’›«»]+/g, "")
    .replace(/\s+/g, " ").trim();
  const matches = (text, patterns) => patterns.some((p) => (p instanceof RegExp ? text.search(p) >= 0 : p === text));
  const button = (text) => {
    const t = clean(text);
    if (!t || matches(t, BUTTON_NEVER_MATCH_PATTERNS)) return "other";
    if (matches(t, REJECT)) return "reject";
    if (matches(t, SETTINGS_PATTERNS)) return "settings";
    if (matches(t, ACCEPT)) return "accept";
    if (matches(t, ACKNOWLEDGE_PATTERNS)) return "acknowledge";
    return "other";
  };
  const speaksOfConsent = (text) => {
    const t = text.slice(0, TEXT_LIMIT);
    const never = DETECT_NEVER_MATCH_PATTERNS.concat(OUR_NEVER);
    return !never.some((p) => t.search(p) >= 0) && DETECT.some((p) => t.search(p) >= 0);
  };
  // The decision on a layer, from its text and its controls' labels: a
  // banner or not, and the one control to press (its index), or -1: hide.
  const decide = (text, labels) => {
    if (!speaksOfConsent(text)) return { banner: false, press: -1 };
    const kinds = labels.map(button);
    if (!kinds.some((k) => k !== "other")) return { banner: false, press: -1 };
    const rejects = kinds.flatMap((k, i) => (k === "reject" ? [i] : []));
    return { banner: true, press: rejects.length === 1 ? rejects[0] : -1 };
  };

  const style = (el) => getComputedStyle(el);
  const up = (e) => e.parentElement || (e.parentNode && e.parentNode.host) || null;
  const shown = (el) => {
    if (!el.isConnected) return false;
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return false;
    for (let e = el; e && e.nodeType === 1; e = up(e)) {
      const s = style(e);
      if (s.display === "none" || s.visibility === "hidden" || Number(s.opacity) < 0.05) return false;
    }
    return true;
  };
  // Every element below `node` (an element or a shadow root), through
  // open shadow roots.
  const descendants = function* (node) {
    for (const el of node.querySelectorAll("*")) {
      yield el;
      if (el.shadowRoot) yield* descendants(el.shadowRoot);
    }
  };
  const childrenText = (root) => Array.from(root.children).map((c) => c.innerText || "").join(" ");
  // The text a reader reads in `node`, through open shadow roots and the
  // light content slotted into them (`innerText` has neither).
  const textOf = (node) => {
    let text = node.nodeType === 1 ? node.innerText || "" : childrenText(node);
    for (const el of descendants(node)) {
      if (text.length > TEXT_LIMIT) break;
      if (el.shadowRoot) text += " " + childrenText(el.shadowRoot);
      if (el.tagName === "SLOT") {
        for (const n of el.assignedNodes({ flatten: true })) text += " " + (n.nodeType === 1 ? n.innerText || "" : n.textContent || "");
      }
    }
    return text;
  };
  const controlsOf = (node) => {
    const found = [];
    for (const b of descendants(node)) {
      if (!b.matches(BUTTONS) || b.disabled || b.hasAttribute("disabled") || !shown(b)) continue;
      const label = (b.innerText || b.value || b.getAttribute("aria-label") || b.textContent || "").trim();
      if (label && label.length < 80) found.push({ el: b, label });
    }
    // A control inside another (a span with onclick in a button): the inner one.
    return found.filter((c) => !found.some((o) => o !== c && c.el.contains(o.el)));
  };

  const isLayer = (el, s) =>
    s.position === "fixed" || s.position === "sticky" ||
    (el.tagName === "DIALOG" && el.open) || el.getAttribute("aria-modal") === "true" ||
    ["dialog", "alertdialog"].includes(el.getAttribute("role")) ||
    (() => { try { return el.matches(":modal, :popover-open"); } catch (e) { return false; } })();
  const FLOWLESS = ["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "LINK", "META"];
  // A bar at the very start or end of the body (in the page's flow, as
  // GOV.UK's banner is), not the page's whole wrapper.
  const isEdgeBar = (el) => {
    const parent = el.parentElement;
    if (!parent || !(parent === document.body || parent.parentElement === document.body)) return false;
    const kids = Array.from(parent.children).filter((c) => !FLOWLESS.includes(c.tagName));
    if (kids[0] !== el && kids[kids.length - 1] !== el) return false;
    const r = el.getBoundingClientRect();
    if (r.height > innerHeight * 0.5 || r.width < innerWidth * 0.6) return false;
    // At the document's very start or very end, not in the middle of it.
    const top = r.top + scrollY;
    const bottom = r.bottom + scrollY;
    return top <= 1 || bottom >= document.documentElement.scrollHeight - 1;
  };
  // The elements an element at a point may be a banner of: its layer
  // ancestors and an edge bar among them, through open shadow roots.
  const layersOf = (el, into) => {
    for (let e = el; e && e !== document.body && e !== document.documentElement; e = up(e)) {
      if (isLayer(e, style(e)) || isEdgeBar(e)) into.add(e);
    }
  };
  const viewportPoints = () => {
    const points = [];
    for (const fx of [0.03, 0.15, 0.3, 0.5, 0.7, 0.85, 0.97]) {
      for (const fy of [0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98]) points.push([innerWidth * fx, innerHeight * fy]);
    }
    return points;
  };
  const MAX_CLOSED_HOSTS = 8;
  const closedHosts = [];
  const depth = (el) => { let d = 0; for (let e = el; e; e = up(e)) d += 1; return d; };
  // The candidate banners now, innermost first: layers at the viewport's
  // points (into open shadow roots), open dialogs anywhere; and the hosts
  // of closed shadow roots met on the way.
  const candidates = () => {
    const found = new Set();
    closedHosts.length = 0;
    const atPoint = (root, x, y, into) => {
      for (const el of root.elementsFromPoint(x, y).slice(0, 4)) {
        if (el === document.body || el === document.documentElement) continue;
        if (el.shadowRoot && el.shadowRoot !== root) atPoint(el.shadowRoot, x, y, into);
        else if (el.tagName.includes("-") && !el.shadowRoot && closedHosts.length < MAX_CLOSED_HOSTS &&
                 !closedHosts.includes(el) && !(el.innerText || "").trim()) closedHosts.push(el);
        layersOf(el, into);
      }
    };
    for (const [x, y] of viewportPoints()) atPoint(document, x, y, found);
    for (const el of document.querySelectorAll('dialog[open], [aria-modal="true"], [role="dialog"], [role="alertdialog"]')) layersOf(el, found);
    // A frame's whole document may be the banner (a CMP served in a frame
    // of its own lays its message out in the frame's flow).
    if (window !== window.top && document.body) found.add(document.body);
    return Array.from(found).filter(shown).sort((a, b) => depth(b) - depth(a));
  };

  const dealt = [];
  const pressed = [];
  const hiddenStyle = (el) => el.style.setProperty("display", "none", "important");
  // The backdrops a banner leaves: layers of its document over most of the
  // viewport, painted, with next to no text of their own.
  const hideBackdrops = () => {
    for (const [fx, fy] of [[0.5, 0.5], [0.1, 0.1], [0.9, 0.9]]) {
      for (const el of document.elementsFromPoint(innerWidth * fx, innerHeight * fy).slice(0, 4)) {
        if (el === document.body || el === document.documentElement) continue;
        const s = style(el);
        if (s.position !== "fixed" && s.position !== "absolute") continue;
        const r = el.getBoundingClientRect();
        if (r.width * r.height < innerWidth * innerHeight * 0.85 || textOf(el).trim().length > 20) continue;
        const painted = s.backgroundColor !== "rgba(0, 0, 0, 0)" || s.backdropFilter !== "none" || s.backgroundImage !== "none";
        if (painted) hiddenStyle(el);
      }
    }
  };
  const releaseScrollLock = () => {
    for (const el of [document.documentElement, document.body]) {
      if (!el) continue;
      const s = style(el);
      if (s.overflow === "hidden" || s.overflowY === "hidden") el.style.setProperty("overflow", "visible", "important");
      if (el === document.body && s.position === "fixed") el.style.setProperty("position", "static", "important");
    }
  };
  const hide = (layer) => {
    hiddenStyle(layer);
    hideBackdrops();
    releaseScrollLock();
  };
  // A page container is no banner: most of the viewport, and much text.
  const pageSized = (layer, text) => {
    const r = layer.getBoundingClientRect();
    return text.length > 6000 && r.width * r.height > innerWidth * innerHeight * 0.8;
  };
  const related = (a, b) => a === b || a.contains(b) || b.contains(a);
  // One banner: `layer` the element to hide, `inside` (a closed shadow
  // root, or the layer) where its text and controls are.
  const deal = (layer, inside, mode, answer) => {
    if (dealt.some((d) => related(d, layer))) return;
    const text = textOf(inside);
    if (pageSized(layer, text)) return;
    const controls = controlsOf(inside);
    const { banner, press } = decide(text, controls.map((c) => c.label));
    if (!banner) return;
    dealt.push(layer);
    answer.found += 1;
    if (mode === "act" && press >= 0) {
      controls[press].el.click();
      pressed.push({ layer, inside });
      answer.pressed += 1;
    } else {
      hide(layer);
      answer.hidden += 1;
    }
  };
  // A pressed banner still up: its toggles turned off, then its one
  // control that saves the choice pressed, once.
  const save = (p) => {
    if (p.saved) return false;
    p.saved = true;
    for (const t of descendants(p.inside)) {
      if (!shown(t) || t.disabled) continue;
      const on = (t.matches('input[type="checkbox"]') && t.checked) ||
        (t.matches('[role="switch"], [role="checkbox"]') && t.getAttribute("aria-checked") === "true");
      if (on) t.click();
    }
    const saves = controlsOf(p.inside).filter((c) => SAVE.test(clean(c.label)) && button(c.label) !== "accept");
    if (saves.length !== 1) return false;
    saves[0].el.click();
    return true;
  };
  // Still up: its controls still shown (a closed root's host may have no
  // box of its own).
  const stillShown = (p) => p.layer.isConnected && controlsOf(p.inside).length > 0 &&
    (p.inside === p.layer ? shown(p.layer) : true);
  window.__pageImportGeneric = {
    scan(mode) {
      const answer = { found: 0, pressed: 0, hidden: 0, closed: 0 };
      if (!document.body) return answer;
      for (const p of pressed.splice(0)) {
        if (stillShown(p)) { hide(p.layer); answer.hidden += 1; }
      }
      for (const layer of candidates()) deal(layer, layer, mode, answer);
      answer.closed = closedHosts.length;
      return answer;
    },
    closedHosts,
    scanClosed(host, root, mode) {
      const answer = { found: 0, pressed: 0, hidden: 0, closed: 0 };
      deal(host, root, mode, answer);
      return answer;
    },
    pending() {
      return pressed.some(stillShown);
    },
    save() {
      return pressed.filter(stillShown).filter(save).length;
    },
    decide,
  };
})();
