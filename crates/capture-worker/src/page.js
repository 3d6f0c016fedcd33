// Runs in the page's main world before any of its own scripts (SPEC §11
// "Before the snapshot"), in every document of the page's process. It only
// watches, until the worker asks (`hold`, `backToTop`, `frozen`):
//
// - when the page last changed: a DOM mutation (in the document or in a
//   shadow root attached later), or a requestAnimationFrame callback that
//   drew on a 2-D or WebGL canvas (how charts and scenes draw) in the
//   first 600 ms of a run of such frames, so the worker can wait until the
//   page has stopped changing. Frames that run on beyond that are a render
//   loop: motion, which must not hold the capture once the DOM and layout
//   are still; frames that draw nothing (a carousel keeping time) are no
//   change at all;
// - once the worker's scroll pass has begun (`hold`), an element that an
//   IntersectionObserver reported in view is never reported out of view
//   again: a section hidden when it leaves the view stays as the reader who
//   scrolled to it saw it;
// - the worker's way back to the top (`backToTop`, then `keepRevealed`):
//   the page hears it as a reader's scroll, so what reacts to scrolling (a
//   header that hides or shrinks, a back-to-top button, a progress bar)
//   ends in its at-top state; an element whose attributes the page changed
//   on the way back and that starts in the lower half of the first viewport
//   or below it (and is not fixed to the viewport) gets back the ones it had
//   when the reader scrolled past it, so a section revealed on scroll and
//   hidden again once out of view stays revealed;
// - once the page has stopped changing (`frozen`), it stays at that one
//   instant: its animation-frame and timer callbacks no longer run (the
//   worker pauses its animations and media at the same time), so a canvas
//   drawn on every frame shows in its asset what the screenshot shows; and
//   its scroll and resize
//   listeners and IntersectionObservers hear nothing more: the screenshot
//   lays the page out in a viewport as tall as the page for a moment, and
//   a page that reacted to that would differ between the screenshot and
//   the snapshot taken before it; nor do its media queries' change
//   listeners and ResizeObservers, and no transition starts (`still`), so
//   a transition set inside a width query is not restarted by the
//   screenshot's layout. (CSS that depends on the viewport, `vh` units and
//   media queries, still sees it.)
// - whether any script hears the page scroll (a scroll listener on the
//   window or the document, an IntersectionObserver), so the worker can
//   leave out the scroll pass of a page nobody listens to; and when the last
//   short timeout the page set is due, so the pass can wait for a step's
//   delayed reaction (a debounced scroll handler).
//
// The page can see and change all of this; every wait that relies on it is
// bounded by the worker.
(() => {
  // Drawing frames closer together than this are one run (a WebGL scene
  // rendered in software at scale 2 draws a frame every 150 ms or more); a
  // run longer than LOOP_AFTER_MS is a render loop.
  const FRAME_GAP_MS = 400;
  const LOOP_AFTER_MS = 600;
  // A timeout longer than this is not a reaction to a scroll being waited
  // for (a debounce is shorter).
  const SHORT_TIMEOUT_MS = 1000;
  const w = window;
  if (w.__pageImportCapture) return;
  const state = {
    hold: false,
    back: null,
    frozen: false,
    lastChange: performance.now(),
    lastFrame: 0,
    framesSince: 0,
    size: '',
    raf: w.requestAnimationFrame.bind(w),
    setTimeout: w.setTimeout.bind(w),
    timerDue: 0,
    seen: new WeakSet(),
    scrollHeard: false,
  };
  Object.defineProperty(w, '__pageImportCapture', { value: state });
  const touch = () => {
    state.lastChange = performance.now();
  };
  // The consent prehide (`style#autoconsent-prehide`, put in and taken
  // away by the worker's consent world, SPEC §14) is not the page moving:
  // its removal before the page is frozen would otherwise start the wait
  // for a still page again.
  const prehide = (n) => n && n.nodeName === 'STYLE' && n.id === 'autoconsent-prehide';
  const onlyPrehide = (nodes) => {
    for (let i = 0; i < nodes.length; i++) if (!prehide(nodes[i])) return false;
    return true;
  };
  const ours = (r) =>
    prehide(r.target) ||
    (r.target && prehide(r.target.parentNode)) ||
    (r.type === 'childList' &&
      r.addedNodes.length + r.removedNodes.length > 0 &&
      onlyPrehide(r.addedNodes) &&
      onlyPrehide(r.removedNodes));
  const MO = w.MutationObserver;
  const mutations = new MO((records) => {
    for (let i = 0; i < records.length; i++) {
      if (!ours(records[i])) return touch();
    }
  });
  const watchTree = (root) =>
    mutations.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
  watchTree(document);
  // A shadow root's mutations are not the document's: watch each as it is
  // attached (closed ones too).
  const attachShadow = Element.prototype.attachShadow;
  const shadowRoots = [];
  Element.prototype.attachShadow = function (init) {
    const root = attachShadow.call(this, init);
    watchTree(root);
    if (w.WeakRef) shadowRoots.push(new w.WeakRef(root));
    return root;
  };
  // Whether the animation frame running now drew on a canvas: a frame that
  // only keeps time (a carousel's autoplay progress) changes nothing a
  // reader sees. (Changes to the DOM are the MutationObserver's.)
  let drew = false;
  const drawing = (proto, names) => {
    if (!proto) return;
    for (const name of names) {
      const draw = proto[name];
      if (typeof draw !== 'function') continue;
      proto[name] = function (...args) {
        drew = true;
        return draw.apply(this, args);
      };
    }
  };
  drawing(w.CanvasRenderingContext2D && w.CanvasRenderingContext2D.prototype, [
    'clearRect', 'fill', 'fillRect', 'fillText', 'stroke', 'strokeRect', 'strokeText', 'drawImage', 'putImageData',
  ]);
  for (const gl of [w.WebGLRenderingContext, w.WebGL2RenderingContext]) {
    drawing(gl && gl.prototype, [
      'clear', 'drawArrays', 'drawElements', 'drawArraysInstanced', 'drawElementsInstanced', 'drawRangeElements',
    ]);
  }
  const drawn = () => {
    const now = performance.now();
    if (now - state.lastFrame > FRAME_GAP_MS) state.framesSince = now;
    state.lastFrame = now;
    // An animation's first frames are change (a chart drawing itself);
    // frames that have run without a pause for longer are a render loop,
    // motion, which no longer holds the capture.
    if (now - state.framesSince < LOOP_AFTER_MS) touch();
  };
  const raf = w.requestAnimationFrame;
  w.requestAnimationFrame = function (callback) {
    return raf.call(this, (t) => {
      // Frozen: a render loop stops at the frame the screenshot shows.
      if (state.frozen) return;
      drew = false;
      try {
        return callback(t);
      } finally {
        if (drew) drawn();
      }
    });
  };
  // Frozen: a timer's callback (a carousel's next slide) no longer runs.
  const held = (callback) =>
    typeof callback === 'function'
      ? function (...args) {
          if (!state.frozen) return callback.apply(this, args);
        }
      : callback;
  const setTimeout_ = w.setTimeout;
  w.setTimeout = function (callback, delay, ...rest) {
    const now = performance.now();
    const ms = Number(delay) || 0;
    if (ms <= SHORT_TIMEOUT_MS) state.timerDue = Math.max(state.timerDue, now + ms);
    return setTimeout_.call(w, held(callback), delay, ...rest);
  };
  const setInterval_ = w.setInterval;
  w.setInterval = function (callback, ...rest) {
    return setInterval_.call(w, held(callback), ...rest);
  };
  const IO = w.IntersectionObserver;
  if (IO) {
    w.IntersectionObserver = class IntersectionObserver extends IO {
      constructor(callback, options) {
        state.scrollHeard = true;
        super((entries, observer) => {
          if (state.frozen) return;
          const kept = entries.filter((e) => {
            if (e.isIntersecting) {
              if (state.hold) state.seen.add(e.target);
              return true;
            }
            return !(state.hold && state.seen.has(e.target));
          });
          if (kept.length) callback.call(observer, kept, observer);
        }, options);
      }
    };
  }
  w.addEventListener(
    'scroll',
    (e) => {
      if (state.frozen) e.stopImmediatePropagation();
    },
    true,
  );
  // Back to the top as a reader scrolls back, the attribute changes the
  // page makes on the way recorded with their old values.
  state.backToTop = () => {
    const changed = new Map();
    const record = (records) => {
      for (const r of records) {
        let old = changed.get(r.target);
        if (!old) changed.set(r.target, (old = new Map()));
        if (!old.has(r.attributeName)) old.set(r.attributeName, r.oldValue);
      }
    };
    const observer = new MO(record);
    observer.observe(document, { subtree: true, attributes: true, attributeOldValue: true });
    state.back = { changed, record, observer };
    w.scrollTo({ top: 0, left: 0, behavior: 'instant' });
  };
  // Once the page has reacted: an element that starts in the lower half of
  // the first viewport or below it, where it lies with the attributes it had
  // on the way down, gets those back (a reveal library hides what has not
  // yet come far enough into view, the first section at the fold too);
  // everything above, and everything fixed to the viewport (a back-to-top
  // button, a cookie banner), keeps its at-top state. Returns how many kept
  // what the reader saw.
  state.keepRevealed = () => {
    const back = state.back;
    if (!back) return 0;
    state.back = null;
    back.record(back.observer.takeRecords());
    back.observer.disconnect();
    const set = (el, attributes) => {
      for (const [name, value] of attributes) {
        try {
          if (value === null) el.removeAttribute(name);
          else el.setAttribute(name, value);
        } catch (e) {}
      }
    };
    const changes = [];
    for (const [el, old] of back.changed) {
      if (!el.isConnected) continue;
      const atTop = new Map([...old.keys()].map((name) => [name, el.getAttribute(name)]));
      changes.push([el, old, atTop]);
      set(el, old);
    }
    const fixed = (el) => {
      for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
        if (getComputedStyle(e).position === 'fixed') return true;
      }
      return false;
    };
    // One layout for every element, measured as the reader saw it.
    const below = changes.map(([el]) => el.getBoundingClientRect().top >= w.innerHeight / 2 && !fixed(el));
    let kept = 0;
    changes.forEach(([el, , atTop], i) => {
      if (below[i]) kept += 1;
      else set(el, atTop);
    });
    return kept;
  };
  w.addEventListener(
    'resize',
    (e) => {
      if (state.frozen) e.stopImmediatePropagation();
    },
    true,
  );
  // Nor do its media queries' change listeners or its ResizeObservers: for
  // the full-page screenshot Chromium lays the page out at 1×1 for a moment,
  // then as tall as the page, so every width query flips twice. Each list
  // `matchMedia` returns hears its changes first, and stops them once the
  // page is frozen.
  const matchMedia = w.matchMedia;
  const addListener = EventTarget.prototype.addEventListener;
  w.matchMedia = function (...args) {
    const list = matchMedia.apply(this, args);
    try {
      addListener.call(list, 'change', (e) => {
        if (state.frozen) e.stopImmediatePropagation();
      });
    } catch (e) {}
    return list;
  };
  const RO = w.ResizeObserver;
  if (RO) {
    const Observer = function ResizeObserver(callback) {
      if (!new.target) return RO(callback);
      const heard = function (entries, observer) {
        if (!state.frozen) return callback.call(this, entries, observer);
      };
      return Reflect.construct(RO, [typeof callback === 'function' ? heard : callback], new.target);
    };
    Observer.prototype = RO.prototype;
    w.ResizeObserver = Observer;
  }
  // The page's animations, those in the shadow roots it attached too
  // (`document.getAnimations()` does not reach into them): a banner
  // sliding up inside a web component is run to its end like any other.
  state.animations = () => {
    const all = new Set(document.getAnimations());
    for (const ref of shadowRoots) {
      const root = ref.deref();
      if (root) for (const a of root.getAnimations()) all.add(a);
    }
    return all;
  };
  // And no transition starts once it is frozen: one that the screenshot's
  // own layout starts (a navbar whose transition is set inside a width
  // query) would be drawn at its first frame. A sheet of the worker's,
  // adopted by the document and every shadow root the page attached (open
  // or closed) or declared open; it sets nothing else.
  state.still = () => {
    try {
      const sheet = new w.CSSStyleSheet();
      sheet.replaceSync('*, ::before, ::after { transition: none !important; }');
      const adopt = (root) => {
        if (!root || root.adoptedStyleSheets.includes(sheet)) return;
        root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
        for (const el of root.querySelectorAll('*')) if (el.shadowRoot) adopt(el.shadowRoot);
      };
      adopt(document);
      for (const ref of shadowRoots) adopt(ref.deref());
    } catch (e) {}
  };
  // Whether any script hears the page scroll (with the IntersectionObservers
  // above): a page nobody listens to has no scroll pass. Installed after the
  // worker's own listeners.
  const listen = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, ...rest) {
    if ((type === 'scroll' || type === 'scrollend') &&
        (this === w || this === document || this === document.documentElement || this === document.body)) {
      state.scrollHeard = true;
    }
    return listen.call(this, type, ...rest);
  };
})();
