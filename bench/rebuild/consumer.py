"""Reference consumer of `capture.json` (the Code2Des view): rebuilds a page
from the manifest and its assets alone — no original HTML, CSS or JS.

It reads manifest v1 (SPEC §10) and uses the v2 keys (SPEC §11) when they
are there, so one consumer measures a worker before and after. It knows
nothing about the page it rebuilds.

What it draws, in one flat list of absolutely positioned boxes on a page
as wide as the page laid out (`page.layoutWidth`: on a phone 980 CSS px for
a page without `<meta name="viewport">`; the viewport's width in a manifest
without it) and `page.capturedHeight` tall:

- Element boxes (`box`, in page CSS px) with their computed background
  colour and images (every `url()` mapped to an asset by URL; gradients as
  they are), borders, radii, box shadow, outline and, with v2 styles,
  filter, blend mode, clip-path and masks. Opacity is multiplied down the
  tree onto every box (not a group opacity).
- Text: one span per text box (`textBoxes`: x, y, w, h, start, length), at
  (x, y), `white-space: pre`, line-height = the box height, clipped to the
  box (2 px of slack), in the node's own computed font and colour. The
  string is `text` sliced by start/length (v2), else `value` sliced (v1,
  with the computed `text-transform` applied by CSS), white space
  collapsed as the computed `white-space` says. Offsets count UTF-16 units.
- Fonts: every font asset that `dom.fonts` names is loaded with @font-face
  under a synthetic family per table entry; a node's `fonts` (v2) come
  first in its font-family, platform fonts by their family name, then the
  computed font-family. Without v2 keys only the computed font-family.
- Images: an <img> draws `currentSrc` (v2), else `src`, else a `srcset`
  candidate the capture stored; canvas and video draw their `image` asset
  (v2). object-fit and object-position from the computed style.
- Form controls are rebuilt as native controls of the same type with the
  captured box and styles: `inputValue`, `checked`, `selected` (v2), else
  the `value`/`checked`/`selected` attributes (v1). A password shows dots.
- Inline <svg>: the SVG subtree is written back from the nodes' names and
  attributes (no `class`, no event handlers, no <style> or <script>
  elements), each element's inline `style` attribute followed by its
  computed fill/stroke/opacity/font (fill and stroke exist in v2 styles
  only); HTML inside <foreignObject> is drawn as boxes like the rest.
- Transforms: a box is the bounding box of the transformed element. The
  2-D linear part of the transforms on the node and its ancestors (their
  computed `transform`) is applied around the box centre to a box whose
  untransformed size is solved from the bounding box; translations are
  already in the box. 3-D parts are dropped.
- Clipping: an element whose `overflow-x/-y` is not `visible` clips its
  descendants to its padding box, iframes to their content box; absolutely
  positioned descendants escape clips below their containing block, fixed
  ones escape all (frames excepted). Scrolled content is already at its
  painted position (`scroll` in v2 only says by how much).
- Paint order: `paintOrder` per document (one index per paint layer,
  pre-order over Chromium's paint layers), then element decorations before
  text and replaced content, then DOM order. In-flow content of a stacking
  context (v2 `stackingContext`, else: the root, positioned with a z-index,
  opacity < 1, a transform) is moved above its negative z-index layers.
  A frame's document paints where its <iframe> paints.
- The page background: the root element's background, else the body's
  (CSS propagation), white when neither has one; a frame's on its viewport.
- Generated content: v2 pseudo-element nodes with their `text`; in v1 the
  pseudo-element boxes are there but their text is not.

`mode="bg"` draws only the background colours of the same boxes (no text,
images, borders, shadows or transforms): the baseline the ink share is
measured against.
"""

import html
import math
import re

URL_RE = re.compile(r'url\(\s*(?:"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'|([^)\s]*))\s*\)')
# url("http://page/x#id") or url("#id") -> url(#id): references inside the rebuilt SVG
LOCAL_REF_RE = re.compile(r'url\(\s*"?[^#)"]*(#[^)"]*)"?\s*\)')
TRANSPARENT = ("rgba(0, 0, 0, 0)", "transparent", "")
TEXT_LIKE_INPUTS = {"", "text", "search", "email", "url", "tel", "password", "number", "date", "time",
                    "datetime-local", "month", "week"}
SKIP = {"HEAD", "SCRIPT", "STYLE", "TITLE", "META", "LINK", "NOSCRIPT", "TEMPLATE"}

