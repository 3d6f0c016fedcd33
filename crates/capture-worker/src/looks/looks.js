// The worker's page-side reading of interaction states and tokens (SPEC §11),
// run in a JavaScript world of the worker's own (the page's scripts cannot
// reach it or change the built-ins it calls), after the screenshot and the
// snapshot. The style sheets come from Chromium's CSS domain (their text,
// cross-origin ones too); they are parsed here by Chromium's own parser
// into sheets nobody adopts.
(() => {
  if (globalThis.__pageImportLooks) return true;
  // What a state forces on the element (`focus-visible`: a keyboard
  // user's focus, so `:focus` and `:focus-within` hold too).
  const FORCED = { hover: ['hover'], 'focus-visible': ['focus', 'focus-visible', 'focus-within'], active: ['active'] };
  const STATES = Object.keys(FORCED);
  const MAX_TARGETS = 200;
  const MAX_TOKEN_ELEMENTS = 2000;
  const PSEUDOS = ['::before', '::after', '::marker'];
  const L = {
    names: [],
    // Per state: the compounds (state pseudo-classes stripped) an element
    // must match for a rule with that state to apply to it, and whether
    // some rule applies to any element.
    compounds: {}, any: {},
    els: [],
    // Nodes named in answers; `[element, pseudo]` pairs.
    nodes: [], known: new Map(),
    current: null,
  };
  globalThis.__pageImportLooks = L;

  // Splits `text` at top-level characters in `at` (outside (), [] and quotes).
  function split(text, at) {
    const out = [];
    let cur = '', depth = 0, quote = null;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '\\') { cur += c + (text[++i] || ''); continue; }
      if (quote) { cur += c; if (c === quote) quote = null; continue; }
      if (c === '"' || c === "'") { quote = c; cur += c; continue; }
      if (c === '(' || c === '[') depth++;
      if (c === ')' || c === ']') depth--;
      if (depth === 0 && at.includes(c)) { if (cur.trim()) out.push(cur.trim()); cur = ''; continue; }
      cur += c;
    }
    if (cur.trim()) out.push(cur.trim());
    return out;
  }
  const topLevel = s => s.replace(/\([^()]*(\([^()]*\)[^()]*)*\)/g, '()');
  const pseudoRe = {};
  for (const s of STATES) pseudoRe[s] = new RegExp(':(' + FORCED[s].join('|') + ')(?![\\w-])', 'g');
  const PSEUDO_ELEMENT = /::?[\w-]+\([^)]*\)|::[\w-]+|:(before|after|first-line|first-letter)(?![\w-])/g;

  // A nested rule's selector made whole with its parent's.
  function nest(parent, child) {
    if (!parent) return child;
    return split(child, ',').map(c => c.includes('&') ? c.replace(/&/g, ':is(' + parent + ')') : ':is(' + parent + ') ' + c).join(', ');
  }

  // Calls visit(styleRule, wholeSelector, applies) for every style rule.
  function walk(rules, parent, applies, visit) {
    for (const r of rules) {
      try {
        if (r instanceof CSSStyleRule) {
          const selector = nest(parent, r.selectorText);
          visit(r, selector, applies);
          if (r.cssRules && r.cssRules.length) walk(r.cssRules, selector, applies, visit);
        } else if (r instanceof CSSMediaRule) {
          walk(r.cssRules, parent, applies && matchMedia(r.media.mediaText).matches, visit);
        } else if (r instanceof CSSSupportsRule) {
          walk(r.cssRules, parent, applies && CSS.supports(r.conditionText), visit);
        } else if (r.cssRules) {
          walk(r.cssRules, parent, applies, visit);
        }
      } catch (e) {}
    }
  }

  // The state compounds of one selector.
  function learnStates(selector) {
    for (const complex of split(selector, ',')) {
      for (const compound of split(complex, ' >+~\n\t')) {
        for (const s of STATES) {
          const re = pseudoRe[s];
          re.lastIndex = 0;
          if (!re.test(compound)) continue;
          re.lastIndex = 0;
          const top = topLevel(compound);
          if (!re.test(top) || /:host|::slotted|::part|&/.test(compound)) { L.any[s] = true; continue; }
          re.lastIndex = 0;
          const stripped = compound.replace(re, '').replace(PSEUDO_ELEMENT, '') || '*';
          try { document.documentElement.matches(stripped); } catch (e) { continue; }
          L.compounds[s].add(stripped);
        }
      }
    }
  }

  function ref(node, pseudo) {
    const key = pseudo || '';
    let byPseudo = L.known.get(node);
    if (!byPseudo) { byPseudo = new Map(); L.known.set(node, byPseudo); }
    if (!byPseudo.has(key)) { byPseudo.set(key, L.nodes.length); L.nodes.push([node, pseudo]); }
    return byPseudo.get(key);
  }

  // The tokens: every custom property the sheets declare that is in force
  // on the root, and the elements that set one.
  function tokens(sheets) {
    const names = new Set();
    const setters = new Map();
    const add = (el, name) => {
      if (!el || el === document.documentElement) return;
      let set = setters.get(el);
      if (!set) { if (setters.size >= MAX_TOKEN_ELEMENTS) return; set = new Set(); setters.set(el, set); }
      set.add(name);
    };
    for (const { sheet, scope } of sheets) {
      walk(sheet.cssRules, '', true, (rule, selector, applies) => {
        const declared = [];
        for (let i = 0; i < rule.style.length; i++) if (rule.style[i].startsWith('--')) declared.push(rule.style[i]);
        if (!declared.length) return;
        declared.forEach(n => names.add(n));
        if (!applies) return;
        for (const el of matching(scope, selector)) declared.forEach(n => add(el, n));
      });
    }
    const scopes = [document];
    for (const { scope } of sheets) if (scope && !scopes.includes(scope)) scopes.push(scope);
    for (const scope of scopes) {
      for (const el of scope.querySelectorAll('[style*="--"]')) {
        for (let i = 0; i < el.style.length; i++) {
          const n = el.style[i];
          if (!n.startsWith('--')) continue;
          names.add(n);
          add(el, n);
        }
      }
    }
    const root = {};
    const rootStyle = getComputedStyle(document.documentElement);
    for (const n of [...names].sort()) {
      const v = rootStyle.getPropertyValue(n).trim();
      if (v !== '') root[n] = v;
    }
    const elements = [];
    for (const [el, set] of setters) {
      const style = getComputedStyle(el);
      const values = {};
      for (const n of set) { const v = style.getPropertyValue(n).trim(); if (v !== '') values[n] = v; }
      if (Object.keys(values).length) elements.push([ref(el, null), values]);
    }
    return { root, elements };
  }

  // The elements of `scope` (a document or shadow root) a selector matches;
  // `:host` rules match the shadow root's host.
  function matching(scope, selector) {
    const out = [];
    for (const complex of split(selector, ',')) {
      try {
        const host = /^:host(\((.*)\))?$/.exec(complex);
        if (host && scope instanceof ShadowRoot) {
          if (!host[2] || scope.host.matches(host[2])) out.push(scope.host);
        } else if (!/::/.test(complex)) {
          out.push(...scope.querySelectorAll(complex));
        }
      } catch (e) {}
    }
    return out;
  }

  // sheets: [{text, owner}] (owner: index into owners, or -1); names:
  // styleNames. Returns the tokens.
  L.init = function (sheets, names, owners) {
    L.names = names;
    for (const s of STATES) { L.compounds[s] = new Set(); L.any[s] = false; }
    // Chromium's own sheet: every element gets a focus ring, a link its
    // active colour, a button its pressed border.
    L.any['focus-visible'] = true;
    for (const c of [':any-link', 'button', 'input']) L.compounds.active.add(c);
    const parsed = [];
    for (const { text, owner } of sheets) {
      const sheet = new CSSStyleSheet();
      try { sheet.replaceSync(text); } catch (e) { continue; }
      let scope = null;
      try { scope = owner >= 0 && owners[owner] ? owners[owner].getRootNode() : null; } catch (e) {}
      if (scope && scope !== document && !(scope instanceof ShadowRoot)) scope = null;
      parsed.push({ sheet, scope: scope || document });
      walk(sheet.cssRules, '', true, (rule, selector) => learnStates(selector));
    }
    for (const s of STATES) L.compounds[s] = [...L.compounds[s]].join(', ');
    return tokens(parsed);
  };

  // The candidates, in order; for each, the states some rule may change
  // its look in (a bit per state of STATES).
  L.candidates = function (...els) {
    L.els = els;
    return els.map(el => {
      let mask = 0;
      STATES.forEach((s, i) => {
        try { if (L.any[s] || (L.compounds[s] && el.matches(L.compounds[s]))) mask |= 1 << i; } catch (e) {}
      });
      return mask;
    });
  };

  function read([node, pseudo]) {
    const style = getComputedStyle(node, pseudo);
    return L.names.map(n => style.getPropertyValue(n));
  }

  // What is read of element `i` and under it: itself, its generated
  // content, its descendants (open shadow trees first), at most MAX_TARGETS.
  function targets(el) {
    const out = [];
    const visit = node => {
      if (out.length >= MAX_TARGETS) return;
      out.push([node, null]);
      for (const p of PSEUDOS) {
        const style = getComputedStyle(node, p);
        const shown = p === '::marker' ? getComputedStyle(node).display === 'list-item' : !['none', 'normal'].includes(style.content);
        if (shown && out.length < MAX_TARGETS) out.push([node, p]);
      }
      if (node.shadowRoot) for (const c of node.shadowRoot.children) visit(c);
      for (const c of node.children) visit(c);
    };
    visit(el);
    return out;
  }

  // Finishes what the element's states started (transitions run to their
  // end, animations at their start), the page's own animations untouched.
  function settle() {
    const c = L.current;
    if (!c) return;
    for (const a of c.el.getAnimations({ subtree: true })) {
      if (c.before.has(a)) continue;
      try {
        const t = a.effect && a.effect.getComputedTiming();
        if (t && Number.isFinite(t.endTime)) a.finish(); else a.pause();
      } catch (e) {}
    }
  }

  // Element `i` at rest.
  L.prepare = function (i) {
    const el = L.els[i];
    L.current = { el, before: new Set(el.getAnimations({ subtree: true })) };
    const t = targets(el);
    L.current.targets = t;
    L.current.rest = t.map(read);
    return t.length;
  };

  // Under the forced state: [[node ref, {property: value}]] of what changed.
  L.read = function () {
    const c = L.current;
    if (!c) return [];
    settle();
    const changes = [];
    c.targets.forEach((t, k) => {
      const now = read(t);
      let styles = null;
      now.forEach((v, p) => {
        if (v !== c.rest[k][p]) (styles = styles || {})[L.names[p]] = v;
      });
      if (styles) changes.push([ref(t[0], t[1] ? t[1].slice(2) : null), styles]);
    });
    return changes;
  };

  // Back at rest.
  L.done = function () {
    settle();
    L.current = null;
    return true;
  };

  // The named nodes' elements (for their backend node ids) and pseudos.
  L.elements = () => L.nodes.map(n => n[0]);
  L.pseudos = () => L.nodes.map(n => n[1]);
  return true;
})()
