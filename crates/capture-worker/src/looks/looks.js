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
    // Per state: what its rules declare, by compound (`anyDeclared`: of
    // the rules that may apply to any element); then the indexes into
    // `names` a read under it needs, for any element (`anyReads`) and for
    // those matching a group's selector (`reads`); null: all of them.
    declared: {}, anyDeclared: {}, anyReads: {}, reads: {},
    // Per state: the rules whose subject is another element than the
    // state's, as {compound, subject, at} (`learnStates`).
    through: {},
    els: [],
    // Nodes named in answers; `[element, pseudo]` pairs.
    nodes: [], known: new Map(),
    // The elements of the chunk under way, at rest, by index.
    prepared: new Map(), lifted: [],
    // Alike elements (`kinds`): the attribute names some selector names
    // (their values tell elements apart), whether a state's rule looks at
    // an element's place among its siblings, and each element's reads by
    // the bit of their state, kept for the elements alike to it.
    attrs: new Set(['class', 'style', 'type', 'role', 'tabindex', 'disabled', 'checked', 'open', 'lang', 'dir',
      'contenteditable', 'hidden', 'slot', 'part']),
    ids: new Set(), structural: false, answers: new Map(),
    // The custom properties a state's declarations use (their values
    // differ where the declarations read alike) and the custom states
    // (`:state(x)`) selectors name.
    vars: new Set(), customStates: new Set(),
    // Whether a sheet has container queries: a container's size then
    // tells elements apart.
    containers: false,
    // Whether a state's rule can change a look outside its element's own
    // subtree: a later sibling's (a `+` or `~` after the state) or any
    // element's (a state under `:has()`). Forced together (`groups`),
    // elements must not reach into one another's reads.
    reach: { siblings: false, anywhere: false },
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
  // A colon a backslash escapes is part of a name (Tailwind's
  // `.md\:hover\:bg-slate-100:hover` has one state, the last).
  const UNESCAPED = /(?<!(?:^|[^\\])(?:\\\\)*\\)/.source;
  const pseudoRe = {};
  for (const s of STATES) pseudoRe[s] = new RegExp(UNESCAPED + ':(' + FORCED[s].join('|') + ')(?![\\w-])', 'g');
  // Focus forced on an element makes each of its ancestors (across shadow
  // roots) `:focus-within`: such a rule's state is anywhere above.
  const WITHIN = new RegExp(UNESCAPED + ':focus-within(?![\\w-])');
  const PSEUDO_ELEMENT = new RegExp(UNESCAPED + '(?:::?[\\w-]+\\([^)]*\\)|::[\\w-]+|:(before|after|first-line|first-letter)(?![\\w-]))', 'g');

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

  const ATTRIBUTE = /\[\s*(?:[\w-]*\|)?([\w-]+)/g;
  const VAR = /var\(\s*(--[\w-]+)/g;
  const CUSTOM_STATE = /:state\(\s*([\w-]+)\s*\)/g;
  const ID = /#((?:[\w-]|\\.)+)/g;
  const STRUCTURAL = /:(nth-|first-|last-|only-|empty|has\()|[+~]/;

  // Whether a complex selector with a state looks at places among
  // siblings where it matters: before or at its state's compound, or
  // under it; a rule whose state's element is followed by `+` or `~`
  // styles a sibling, which no read of the element looks at.
  function looksAtPlaces(complex) {
    const bare = complex.replace(/"[^"]*"|'[^']*'/g, '""');
    for (const s of STATES) {
      const re = pseudoRe[s];
      re.lastIndex = 0;
      const m = re.exec(bare);
      if (!m) continue;
      let j = m.index, depth = 0;
      for (; j < bare.length; j++) {
        const c = bare[j];
        if (c === '(' || c === '[') depth++;
        else if (c === ')' || c === ']') depth--;
        else if (depth === 0 && /[\s>+~]/.test(c)) break;
      }
      if (/^\s*[+~]/.test(bare.slice(j))) return STRUCTURAL.test(bare.slice(0, j));
      return STRUCTURAL.test(bare);
    }
    return false;
  }

  // How far a complex selector's state reaches (`L.reach`), told
  // cautiously: any `+` or `~` combinator in a selector with a state, in
  // or out of `:is()`, counts as a sibling's rule.
  function learnReach(complex) {
    if (!STATES.some(s => { pseudoRe[s].lastIndex = 0; return pseudoRe[s].test(complex); })) return;
    const bare = complex.replace(/"[^"]*"|'[^']*'/g, '""').replace(/\[[^\]]*\]/g, '[]')
      .replace(/:nth-[\w-]*\([^)]*\)/g, ':nth()');
    if (/:has\(/.test(bare) || WITHIN.test(complex)) L.reach.anywhere = true;
    else if (/[+~]/.test(bare)) L.reach.siblings = true;
  }

  // The state compounds of one selector, and what its rule declares.
  function learnStates(selector, rule) {
    for (const complex of split(selector, ',')) {
      if (!L.structural) L.structural = looksAtPlaces(complex);
      learnReach(complex);
      const compounds = split(complex, ' >+~\n\t');
      compounds.forEach((compound, n) => {
        for (const s of STATES) {
          const re = pseudoRe[s];
          re.lastIndex = 0;
          if (!re.test(compound)) continue;
          const declare = (set) => {
            for (let i = 0; i < rule.style.length; i++) {
              set.add(rule.style[i]);
              for (const m of rule.style.getPropertyValue(rule.style[i]).matchAll(VAR)) L.vars.add(m[1]);
            }
          };
          re.lastIndex = 0;
          const top = topLevel(compound);
          if (!re.test(top) || /:host|::slotted|::part|&/.test(compound) || WITHIN.test(compound)) {
            L.any[s] = true;
            declare(L.anyDeclared[s]);
            continue;
          }
          re.lastIndex = 0;
          const stripped = compound.replace(re, '').replace(PSEUDO_ELEMENT, '') || '*';
          try { document.documentElement.matches(stripped); } catch (e) { continue; }
          L.compounds[s].add(stripped);
          // A rule whose subject is another element (the state's compound
          // is not the last) changes the element's reads only where one of
          // its descendants is that subject (`plan`).
          const subject = n < compounds.length - 1 ? subjectOf(complex, re) : null;
          if (subject) {
            const key = stripped + '\u0000' + subject;
            if (!L.through[s].has(key)) L.through[s].set(key, { compound: stripped, subject, declared: new Set() });
            declare(L.through[s].get(key).declared);
            continue;
          }
          // Its own rule: kept under the whole selector, the state left
          // out, so `.toolbar > a:hover { border: 0 }` is nothing to a
          // sidebar's link (under the compound alone, `a`, it was).
          const own = n === compounds.length - 1 ? subjectOf(complex, re) || stripped : stripped;
          if (!L.declared[s].has(own)) L.declared[s].set(own, new Set());
          declare(L.declared[s].get(own));
        }
      });
    }
  }

  // The elements a complex selector with a state may style: pseudo-elements
  // (and with them functional pseudo-classes) dropped, the state left out
  // (`:is(*)`, as Chromium writes `*:hover` as `:hover`), so matching
  // more, never fewer; null when that is no selector.
  function subjectOf(complex, re) {
    const bare = complex.replace(PSEUDO_ELEMENT, '').replace(re, ':is(*)').trim();
    try { document.documentElement.matches(bare); return bare; } catch (e) { return null; }
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
  L.init = function (sheets, names, complete, owners) {
    L.names = names;
    for (const s of STATES) {
      L.compounds[s] = new Set(); L.any[s] = false; L.declared[s] = new Map(); L.anyDeclared[s] = new Set();
      L.through[s] = new Map();
    }
    // Chromium's own sheet: every element gets a focus ring, a link its
    // active colour, a button its pressed border (what the pressed look
    // of a button or field changes is Chromium's: all of it is read).
    L.any['focus-visible'] = true;
    L.anyDeclared['focus-visible'] = new Set(['outline-color', 'outline-style', 'outline-width', 'outline-offset']);
    for (const c of [':any-link', 'button', 'input']) L.compounds.active.add(c);
    L.declared.active.set(':any-link', new Set(['color']));
    L.declared.active.set('button, input', new Set(['all']));
    const parsed = [];
    for (const { text, owner } of sheets) {
      if (/@container/i.test(text)) L.containers = true;
      const sheet = new CSSStyleSheet();
      try { sheet.replaceSync(text); } catch (e) { continue; }
      let scope = null;
      try { scope = owner >= 0 && owners[owner] ? owners[owner].getRootNode() : null; } catch (e) {}
      if (scope && scope !== document && !(scope instanceof ShadowRoot)) scope = null;
      parsed.push({ sheet, scope: scope || document });
      walk(sheet.cssRules, '', true, (rule, selector) => {
        const bare = selector.replace(/"[^"]*"|'[^']*'/g, '');
        for (const m of bare.matchAll(ATTRIBUTE)) L.attrs.add(m[1].toLowerCase());
        for (const m of bare.matchAll(ID)) L.ids.add(m[1]);
        for (const m of bare.matchAll(CUSTOM_STATE)) L.customStates.add(m[1]);
        learnStates(selector, rule);
      });
    }
    for (const s of STATES) {
      L.compounds[s] = [...L.compounds[s]].join(', ');
      // Sheets left out (too large to read): any element, every property.
      if (!complete) L.any[s] = true;
      L.anyReads[s] = complete ? readsFor(L.anyDeclared[s]) : null;
      // The compounds grouped by what a read under them needs.
      const groups = new Map();
      for (const [compound, declared] of L.declared[s]) {
        const at = readsFor(declared);
        const key = JSON.stringify(at);
        if (!groups.has(key)) groups.set(key, { at, compounds: [] });
        groups.get(key).compounds.push(compound);
      }
      L.reads[s] = [...groups.values()].map(g => ({ at: g.at, selector: g.compounds.join(', ') }));
      L.through[s] = [...L.through[s].values()].map(t => ({ compound: t.compound, subject: t.subject, at: readsFor(t.declared) }));
    }
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

  // What a state's rules can change without changing any other computed
  // value: what they paint, not how anything is laid out. A state whose
  // rules declare only these is read for them and their kin alone (below);
  // any other declaration (a size, a font, a custom property, which any
  // value may use) and every property is read.
  const PAINT_ONLY = new RegExp('^(' + [
    'color', 'opacity', 'cursor', 'visibility', 'filter', 'backdrop-filter', 'mix-blend-mode', 'z-index',
    'pointer-events', 'user-select', 'caret-color', 'accent-color', 'clip-path', 'mask-image', 'fill',
    'fill-opacity', 'stroke', 'stroke-opacity', 'box-shadow', 'text-shadow', 'transform', 'transform-origin',
    'translate', 'rotate', 'scale', 'background-[a-z-]+', 'border-[a-z-]*color', 'outline-[a-z-]+',
    'text-decoration-[a-z-]+', 'text-underline-[a-z-]+', 'text-emphasis-color', '-webkit-text-fill-color',
    '-webkit-text-stroke-color', '-webkit-tap-highlight-color', 'transition-[a-z-]+',
  ].join('|') + ')$');
  // Declared in one, read in all: a shorthand's longhands, logical and
  // physical sides, an outline's style and width.
  const KIN = [/^background-/, /^border-.*color$/, /^outline-/, /^(text-decoration|text-underline)-/, /^transition-/,
    /^(transform|translate|rotate|scale)$/];
  // What paints but also makes the element the containing block of its
  // absolutely and fixed positioned descendants, whose sizes and offsets
  // then change with it.
  const CONTAINING = /^(transform|translate|rotate|scale|filter|backdrop-filter)$/;
  // What `currentcolor` reaches when `color` changes.
  const CURRENT_COLOR = /color|shadow|fill|stroke|image/;
  function readsFor(declared) {
    for (const d of declared) if (!PAINT_ONLY.test(d)) return null;
    const kin = KIN.filter(k => [...declared].some(d => k.test(d)));
    const out = [];
    L.names.forEach((n, i) => {
      if (declared.has(n) || kin.some(k => k.test(n)) || (declared.has('color') && CURRENT_COLOR.test(n))) out.push(i);
    });
    return out;
  }

  // The values of properties `at` (indexes into `names`; all when null).
  function read([node, pseudo], at) {
    const style = getComputedStyle(node, pseudo);
    return at ? at.map(p => style.getPropertyValue(L.names[p])) : L.names.map(n => style.getPropertyValue(n));
  }

  // What is read of element `i` and under it: itself, its generated
  // content, its descendants (open shadow trees first) and what their
  // slots show (a button's slotted icon inherits the part's colour), at
  // most `max`.
  function targets(el, max = MAX_TARGETS) {
    const out = [];
    const seen = new Set();
    const visit = node => {
      if (out.length >= max || seen.has(node)) return;
      seen.add(node);
      out.push([node, null]);
      for (const p of PSEUDOS) {
        const style = getComputedStyle(node, p);
        const shown = p === '::marker' ? getComputedStyle(node).display === 'list-item' : !['none', 'normal'].includes(style.content);
        if (shown && out.length < max) out.push([node, p]);
      }
      if (node.shadowRoot) for (const c of node.shadowRoot.children) visit(c);
      // A slot passed on into another is itself an element that renders.
      if (node.localName === 'slot') for (const c of node.assignedElements()) visit(c);
      for (const c of node.children) visit(c);
    };
    visit(el);
    return out;
  }

  // Finishes what the element's states started (transitions run to their
  // end, animations at their start), the page's own animations untouched.
  function settle(c) {
    if (!c) return;
    for (const a of c.el.getAnimations({ subtree: true })) {
      if (c.before.has(a)) continue;
      try {
        const t = a.effect && a.effect.getComputedTiming();
        if (t && Number.isFinite(t.endTime)) a.finish(); else a.pause();
      } catch (e) {}
    }
  }

  // Element `i` at rest, to be read under the states of `mask` (a bit per
  // state of STATES): only what their rules can change is read. A chunk's
  // elements are all prepared before any is forced: the page at rest is
  // one style for all of them.
  L.prepare = function (i, mask) {
    const el = L.els[i];
    const c = { el, before: new Set(el.getAnimations({ subtree: true })) };
    L.prepared.set(i, c);
    Object.assign(c, plan(el, mask));
    c.rest = c.targets.map(target => read(target, c.at));
    return c.targets.length;
  };

  // What is read of element `el` under the states of `mask`: its targets,
  // and the indexes into `names` (null: all).
  function plan(el, mask, max = MAX_TARGETS) {
    const join = (a, b) => (a === null || b === null ? null : [...new Set([...a, ...b])]);
    const all = targets(el, max);
    let at = [];
    STATES.forEach((s, k) => {
      if (!(mask & (1 << k))) return;
      at = join(at, L.anyReads[s]);
      for (const g of L.reads[s]) {
        if (at === null) return;
        try { if (el.matches(g.selector)) at = join(at, g.at); } catch (e) { at = null; }
      }
      // What a rule declares for another element counts where such an
      // element is among the targets (`*:hover > .anchor { display: block }`
      // is nothing to a link with no anchor in it).
      for (const t of L.through[s]) {
        if (at === null) return;
        try {
          if (el.matches(t.compound) && all.some(([n, p], j) => j > 0 && !p && n.matches(t.subject))) at = join(at, t.at);
        } catch (e) { at = null; }
      }
    });
    const contains = at !== null && at.some(p => CONTAINING.test(L.names[p]));
    const positioned = ([node, pseudo]) => ['absolute', 'fixed'].includes(getComputedStyle(node, pseudo).position);
    if (contains && all.some((t, k) => k > 0 && positioned(t))) at = null;
    return { targets: all, at: at === null ? null : at.sort((a, b) => a - b) };
  }

  // An element as a selector sees it: its name, its attributes (the
  // values of those some selector names; an id's when a selector names
  // it), the live states it is in, and its place among its siblings when
  // a state's rule looks at it.
  function shape(node) {
    let s = node.localName;
    for (const a of node.attributes) {
      const told = L.attrs.has(a.name) || (a.name === 'id' && L.ids.has(a.value));
      s += ' ' + a.name + (told ? '=' + JSON.stringify(a.value) : '');
    }
    // What a selector sees that no attribute says: a box ticked or a field
    // filled by the reader or a script.
    for (const state of LIVE) if (node.matches(state)) s += ' ' + state;
    if (L.containers) {
      const style = getComputedStyle(node);
      if (style.containerType && style.containerType !== 'normal') {
        const box = node.getBoundingClientRect();
        s += ' @container ' + Math.round(box.width) + 'x' + Math.round(box.height);
      }
    }
    for (const name of L.customStates) {
      try { if (node.matches(':state(' + name + ')')) s += ' :state(' + name + ')'; } catch (e) {}
    }
    if (L.structural) {
      const p = node.parentNode;
      const siblings = p && p.children ? [...p.children] : [];
      s += ' @' + siblings.indexOf(node) + '/' + siblings.length;
    }
    return s;
  }
  const LIVE = [':checked', ':indeterminate', ':disabled', ':placeholder-shown', ':invalid', ':target', ':open',
    ':defined'].filter(state => { try { document.documentElement.matches(state); return true; } catch (e) { return false; } });
  const parentOf = n => n.parentElement || (n.parentNode instanceof ShadowRoot ? n.parentNode.host : null);
  // The parent in the tree that renders (and passes styles on): a slotted
  // element's is its slot (in an open shadow tree).
  const renderedParentOf = n => n.assignedSlot || parentOf(n);

  // For each candidate (`masks`: `candidates`' answer), the index of the
  // first one alike to it (itself when none is): elements with the same
  // states to force, ancestors seen alike, targets seen alike and the same
  // values at rest of all that is read of them match the same rules and
  // compute the same looks under them, so one is forced and its reads
  // stand for the others (decision 0050).
  // Elements with more targets than KIND_TARGETS are their own kind (a
  // large subtree seldom repeats, and its key would cost more than its
  // forcing); so is every element once the keys have taken KINDS_MS. The
  // values at rest in a key: what a read takes, or, when it takes
  // everything, KEY_VALUES; and always what a state's value may be
  // relative to at rest though it looks alike (ALWAYS: a font size for
  // `em`, a direction for a logical side) and the custom properties the
  // states' declarations use. When a read takes everything, the text too
  // (a size under the state may follow it where at rest a minimum hid it).
  const KIND_TARGETS = 24, KINDS_MS = 150;
  const ALWAYS = ['font-size', 'direction', 'writing-mode'];
  const KEY_VALUES = ['display', 'position', 'visibility', 'opacity', 'color', 'background-color', 'background-image',
    'border-top-color', 'border-top-width', 'outline-style', 'font-family', 'font-size', 'font-weight', 'line-height',
    'text-decoration-line', 'width', 'height', 'transform', 'box-shadow', 'content'];
  L.kinds = function (masks) {
    const first = new Map();
    const until = performance.now() + KINDS_MS;
    let keyed = 0;
    return masks.map((mask, i) => {
      if (!mask || keyed >= 500 || performance.now() > until) return i;
      keyed++;
      try {
        const el = L.els[i];
        const { targets: all, at } = plan(el, mask, KIND_TARGETS + 1);
        if (all.length > KIND_TARGETS) return i;
        const index = names => names.map(n => L.names.indexOf(n)).filter(k => k >= 0);
        const values = [...new Set([...(at || index(KEY_VALUES)), ...index(ALWAYS)])];
        const parts = [String(mask), at === null ? '*' : at.join(',')];
        for (let a = renderedParentOf(el); a; a = renderedParentOf(a)) parts.push(shape(a));
        parts.push('|');
        for (const t of all) {
          const style = L.vars.size ? getComputedStyle(t[0], t[1]) : null;
          const vars = [...L.vars].map(v => style.getPropertyValue(v));
          parts.push(shape(t[0]) + (t[1] || ''), read(t, values).join('\u0001'), vars.join('\u0001'));
        }
        if (at === null) parts.push(el.textContent);
        const key = parts.join('\u0002');
        if (!first.has(key)) first.set(key, i);
        return first.get(key);
      } catch (e) {
        return i;
      }
    });
  };

  // The reads of each of `copies` ([[i, j]]: candidate i alike to j), as
  // j's reads by state bit, named on i's own targets.
  L.mirrors = function (copies) {
    return copies.map(([i, j]) => {
      const all = targets(L.els[i]);
      const answers = L.answers.get(j) || {};
      const out = {};
      for (const bit in answers) {
        out[bit] = answers[bit].map(([k, styles]) => [ref(all[k][0], all[k][1] ? all[k][1].slice(2) : null), styles]);
      }
      return out;
    });
  };

  // Under the forced state: [[node ref, {property: value}]] of what changed.
  // `bit`: the state's, kept with the answer for the elements alike.
  L.read = function (i, bit) {
    const c = L.prepared.get(i);
    if (!c) return [];
    settleLifted();
    settle(c);
    const changes = [], kept = [];
    c.targets.forEach((t, k) => {
      const now = read(t, c.at);
      let styles = null;
      now.forEach((v, p) => {
        if (v !== c.rest[k][p]) (styles = styles || {})[L.names[c.at ? c.at[p] : p]] = v;
      });
      if (styles) {
        changes.push([ref(t[0], t[1] ? t[1].slice(2) : null), styles]);
        kept.push([k, styles]);
      }
    });
    if (!L.answers.has(i)) L.answers.set(i, {});
    L.answers.get(i)[bit] = kept;
    return changes;
  };

  // The prepared elements `chunk` (indexes) in groups to force together:
  // each group's elements are forced, then read one by one, under one
  // style recalculation instead of one each (a forced state leaves the
  // whole document's style to recalculate). Together only elements whose
  // states change what they paint and nothing laid out (a read taking
  // only such properties: no size of another can move), none inside
  // another in the tree that renders (a slotted element is inside its
  // slot; with a sibling's rule, inside another's parent), on a page
  // where no state reaches anywhere (`:has()`). Answers positions in
  // `chunk`.
  L.groups = function (chunk) {
    const inside = (n, root) => { for (let x = n; x; x = renderedParentOf(x)) if (x === root) return true; return false; };
    const area = el => (L.reach.siblings ? parentOf(el) || el : el);
    const apart = (a, b) => !inside(b, area(a)) && !inside(a, area(b));
    const groups = [];
    chunk.forEach((i, at) => {
      const c = L.prepared.get(i);
      const alone = !c || c.at === null || L.reach.anywhere;
      const home = alone ? null : groups.find(g => g.together && g.els.every(el => apart(el, c.el)));
      if (home) { home.at.push(at); home.els.push(c.el); }
      else groups.push({ together: !alone, at: [at], els: c ? [c.el] : [] });
    });
    return groups.map(g => g.at);
  };

  // Before a group's reads under a state (`indexes`: those forced into
  // it): what the forcing and the last lifts started, finished for all at
  // once, so the reads share one style (each read's own `settle` then
  // finds nothing left to finish, and dirties nothing).
  L.settleAll = function (indexes) {
    settleLifted();
    for (const i of indexes) settle(L.prepared.get(i));
    return true;
  };

  // Back at rest. What the lift starts is finished at the next read or at
  // the chunk's end: settling here would recalculate the page's style once
  // more per element.
  L.done = function (i) {
    if (L.prepared.has(i)) L.lifted.push(L.prepared.get(i));
    L.prepared.delete(i);
    return true;
  };
  function settleLifted() {
    for (const c of L.lifted) settle(c);
    L.lifted = [];
  }
  // The chunk's end.
  L.finish = function () {
    settleLifted();
    return true;
  };

  // The named nodes' elements (for their backend node ids) and pseudos.
  L.elements = () => L.nodes.map(n => n[0]);
  L.pseudos = () => L.nodes.map(n => n[1]);
  return true;
})()