# Styles copied onto a box as they are (those absent from a manifest's
# styleNames are skipped).
BOX_STYLES = [
    "border-top-width", "border-right-width", "border-bottom-width", "border-left-width",
    "border-top-style", "border-right-style", "border-bottom-style", "border-left-style",
    "border-top-color", "border-right-color", "border-bottom-color", "border-left-color",
    "border-top-left-radius", "border-top-right-radius", "border-bottom-right-radius", "border-bottom-left-radius",
    "background-color", "background-size", "background-position", "background-repeat", "background-clip",
    "box-shadow", "outline-color", "outline-style", "outline-width", "outline-offset",
    "mix-blend-mode", "backdrop-filter", "clip-path", "mask-size", "mask-position", "mask-repeat",
]
INITIAL = {
    **{f"border-{s}-width": ("0px",) for s in ("top", "right", "bottom", "left")},
    **{f"border-{s}-style": ("none",) for s in ("top", "right", "bottom", "left")},
    **{f"border-{v}-{h}-radius": ("0px",) for v in ("top", "bottom") for h in ("left", "right")},
    **{f"padding-{s}": ("0px",) for s in ("top", "right", "bottom", "left")},
    "box-shadow": ("none",), "outline-style": ("none",), "mix-blend-mode": ("normal",),
    "backdrop-filter": ("none",), "clip-path": ("none",), "text-shadow": ("none",),
    "text-decoration-line": ("none",), "letter-spacing": ("normal",), "font-variant": ("normal",),
    "font-stretch": ("100%", "normal"), "direction": ("ltr",), "background-clip": ("border-box",),
    "font-style": ("normal",), "mask-size": ("auto",), "mask-position": ("0% 0%",), "mask-repeat": ("repeat",),
}
PADDING = ["padding-top", "padding-right", "padding-bottom", "padding-left"]
TEXT_STYLES = [
    "font-size", "font-weight", "font-style", "font-variant", "font-stretch", "color",
    "-webkit-text-fill-color", "letter-spacing", "text-decoration-line", "text-decoration-color",
    "text-decoration-style", "text-shadow", "direction",
]
CONTROL_STYLES = PADDING + TEXT_STYLES + ["text-align", "appearance", "font-family", "line-height"]


def q(css):
    """A style attribute's value, escaped."""
    return html.escape(css, quote=True)


def css_url(url):
    return 'url("' + url.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "%0A") + '")'


def px(value, default=0.0):
    if not value:
        return default
    m = re.match(r"^(-?[\d.]+(?:e-?\d+)?)px$", value.strip())
    return float(m.group(1)) if m else default


def u16slice(s, start, length):
    """s[start:start+length] in UTF-16 code units, as Chromium counts."""
    b = s.encode("utf-16-le")
    return b[2 * start: 2 * (start + length)].decode("utf-16-le", errors="ignore")


def attr_map(node):
    return {k: v for k, v in node.get("attributes", [])}


def parse_transform(value):
    """The 2-D linear part (a, b, c, d) of a computed transform, or None."""
    if not value or value == "none":
        return None
    m = re.match(r"matrix(3d)?\(([^)]*)\)", value.strip())
    if not m:
        return None
    v = [float(x) for x in m.group(2).split(",")]
    a, b, c, d = (v[0], v[1], v[4], v[5]) if m.group(1) else (v[0], v[1], v[2], v[3])
    if abs(a - 1) < 1e-9 and abs(d - 1) < 1e-9 and abs(b) < 1e-9 and abs(c) < 1e-9:
        return None
    return (a, b, c, d)


def compose(outer, inner):
    if outer is None:
        return inner
    if inner is None:
        return outer
    a1, b1, c1, d1 = outer
    a2, b2, c2, d2 = inner
    return (a1 * a2 + c1 * b2, b1 * a2 + d1 * b2, a1 * c2 + c1 * d2, b1 * c2 + d1 * d2)


def place(box, linear):
    """CSS for a box given as the bounding box of its transformed self:
    left/top/width/height, plus the linear transform around its centre."""
    x, y, w, h = box
    if linear is not None:
        a, b, c, d = linear
        # W = |a| w + |c| h, H = |b| w + |d| h
        det = abs(a) * abs(d) - abs(c) * abs(b)
        if abs(det) > 1e-6:
            uw = (w * abs(d) - abs(c) * h) / det
            uh = (abs(a) * h - abs(b) * w) / det
            if uw > 0.01 and uh > 0.01:
                cx, cy = x + w / 2, y + h / 2
                return (f"left:{cx - uw / 2:.3f}px;top:{cy - uh / 2:.3f}px;width:{uw:.3f}px;height:{uh:.3f}px;"
                        f"transform:matrix({a:.6f},{b:.6f},{c:.6f},{d:.6f},0,0);transform-origin:50% 50%;")
    return f"left:{x:.3f}px;top:{y:.3f}px;width:{w:.3f}px;height:{h:.3f}px;"


def intersect(r1, r2):
    if r1 is None:
        return r2
    if r2 is None:
        return r1
    x1, y1 = max(r1[0], r2[0]), max(r1[1], r2[1])
    x2, y2 = min(r1[0] + r1[2], r2[0] + r2[2]), min(r1[1] + r1[3], r2[1] + r2[3])
    return (x1, y1, max(0.0, x2 - x1), max(0.0, y2 - y1))


def contains(outer, box):
    return (outer[0] <= box[0] + 0.01 and outer[1] <= box[1] + 0.01
            and box[0] + box[2] <= outer[0] + outer[2] + 0.01 and box[1] + box[3] <= outer[1] + outer[3] + 0.01)


def collapse(text, white_space):
    if white_space in ("pre", "pre-wrap", "break-spaces"):
        return text
    if white_space == "pre-line":
        return re.sub(r"[ \t]+", " ", text)
    return re.sub(r"[ \t\r\n\f]+", " ", text)


class Rebuild:
    def __init__(self, manifest, assets):
        # Nodes named by an interaction state, drawn with their id.
        self.stated = {c["node"] for e in manifest.get("dom", {}).get("states", [])
                       for c in e["changes"]} | {e["node"] for e in manifest.get("dom", {}).get("states", [])}
        self.m = manifest
        self.assets = assets  # asset key -> URL the rebuild page loads it from
        dom = manifest["dom"]
        self.names = dom["styleNames"]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.styles = dom["styles"]
        self.nodes = dom["nodes"]
        self.by_id = {n["id"]: n for n in self.nodes}
        self.order = {n["id"]: i for i, n in enumerate(self.nodes)}
        self.children = {}
        for n in self.nodes:
            if n.get("parent") is not None:
                self.children.setdefault(n["parent"], []).append(n["id"])
        self.by_url = {}
        for a in manifest.get("assets", []):
            if a.get("url") and a["key"] in assets:
                self.by_url.setdefault(a["url"], assets[a["key"]])
                self.by_url.setdefault(a["url"].split("#")[0], assets[a["key"]])
        self.fonts = dom.get("fonts") or []
        self.v2 = manifest.get("manifestVersion", 1) >= 2

    # -- styles

    def style(self, node):
        s = node.get("style")
        if s is None:
            return None
        return self.styles[s]

    def get(self, node, name, default=""):
        s = node.get("style")
        i = self.index.get(name)
        if s is None or i is None:
            return default
        v = self.styles[s][i]
        return default if v is None else v

    def element_parent(self, node):
        """The nearest ancestor that is an element with a style."""
        p = node.get("parent")
        while p is not None:
            n = self.by_id[p]
            if n["type"] == 1 and n.get("style") is not None:
                return n
            p = n.get("parent")
        return None

    def url_of(self, raw):
        raw = raw.replace('\\"', '"').replace("\\'", "'")
        if raw.startswith("data:"):
            return raw
        return self.by_url.get(raw) or self.by_url.get(raw.split("#")[0])

    def map_urls(self, value):
        """A computed image list with every url() mapped to its asset; a
        layer whose image was not stored becomes `none`."""
        def sub(m):
            raw = next(g for g in m.groups() if g is not None)
            local = self.url_of(raw)
            return css_url(local) if local else "none"
        return URL_RE.sub(sub, value)

    # -- the tree walk: clips, opacity, transforms, filters

    def prepare(self):
        """Per node: clip rect for its own painting, effective opacity, the
        accumulated linear transform, accumulated filter, and for an element
        the clips its descendants inherit."""
        self.info = {}
        roots = [n for n in self.nodes if n.get("parent") is None]
        stack = [(r["id"], {"all": None, "abs": None, "fixed": None, "opacity": 1.0, "linear": None,
                            "filter": ""}) for r in reversed(roots)]
        while stack:
            nid, inherited = stack.pop()
            n = self.by_id[nid]
            pos = self.get(n, "position", "static") if n["type"] == 1 else "static"
            clip = inherited["fixed"] if pos == "fixed" else inherited["abs"] if pos == "absolute" else inherited["all"]
            opacity, linear, filt = inherited["opacity"], inherited["linear"], inherited["filter"]
            if n["type"] == 1 and n.get("style") is not None:
                opacity *= float(self.get(n, "opacity", "1") or 1)
                linear = compose(linear, parse_transform(self.get(n, "transform")))
                f = self.get(n, "filter", "none")
                if f and f != "none":
                    filt = (filt + " " + f).strip()
            self.info[nid] = {"clip": clip, "opacity": opacity, "linear": linear, "filter": filt}
            own = self.own_clip(n)
            all_ = intersect(clip, own)
            positioned = pos != "static" or linear is not None
            child = {
                "all": all_,
                "abs": all_ if positioned or n.get("parent") is None else intersect(inherited["abs"], own),
                "fixed": all_ if (linear is not None or n["type"] == 9 and n.get("document")) else inherited["fixed"],
                "opacity": opacity, "linear": linear, "filter": filt,
            }
            if n["type"] == 9 and n.get("document"):
                # A frame's document: everything in it is clipped to its viewport.
                box = n.get("box")
                vp = intersect(clip, tuple(box)) if box else clip
                child.update({"all": vp, "abs": vp, "fixed": vp})
            for c in reversed(self.children.get(nid, [])):
                stack.append((c, child))

    def own_clip(self, n):
        """The rect an element clips its descendants to, or None."""
        box = n.get("box")
        if n["type"] != 1 or not box or n.get("style") is None:
            return None
        name = n["name"].upper()
        bt, br, bb, bl = (px(self.get(n, f"border-{s}-width")) for s in ("top", "right", "bottom", "left"))
        if name in ("IFRAME", "FRAME"):
            pt, pr, pb, pl = (px(self.get(n, p)) for p in PADDING)
            return (box[0] + bl + pl, box[1] + bt + pt, box[2] - bl - br - pl - pr, box[3] - bt - bb - pt - pb)
        ox, oy = self.get(n, "overflow-x", "visible"), self.get(n, "overflow-y", "visible")
        if ox == "visible" and oy == "visible":
            return None
        if self.get(n, "display", "block") in ("inline", "contents") and not self.is_replaced(n):
            return None  # overflow does not apply to inline boxes
        if n.get("parent") is not None and self.by_id[n["parent"]]["type"] == 9:
            return None  # the root element's overflow is the viewport's: the page scrolls
        inf = 1e7
        x, w = (box[0] + bl, box[2] - bl - br) if ox != "visible" else (-inf, 2 * inf)
        y, h = (box[1] + bt, box[3] - bt - bb) if oy != "visible" else (-inf, 2 * inf)
        return (x, y, w, h)

    # -- paint order

    def states_css(self):
        return states_css_of(self.m)

    def paint_keys(self):
        """A sortable key per node: its document's prefix (where the owning
        iframe paints), the layer index (with in-flow content of a stacking
        context moved above its negative z-index layers), then phase."""
        docs = {}  # document index -> owner node id (the iframe), via the #document node's parent
        for n in self.nodes:
            if n["type"] == 9 and n.get("parent") is not None:
                docs[n.get("document", 0)] = n["parent"]
        # Layers per document: the first styled node of each paintOrder index.
        bump = {}  # (document, layer index) -> layer index its in-flow content moves to
        first = {}
        for n in self.nodes:
            if n.get("paintOrder") is None:
                continue
            first.setdefault((n.get("document", 0), n["paintOrder"]), n)
        for (doc, p), root in first.items():
            if root["type"] != 1:
                continue
            z = self.get(root, "z-index", "auto")
            if z in ("auto", "") or int(z) >= 0:
                continue
            end = max([p] + [d.get("paintOrder", p) for d in self.descendants(root)])
            ctx = self.stacking_parent(root)
            if ctx is None:
                continue
            key = (doc, ctx.get("paintOrder", 0))
            bump[key] = max(bump.get(key, -1), end + 0.5)
        self.ctx_roots = {}
        keys = {}

        def key_of(n):
            nid = n["id"]
            if nid in keys:
                return keys[nid]
            doc = n.get("document", 0)
            prefix = ()
            if doc in docs and docs[doc] in self.by_id:
                prefix = key_of(self.by_id[docs[doc]])
            p = n.get("paintOrder")
            if p is None:
                parent = self.element_parent(n)
                p = parent.get("paintOrder", 0) if parent is not None else 0
            layer = float(p)
            if (doc, p) in bump and first.get((doc, p)) is not n:
                layer = bump[(doc, p)]
            phase = 0 if n["type"] == 1 and not self.is_replaced(n) else 1
            k = prefix + (layer, phase, self.order[nid])
            keys[nid] = k
            return k

        self.key_of = key_of

    def descendants(self, n):
        """n's descendants in DOM order."""
        out, stack = [], list(reversed(self.children.get(n["id"], [])))
        while stack:
            d = self.by_id[stack.pop()]
            out.append(d)
            stack.extend(reversed(self.children.get(d["id"], [])))
        return out

    def is_stacking_context(self, n):
        if n["type"] != 1 or n.get("style") is None:
            return False
        if self.v2:
            return bool(n.get("stackingContext"))
        if n.get("parent") is not None and self.by_id[n["parent"]]["type"] == 9:
            return True
        z = self.get(n, "z-index", "auto")
        return ((self.get(n, "position", "static") != "static" and z not in ("auto", ""))
                or float(self.get(n, "opacity", "1") or 1) < 1 or self.get(n, "transform", "none") != "none")

    def stacking_parent(self, n):
        p = n.get("parent")
        while p is not None:
            a = self.by_id[p]
            if a["type"] == 9:
                # the root element stands for the document
                for c in self.children.get(a["id"], []):
                    if self.by_id[c]["type"] == 1:
                        return self.by_id[c]
                return None
            if self.is_stacking_context(a):
                return a
            p = a.get("parent")
        return None

    def is_replaced(self, n):
        return n["type"] == 1 and n["name"].upper() in ("IMG", "CANVAS", "VIDEO", "INPUT", "SELECT", "TEXTAREA",
                                                         "IFRAME", "FRAME", "EMBED", "OBJECT") \
            or n["name"].lower() == "svg"

    # -- the page background

    def canvas_background(self, doc):
        """(node whose background is the canvas's, css) for a document."""
        root = body = None
        for n in self.nodes:
            if n.get("document", 0) != doc or n["type"] != 1:
                continue
            parent = self.by_id.get(n.get("parent"))
            if root is None and parent is not None and parent["type"] == 9:
                root = n
            elif root is not None and n.get("parent") == root["id"] and n["name"].upper() == "BODY":
                body = n
                break
        for source in (root, body):
            if source is None or source.get("style") is None:
                continue
            color = self.get(source, "background-color", "")
            image = self.get(source, "background-image", "none")
            if color not in TRANSPARENT or image not in ("none", ""):
                return source, self.background_css(source)
        return None, ""

    def background_css(self, n, colour_only=False):
        css = []
        color = self.get(n, "background-color")
        if color and color not in TRANSPARENT:
            css.append(f"background-color:{color};")
        if colour_only:
            return "".join(css)
        image = self.get(n, "background-image", "none")
        if image and image != "none":
            css.append(f"background-image:{self.map_urls(image)};")
            for prop in ("background-size", "background-position", "background-repeat", "background-clip"):
                v = self.get(n, prop)
                if v:
                    css.append(f"{prop}:{v};")
        return "".join(css)

    # -- fonts

    def font_faces(self):
        css = []
        self.face_of = {}
        for i, f in enumerate(self.fonts):
            local = self.assets.get(f.get("asset")) if f.get("asset") else None
            if local:
                family = f"rb-font-{i}"
                self.face_of[i] = family
                for style in ("normal", "italic"):
                    css.append(f'@font-face{{font-family:"{family}";src:url("{local}");'
                               f"font-weight:1 1000;font-style:{style};font-display:block;}}")
            elif not f.get("custom") and f.get("family"):
                self.face_of[i] = f["family"]
        return "\n".join(css)

    def font_family(self, n):
        computed = self.get(n, "font-family", "")
        families = []
        for i in n.get("fonts") or []:
            fam = self.face_of.get(i)
            if fam and fam not in families:
                families.append(fam)
        quoted = ",".join('"' + f.replace('"', '\\"') + '"' for f in families)
        if quoted and computed:
            return quoted + "," + computed
        return quoted or computed

    # -- drawing

    def copy(self, n, props, keep_initial=False):
        """`prop:value;` for each of `props` the manifest has, less initial
        values (a smaller page), border and outline colours only where drawn."""
        out = []
        for prop in props:
            if prop not in self.index:
                continue
            v = self.get(n, prop)
            if v in ("", None) or (not keep_initial and v in INITIAL.get(prop, ())):
                continue
            if prop.startswith("border-") and prop.endswith("-color"):
                if self.get(n, prop.replace("-color", "-style"), "none") in ("none", "hidden"):
                    continue
            if prop.startswith("outline-") and prop != "outline-style" \
                    and self.get(n, "outline-style", "none") in ("none", ""):
                continue
            out.append(f"{prop}:{v};")
        return "".join(out)

    def wrap(self, html_, box, clip):
        """Clip a drawn piece to `clip` (page coordinates) when it is not
        inside it: a clipping wrapper, the piece moved into its frame."""
        if clip is None or contains(clip, box):
            return html_
        if clip[2] <= 0 or clip[3] <= 0:
            return ""
        cx, cy = clip[0], clip[1]
        return (f'<div style="position:absolute;overflow:hidden;left:{cx:.3f}px;top:{cy:.3f}px;'
                f'width:{clip[2]:.3f}px;height:{clip[3]:.3f}px">'
                f'<div style="position:absolute;left:{-cx:.3f}px;top:{-cy:.3f}px">{html_}</div></div>')

    def effects(self, n, info, own=True):
        css = ""
        if info["opacity"] < 0.999:
            css += f"opacity:{info['opacity']:.4f};"
        if info["filter"]:
            css += f"filter:{info['filter']};"
        return css

    def element(self, n, mode, skip_background):
        box = n.get("box")
        info = self.info[n["id"]]
        if not box or box[2] <= 0 or box[3] <= 0:
            return None
        if self.get(n, "visibility", "visible") in ("hidden", "collapse"):
            return None
        if mode == "bg":
            css = "" if skip_background else self.background_css(n, colour_only=True)
            if not css:
                return None
            return self.wrap(f'<div style="{q("position:absolute;" + place(box, None) + css)}"></div>', box, info["clip"])
        name = n["name"].upper()
        css = "position:absolute;box-sizing:border-box;" + place(box, info["linear"])
        decor = self.copy(n, [p for p in BOX_STYLES if not (skip_background and p.startswith("background"))])
        if not skip_background:
            decor += self.background_css(n)
        mask = self.get(n, "mask-image", "none")
        if mask and mask != "none":
            decor += f"-webkit-mask-image:{self.map_urls(mask)};mask-image:{self.map_urls(mask)};"
        inner = ""
        if name in ("IMG", "CANVAS", "VIDEO") or n.get("image"):
            src = self.image_src(n)
            if src:
                fit = self.get(n, "object-fit", "fill") if name == "IMG" else "fill" if n.get("image") else "contain"
                pos = self.get(n, "object-position", "50% 50%")
                inner = (f'<img src="{html.escape(src)}" style="display:block;width:100%;height:100%;'
                         f'object-fit:{fit};object-position:{q(pos)}">')
                decor += self.copy(n, PADDING)
        elif n.get("pseudo") or name.startswith("::"):
            # Generated content that is an image: `content: url(…)` (v2 styles).
            content = self.get(n, "content", "")
            m = URL_RE.search(content) if content else None
            local = self.url_of(next(g for g in m.groups() if g is not None)) if m else None
            if local:
                inner = (f'<img src="{html.escape(local)}" style="display:block;width:100%;height:100%">')
        elif name in ("INPUT", "SELECT", "TEXTAREA"):
            # A native control has its own initial borders and padding: every
            # value is set, initial ones too.
            full = self.copy(n, [p for p in BOX_STYLES if not p.startswith("background")], keep_initial=True)
            control = self.control(n, css + full + self.background_css(n) + self.effects(n, info))
            if control is not None:
                return self.wrap(control, box, info["clip"])
        elif n.get("pseudo") is None and n["name"].lower() == "svg" and not self.in_svg(n):
            return self.wrap(self.svg(n, css + self.effects(n, info)), box, info["clip"])
        if not decor and not inner:
            return None
        named = f' data-n="{n["id"]}"' if n["id"] in self.stated else ""
        return self.wrap(f'<div{named} style="{q(css + decor + self.effects(n, info))}">{inner}</div>', box, info["clip"])

    def image_src(self, n):
        if n.get("image"):
            return self.assets.get(n["image"])
        if n.get("currentSrc"):
            local = self.url_of(n["currentSrc"])
            if local:
                return local
        attrs = attr_map(n)
        base = self.document_url(n)
        from urllib.parse import urljoin
        if attrs.get("src"):
            local = self.url_of(urljoin(base, attrs["src"]))
            if local:
                return local
        for candidate in (attrs.get("srcset") or "").split(","):
            parts = candidate.strip().split()
            if parts:
                local = self.url_of(urljoin(base, parts[0]))
                if local:
                    return local
        return None

    def document_url(self, n):
        doc = n.get("document", 0)
        for d in self.m["dom"].get("documents") or []:
            if d.get("index") == doc and d.get("url"):
                return d["url"]
        if doc == 0:
            return self.m["source"].get("finalUrl") or self.m["source"].get("requestedUrl", "")
        # v1: the owning iframe's src
        for m in self.nodes:
            if m["type"] == 9 and m.get("document", 0) == doc and m.get("parent") is not None:
                return attr_map(self.by_id[m["parent"]]).get("src", "")
        return ""

    def control(self, n, css):
        name = n["name"].upper()
        attrs = attr_map(n)
        style = css + self.copy(n, CONTROL_STYLES, keep_initial=True) + "margin:0;"
        if name == "INPUT":
            kind = (attrs.get("type") or "").lower()
            if kind in ("checkbox", "radio"):
                checked = n.get("checked") if self.v2 else "checked" in attrs
                return (f'<input type="{kind}"{" checked" if checked else ""}'
                        f'{" disabled" if "disabled" in attrs else ""} style="{q(style)}">')
            if kind in ("hidden",):
                return ""
            if kind in TEXT_LIKE_INPUTS or kind in ("submit", "button", "reset", "color", "range"):
                value = n.get("inputValue") if "inputValue" in n else attrs.get("value", "")
                if kind in ("submit", "reset") and not value:
                    value = "Submit" if kind == "submit" else "Reset"
                t = kind if kind in ("password", "submit", "button", "reset", "color", "range") else "text"
                ph = attrs.get("placeholder")
                extra = "".join(f' {k}="{html.escape(attrs[k])}"' for k in ("min", "max", "step")
                                if k in attrs and kind == "range")
                return (f'<input type="{t}"{extra} value="{html.escape(value or "")}"'
                        f'{" placeholder=" + chr(34) + html.escape(ph) + chr(34) if ph else ""} style="{q(style)}">')
            return None
        if name == "SELECT":
            chosen = None
            options = [self.by_id[c] for c in self.descendants_ids(n) if self.by_id[c]["name"].upper() == "OPTION"]
            for o in options:
                if (o.get("selected") if self.v2 else "selected" in attr_map(o)):
                    chosen = o
            if chosen is None and options:
                chosen = options[0]
            label = ""
            if chosen is not None:
                label = attr_map(chosen).get("label") or "".join(
                    d.get("value") or "" for d in self.descendants(chosen) if d["type"] == 3)
            if "multiple" in attrs or (attrs.get("size") not in (None, "", "0", "1")):
                return None
            return f'<select style="{q(style)}"><option>{html.escape(label.strip())}</option></select>'
        if name == "TEXTAREA":
            value = n.get("inputValue") if "inputValue" in n else "".join(
                self.by_id[c].get("value") or "" for c in self.children.get(n["id"], []))
            return f'<textarea style="{q(style)}">{html.escape(value or "")}</textarea>'
        return None

    def descendants_ids(self, n):
        return [d["id"] for d in self.descendants(n)]

    def in_svg(self, n):
        p = n.get("parent")
        while p is not None:
            a = self.by_id[p]
            if a["name"].lower() == "foreignobject":
                return False
            if a["name"].lower() == "svg":
                return True
            p = a.get("parent")
        return False

    SVG_STYLE = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray",
                 "opacity", "font-family", "font-size", "font-weight", "font-style", "color", "visibility",
                 "text-anchor", "dominant-baseline"]

    def svg(self, root, css):
        """The SVG subtree written back from the nodes: names, attributes
        (no style/class/event handlers), text, computed paint."""
        out = []

        def svg_style(n):
            s = []
            for prop in self.SVG_STYLE:
                if prop in self.index:
                    v = self.get(n, prop)
                    if v:
                        s.append(prop + ":" + LOCAL_REF_RE.sub(r"url(\1)", v))
            return ";".join(s)

        def emit(n, top):
            if n["type"] == 3:
                out.append(html.escape(n.get("value") or ""))
                return
            if n["type"] != 1:
                for c in self.children.get(n["id"], []):
                    emit(self.by_id[c], False)
                return
            tag = n["name"] if n["name"] != n["name"].upper() else n["name"].lower()
            if tag.lower() in ("style", "script", "foreignobject"):
                if tag.lower() == "foreignobject":
                    a = " ".join(f'{k}="{html.escape(v)}"' for k, v in n.get("attributes", [])
                                 if k in ("x", "y", "width", "height"))
                    out.append(f"<foreignObject {a}></foreignObject>")
                return
            attrs = []
            for k, v in n.get("attributes", []):
                if k in ("style", "class") or k.lower().startswith("on"):
                    continue  # the inline style is merged below, classes mean nothing without the CSS
                if top and k in ("width", "height", "x", "y"):
                    continue
                attrs.append(f'{k}="{html.escape(v)}"')
            # The inline style attribute (SVG-only properties such as
            # text-anchor or marker-end have no computed style in the
            # manifest), then the computed styles, which win.
            inline = attr_map(n).get("style", "")
            style = ";".join(x for x in (inline.strip().rstrip(";"), svg_style(n)) if x)
            if top:
                style = css + "overflow:hidden;" + style
                if not any(a.startswith("xmlns=") for a in attrs):
                    attrs.append('xmlns="http://www.w3.org/2000/svg"')
            if style:
                attrs.append(f'style="{html.escape(style)}"')
            out.append(f"<{tag} {' '.join(attrs)}>")
            for c in self.children.get(n["id"], []):
                emit(self.by_id[c], False)
            out.append(f"</{tag}>")

        emit(root, True)
        return "".join(out)

    def text_pieces(self, n):
        """(box, string) per text box of a text node or pseudo-element."""
        boxes = n.get("textBoxes") or []
        if not boxes:
            return []
        if "text" in n:
            source, v1 = n["text"], False
        elif n.get("value") is not None:
            source, v1 = n["value"], True
        else:
            return []
        owner = n if n["type"] == 1 else self.element_parent(n)
        ws = self.get(owner, "white-space", "normal") if owner is not None else "normal"
        out, end = [], 0
        for b in boxes:
            start, length = int(b[4]), int(b[5])
            if start < end:  # pieces of generated text each counted from 0: one after another
                start = end
            end = start + length
            # White space may still be as in the DOM (v2 too): collapsed as
            # the computed white-space says, so that a newline never breaks a line box.
            s = collapse(u16slice(source, start, length), ws)
            if s.strip() or s:
                out.append(((b[0], b[1], b[2], b[3]), s))
        return out

    def text(self, n):
        owner = n if n["type"] == 1 else self.element_parent(n)
        if owner is None or self.get(owner, "visibility", "visible") in ("hidden", "collapse"):
            return []
        info = self.info[n["id"]]
        clip = info["clip"]
        if n["type"] == 1:
            clip = intersect(clip, self.own_clip(n))  # an element's own text is inside its overflow clip
        font = self.font_family(n if n.get("fonts") else owner)
        base = ("position:absolute;white-space:pre;overflow:clip;overflow-clip-margin:2px;margin:0;padding:0;"
                f"font-family:{font};" + self.copy(owner, TEXT_STYLES) + self.effects(owner, info))
        transform = self.get(owner, "text-transform", "none")
        base += f"text-transform:{transform};" if ("text" not in n and transform != "none") else ""
        pieces = []
        for box, s in self.text_pieces(n):
            if box[2] <= 0 or box[3] <= 0 or not s:
                continue
            css = base + place(box, info["linear"]) + f"line-height:{box[3]:.3f}px;"
            pieces.append(self.wrap(f'<span style="{q(css)}">{html.escape(s)}</span>', box, clip))
        return pieces

    def build(self, mode):
        self.prepare()
        self.paint_keys()
        width = self.m["page"].get("layoutWidth") or self.m["viewport"]["width"]
        height = self.m["page"]["capturedHeight"]
        canvas_node, canvas_css = self.canvas_background(0)
        if mode == "bg":
            canvas_node, canvas_css = canvas_node, (self.background_css(canvas_node, colour_only=True)
                                                    if canvas_node else "")
        if not canvas_css:
            canvas_css = "background-color:white;"
        propagated = {canvas_node["id"]} if canvas_node else set()
        frame_backgrounds = {}
        for n in self.nodes:
            if n["type"] == 9 and n.get("document") and n.get("box"):
                src, css = self.canvas_background(n["document"])
                if src is not None:
                    propagated.add(src["id"])
                    if mode == "bg":
                        css = self.background_css(src, colour_only=True)
                    frame_backgrounds[n["id"]] = css
        drawn = []
        skip_under = set()  # subtrees drawn by their root (svg, controls)
        for n in self.nodes:
            nid = n["id"]
            parent = n.get("parent")
            if parent in skip_under and self.by_id[parent]["name"].lower() != "foreignobject":
                skip_under.add(nid)
                continue
            if n["type"] == 1 and n["name"].upper() in SKIP:
                skip_under.add(nid)
                continue
            key = self.key_of(n)
            if n["type"] == 9 and nid in frame_backgrounds and frame_backgrounds[nid]:
                box = n["box"]
                css = "position:absolute;" + place(box, None) + frame_backgrounds[nid]
                drawn.append((key, self.wrap(f'<div style="{q(css)}"></div>', box, self.info[nid]["clip"])))
                continue
            if n["type"] == 1 and n.get("style") is not None:
                if mode == "full" and (n["name"].lower() == "svg" and not self.in_svg(n)
                                       or n["name"].upper() in ("SELECT", "TEXTAREA")):
                    skip_under.add(nid)
                piece = self.element(n, mode, nid in propagated)
                if piece:
                    drawn.append((key, piece))
            if mode == "full" and n.get("textBoxes"):
                for i, piece in enumerate(self.text(n)):
                    drawn.append((key + (i,), piece))
        drawn.sort(key=lambda kv: kv[0])
        faces = self.font_faces() if mode == "full" else ""
        faces += self.states_css() if mode == "full" else ""
        body = "\n".join(piece for _, piece in drawn)
        return (f'<!doctype html><html><head><meta charset="utf-8"><style>{faces}\n'
                f"html,body{{margin:0;padding:0}}"
                f"#page{{position:relative;overflow:hidden;width:{width}px;height:{height}px;{canvas_css}}}"
                f"</style></head><body><div id=\"page\">\n{body}\n</div></body></html>")


# What a state's changes repaint on the rebuilt boxes (text is drawn apart).
STATE_PROPS = ("background-color", "box-shadow", "opacity", "outline-color", "outline-style",
               "outline-width", "outline-offset", "border-top-color", "border-right-color",
               "border-bottom-color", "border-left-color", "transform", "filter")


def states_css_of(manifest):
    """`dom.states` (SPEC §11) as CSS rules on the rebuilt boxes: a change
    of node C under element E's `:hover` applies while E's box is hovered
    (the boxes are flat, so through `:has()`); `focus-visible` and `active`
    the same with those pseudo-classes."""
    rules = []
    for entry in manifest.get("dom", {}).get("states", []):
        pseudo = entry["state"]
        for change in entry["changes"]:
            decls = ";".join(f"{k}:{v}" for k, v in change["styles"].items() if k in STATE_PROPS)
            if decls:
                rules.append(f'#page:has([data-n="{entry["node"]}"]:{pseudo}) [data-n="{change["node"]}"]{{{decls}}}')
    return "\n".join(rules)


def rebuild(manifest, assets, mode="full"):
    """HTML of the page rebuilt from `manifest`; `assets` maps an asset key
    to the URL the rebuild loads it from. mode "full" or "bg"."""
    r = Rebuild(manifest, assets)
    if mode == "full":
        r.font_faces()
    else:
        r.face_of = {}
    return r.build(mode)
