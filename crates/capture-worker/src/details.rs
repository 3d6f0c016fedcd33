//! What is asked of Chromium about each part of the page after the
//! snapshot (the snapshot's [`Questions`], answered as a part's
//! [`Details`]): the fonts that drew its text, asked through
//! representatives of each computed style and matched to the web font
//! files Chromium loaded; which ambiguous elements host a shadow root; and
//! the pixels of its canvases and videos. [`Page::answer_text`] and
//! [`Page::answer_pixels`] ask it, in the session each part was taken in,
//! and gather it into [`Answers`].

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use futures::StreamExt;
use page_import_contract::capture::AssetKind;
use serde::Serialize;
use serde_json::Value;

use crate::cdp::{CdpError, Command, Connection};
use crate::commands::{
    CallFunctionOn, CreateIsolatedWorld, CssDisable, CssEnable, DescribeNode, DomDisable, DomEnable, GetDocument,
    PushNodesByBackendIdsToFrontend, ResolveNode,
};
use crate::dom::{self, Details, PixelsOf, Questions, TextNode};
use crate::page::{Page, COMMAND_TIMEOUT, HEAVY_TIMEOUT};
use crate::page_state::WebFont;
use crate::protocol::{PlatformFonts, PushedNodes};

/// CDP calls of one kind in flight at once while asking about nodes.
const IN_FLIGHT: usize = 64;
/// A canvas or video is read up to this many pixels, and kept up to this
/// many bytes of PNG.
const MAX_ELEMENT_PIXELS: u64 = 4096 * 4096;
const MAX_ELEMENT_IMAGE_BYTES: usize = 16 * 1024 * 1024;
/// The fonts of at most this many nodes of one computed style stand for
/// the others (see [`representatives`]).
const MAX_REPRESENTATIVES: usize = 16;

/// A font that drew text, and the URL of its file when it is a web font.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FontUse {
    pub family: String,
    pub post_script_name: String,
    pub custom: bool,
    pub src: Option<String>,
}

/// The pixels of a canvas or video as a PNG.
pub struct ElementImage {
    pub kind: AssetKind,
    pub png: Bytes,
}

/// What every part's [`Questions`] were answered with: per part its
/// [`Details`], and the tables they index.
#[derive(Default)]
pub struct Answers {
    pub details: Vec<Details>,
    pub fonts: Vec<FontUse>,
    pub images: Vec<ElementImage>,
}

impl Page {
    /// Asks Chromium what each part's snapshot does not tell about its
    /// text and shadow trees (see [`Questions`]), in the session the part
    /// was taken in: the fonts that drew its text (one
    /// `CSS.getPlatformFontsForNode` per node, all of them in flight at
    /// once) and which ambiguous elements host a shadow root. None of it
    /// depends on the viewport, so it may run while the screenshot is being
    /// taken. A question Chromium cannot answer stays unanswered. The
    /// pixels are [`Page::answer_pixels`]'.
    pub async fn answer_text(&self, questions: &[(String, Questions)]) -> Answers {
        let mut answers = Answers::default();
        let mut font_ids: HashMap<FontUse, usize> = HashMap::new();
        let parts = futures::future::join_all(questions.iter().map(|(session, asked)| async move {
            tokio::join!(
                self.fonts_of(session, &asked.text_nodes),
                self.shadow_hosts(session, &asked.maybe_hosts),
            )
        }))
        .await;
        let web_fonts = self.state().web_fonts.clone();
        for ((_, asked), (fonts, hosts)) in questions.iter().zip(parts) {
            let mut details = Details {
                hosts,
                ..Details::default()
            };
            let text_of: HashMap<i64, &TextNode> = asked.text_nodes.iter().map(|t| (t.backend_node_id, t)).collect();
            for (node, used) in fonts {
                let Some(text) = text_of.get(&node) else { continue };
                let ids = used
                    .into_iter()
                    .map(|mut font| {
                        if font.custom {
                            font.src = web_font_for(&web_fonts, &font.family, text).map(|f| f.src.clone());
                        }
                        let next = answers.fonts.len();
                        *font_ids.entry(font.clone()).or_insert_with(|| {
                            answers.fonts.push(font);
                            next
                        })
                    })
                    .collect();
                details.fonts.insert(node, ids);
            }
            answers.details.push(details);
        }
        answers
    }

    /// The pixels of each part's canvases and videos (at most
    /// [`dom::MAX_ELEMENT_IMAGES`] in all), added to `answers` (from
    /// [`Page::answer_text`] of the same questions): read with `toDataURL`
    /// in a JavaScript world of the worker's own, or cut from the page.
    /// A cut is a screenshot of its own: call this once the full-page one
    /// is done.
    pub async fn answer_pixels(&self, questions: &[(String, Questions)], answers: &mut Answers) {
        let mut images_left = dom::MAX_ELEMENT_IMAGES;
        for ((session, asked), details) in questions.iter().zip(answers.details.iter_mut()) {
            // One element at a time: each read can be megabytes, and a cut
            // from the page is a screenshot of its own.
            let wanted = &asked.pixels[..asked.pixels.len().min(images_left)];
            if wanted.is_empty() {
                continue;
            }
            images_left -= wanted.len();
            let world = self.isolated_world(session, asked.frame_id.as_deref()).await;
            let main = *session == self.session;
            for element in wanted {
                if let Some(png) = self.pixels_of(session, world, element, main).await {
                    details.pixels.insert(element.backend_node_id, answers.images.len());
                    answers.images.push(ElementImage {
                        kind: element.kind,
                        png,
                    });
                }
            }
        }
    }

    /// The computed styles of each part's elements that have no layout
    /// object but paint others (see [`Questions::unlaid_styles`]), read in
    /// the worker's own world one element at a time; one Chromium cannot
    /// resolve keeps none.
    pub async fn answer_styles(&self, questions: &[(String, Questions)], answers: &mut Answers) {
        let read = read_style_function();
        for ((session, asked), details) in questions.iter().zip(answers.details.iter_mut()) {
            if asked.unlaid_styles.is_empty() {
                continue;
            }
            let Some(world) = self.isolated_world(session, asked.frame_id.as_deref()).await else {
                continue;
            };
            for &backend_node_id in &asked.unlaid_styles {
                let answer = self.call_on(session, world, backend_node_id, &read, COMMAND_TIMEOUT);
                let Some(values) = answer.await else {
                    continue;
                };
                let values: Option<Vec<String>> = values
                    .as_array()
                    .map(|v| v.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
                if let Some(values) = values.filter(|v| v.len() == dom::STYLE_NAMES.len()) {
                    details.styles.insert(backend_node_id, values);
                }
            }
        }
    }

    /// `function` called on the element `backend_node_id` in the worker's
    /// `world` (given `timeout`), its answer by value; `None` when the
    /// element is gone or the call failed (then the caller falls back, a
    /// canvas to its screenshot).
    async fn call_on(
        &self,
        session: &str,
        world: i64,
        backend_node_id: i64,
        function: &str,
        timeout: Duration,
    ) -> Option<Value> {
        let resolve = ResolveNode {
            backend_node_id,
            execution_context_id: world,
        };
        let object_id = resolve.object_id(&self.cdp, session, COMMAND_TIMEOUT).await?;
        let call = CallFunctionOn {
            object_id: &object_id,
            function_declaration: function,
            arguments: Vec::new(),
            return_by_value: true,
        };
        let answer = self.cdp.send(Some(session), &call, timeout).await;
        answer
            .inspect_err(|e| tracing::debug!(error = %e, "a function on an element failed"))
            .ok()?
            .value()
    }

    /// The fonts that drew each node's text, most glyphs first.
    ///
    /// One `CSS.getPlatformFontsForNode` per node would be thousands of
    /// calls on a big page, so nodes of one computed style are asked through
    /// representatives (see [`representatives`]): when a representative was
    /// drawn in one font, so was every node of its style whose characters
    /// are all among the representative's. The others are asked themselves.
    /// Every call of a round is in flight at once.
    async fn fonts_of(&self, session: &str, nodes: &[TextNode]) -> Vec<(i64, Vec<FontUse>)> {
        if nodes.is_empty() {
            return Vec::new();
        }
        let node_ids = match self.css_ready(session, nodes).await {
            Ok(pushed) => pushed.node_ids,
            Err(e) => {
                tracing::debug!(error = %e, "fonts could not be asked for");
                return Vec::new();
            }
        };
        let gone = node_ids.iter().filter(|id| **id == 0).count();
        if gone > 0 {
            tracing::debug!(gone, "text nodes gone since the snapshot are not asked for their fonts");
        }
        let ask = |indexes: Vec<usize>| {
            let asked = indexes
                .into_iter()
                .filter_map(|i| Some((i, *node_ids.get(i).filter(|id| **id != 0)?)))
                .collect();
            platform_fonts_of(self.cdp.clone(), session.to_owned(), asked)
        };
        let representative = representatives(nodes);
        let mut reps: Vec<usize> = representative.clone();
        reps.sort_unstable();
        reps.dedup();
        let mut answers: HashMap<usize, Vec<FontUse>> = ask(reps).await.into_iter().collect();
        let rest = spread(&representative, &mut answers);
        answers.extend(ask(rest).await);
        self.css_done(session).await;
        let mut out: Vec<(i64, Vec<FontUse>)> = answers
            .into_iter()
            .map(|(i, fonts)| (nodes[i].backend_node_id, fonts))
            .collect();
        out.sort_unstable_by_key(|(node, _)| *node);
        out
    }

    /// DOM and CSS on in `session` (CSS needs DOM; enabling CSS also
    /// reports the web fonts loaded, `CSS.fontsUpdated`, which names their
    /// files), and the ids CSS knows `nodes` by, one per node: `0` for a
    /// node gone since the snapshot.
    async fn css_ready(&self, session: &str, nodes: &[TextNode]) -> Result<PushedNodes, CdpError> {
        let (cdp, session) = (&self.cdp, Some(session));
        cdp.send(session, &DomEnable {}, COMMAND_TIMEOUT).await?;
        cdp.send(session, &CssEnable {}, COMMAND_TIMEOUT).await?;
        cdp.send(session, &GetDocument { depth: 0 }, COMMAND_TIMEOUT).await?;
        let backend_node_ids: Vec<i64> = nodes.iter().map(|n| n.backend_node_id).collect();
        let push = PushNodesByBackendIdsToFrontend {
            backend_node_ids: &backend_node_ids,
        };
        let pushed = cdp.send(session, &push, COMMAND_TIMEOUT).await?;
        if pushed.node_ids.len() != nodes.len() {
            return Err(CdpError::Protocol {
                method: PushNodesByBackendIdsToFrontend::METHOD.to_owned(),
                message: format!("{} node ids for {} nodes", pushed.node_ids.len(), nodes.len()),
            });
        }
        Ok(pushed)
    }

    /// CSS and DOM off again: their events are not needed past this point.
    /// For what it is worth: a frame may be gone by now.
    async fn css_done(&self, session: &str) {
        let session = Some(session);
        let (css, dom) = (
            self.cdp.send(session, &CssDisable {}, COMMAND_TIMEOUT).await,
            self.cdp.send(session, &DomDisable {}, COMMAND_TIMEOUT).await,
        );
        if let Err(e) = css.and(dom) {
            tracing::debug!(error = %e, "CSS and DOM events could not be turned off");
        }
    }

    /// Of `candidates`, the elements that host a shadow root.
    async fn shadow_hosts(&self, session: &str, candidates: &[i64]) -> HashSet<i64> {
        let asks: Vec<_> = candidates
            .iter()
            .map(|&node| {
                let (cdp, session) = (self.cdp.clone(), session.to_owned());
                async move {
                    let describe = DescribeNode {
                        backend_node_id: Some(node),
                        object_id: None,
                        depth: 1,
                        pierce: true,
                    };
                    let described = cdp
                        .send(Some(&session), &describe, COMMAND_TIMEOUT)
                        .await
                        .inspect_err(|e| tracing::debug!(node, error = %e, "an element that may host a shadow root went unanswered; it is taken for none"))
                        .ok()?;
                    (!described.node.shadow_roots.is_empty()).then_some(node)
                }
            })
            .collect();
        let described: Vec<Option<i64>> = futures::stream::iter(asks).buffer_unordered(IN_FLIGHT).collect().await;
        described.into_iter().flatten().collect()
    }

    /// A JavaScript world of the worker's own in `frame_id` (the page's
    /// scripts cannot reach into it or change what its built-ins do), where
    /// pixels are read.
    async fn isolated_world(&self, session: &str, frame_id: Option<&str>) -> Option<i64> {
        let Some(frame_id) = frame_id else {
            tracing::debug!("a part without a frame id has no world of the worker's; its pixels are cut from the page");
            return None;
        };
        let create = CreateIsolatedWorld {
            frame_id,
            world_name: "page-import-capture",
        };
        let created = self
            .cdp
            .send(Some(session), &create, COMMAND_TIMEOUT)
            .await
            .inspect_err(|e| tracing::debug!(error = %e, "no world of the worker's in a frame; its pixels are cut from the page"))
            .ok()?;
        Some(created.execution_context_id)
    }

    /// A canvas's or video's pixels as a PNG: read from the element in the
    /// worker's own world when the page allows it (not tainted, at most
    /// [`MAX_ELEMENT_PIXELS`]); else, for an element of the page's own
    /// document (`main`), a screenshot clipped to its box, of the same
    /// frozen page (a tainted canvas, or one that reads blank as WebGL
    /// canvases do). Nothing that is not a PNG of at most
    /// [`MAX_ELEMENT_IMAGE_BYTES`] is kept.
    async fn pixels_of(&self, session: &str, world: Option<i64>, element: &PixelsOf, main: bool) -> Option<Bytes> {
        let keep = |png: Vec<u8>| {
            (png.len() <= MAX_ELEMENT_IMAGE_BYTES && crate::manifest::png_size(&png).is_some())
                .then(|| Bytes::from(png))
        };
        let read = match world {
            Some(world) => self.read_pixels(session, world, element.backend_node_id).await,
            None => None,
        };
        if let Some(data) = read {
            // Base64 is 4/3 of the bytes: anything longer is not kept.
            if data.len() / 4 * 3 > MAX_ELEMENT_IMAGE_BYTES {
                return None;
            }
            return STANDARD
                .decode(data)
                .inspect_err(|e| tracing::warn!(error = %e, "a canvas's data URL is not base64"))
                .ok()
                .and_then(keep);
        }
        if !main || !element.first_document {
            return None;
        }
        let [x, y, width, height] = element.layout_box;
        self.capture_png(x, y, width, height, 1.0, false)
            .await
            .inspect_err(|e| tracing::debug!(error = %e, "an element's screenshot failed"))
            .ok()?
            .and_then(keep)
    }

    /// The element's pixels read in the worker's `world`, as the base64 of
    /// a PNG; `None` when they cannot be read there.
    async fn read_pixels(&self, session: &str, world: i64, backend_node_id: i64) -> Option<String> {
        let read = self
            .call_on(session, world, backend_node_id, &read_pixels_function(), HEAVY_TIMEOUT)
            .await?;
        // The worker's own function's answer: a PNG's data URL, or null.
        let data = read.as_str()?.strip_prefix("data:image/png;base64,")?;
        Some(data.to_owned())
    }
}

/// The function, called on an element in the worker's world, that reads
/// its computed style: one value per [`dom::STYLE_NAMES`].
fn read_style_function() -> String {
    let names = serde_json::to_string(dom::STYLE_NAMES).expect("a list of strings serializes");
    format!("function () {{ const s = getComputedStyle(this); return {names}.map((n) => s.getPropertyValue(n)); }}")
}

/// The function, called on a canvas or video in the worker's world, that
/// reads its pixels as a PNG's data URL; null when they cannot be read
/// (tainted), are more than [`MAX_ELEMENT_PIXELS`], or are blank.
fn read_pixels_function() -> String {
    format!(
        r#"function () {{
            try {{
                let c = this;
                if (this instanceof HTMLVideoElement) {{
                    if (!this.videoWidth) return null;
                    c = document.createElement('canvas');
                    c.width = this.videoWidth;
                    c.height = this.videoHeight;
                    c.getContext('2d').drawImage(this, 0, 0);
                }}
                if (!c.width || !c.height || c.width * c.height > {MAX_ELEMENT_PIXELS}) return null;
                const url = c.toDataURL('image/png');
                const blank = document.createElement('canvas');
                blank.width = c.width;
                blank.height = c.height;
                return url === blank.toDataURL('image/png') ? null : url;
            }} catch (e) {{
                return null;
            }}
        }}"#
    )
}

/// `CSS.getPlatformFontsForNode` for each `(index, node id)`, [`IN_FLIGHT`]
/// at a time; a node Chromium does not answer for is left out.
async fn platform_fonts_of(cdp: Connection, session: String, asked: Vec<(usize, i64)>) -> Vec<(usize, Vec<FontUse>)> {
    let asks: Vec<_> = asked
        .into_iter()
        .map(|(i, node_id)| {
            let (cdp, session) = (cdp.clone(), session.clone());
            async move {
                let fonts = match cdp
                    .send(Some(&session), &GetPlatformFontsForNode { node_id }, COMMAND_TIMEOUT)
                    .await
                {
                    Ok(fonts) => fonts,
                    Err(e) => {
                        // A node removed since the snapshot answers a
                        // protocol error; its text says no font.
                        tracing::debug!(node_id, error = %e, "no platform fonts for a text node");
                        crate::metrics::dropped("platform_fonts");
                        return None;
                    }
                };
                Some((i, platform_fonts(fonts)))
            }
        })
        .collect();
    let answered: Vec<Option<(usize, Vec<FontUse>)>> =
        futures::stream::iter(asks).buffer_unordered(IN_FLIGHT).collect().await;
    answered.into_iter().flatten().collect()
}

/// `CSS.getPlatformFontsForNode`'s answer, most glyphs first.
fn platform_fonts(answer: PlatformFonts) -> Vec<FontUse> {
    let mut fonts: Vec<(u64, FontUse)> = answer
        .fonts
        .into_iter()
        .map(|f| {
            let font = FontUse {
                family: f.family_name,
                post_script_name: f.post_script_name,
                custom: f.is_custom_font,
                src: None,
            };
            (f.glyph_count, font)
        })
        .collect();
    fonts.sort_by_key(|(glyphs, _)| std::cmp::Reverse(*glyphs));
    fonts.into_iter().map(|(_, f)| f).collect()
}

/// Gives each node not asked about itself its representative's fonts, when
/// the representative was drawn in one font (see [`representatives`]); the
/// nodes that must be asked about themselves.
fn spread(representative: &[usize], answers: &mut HashMap<usize, Vec<FontUse>>) -> Vec<usize> {
    let mut rest = Vec::new();
    for (i, rep) in representative.iter().enumerate() {
        if answers.contains_key(&i) {
            continue;
        }
        match answers.get(rep) {
            Some(fonts) if fonts.len() == 1 => {
                let fonts = fonts.clone();
                answers.insert(i, fonts);
            }
            _ => rest.push(i),
        }
    }
    rest
}

/// For each node, the index of the node whose fonts stand for its own: a
/// node of the same computed style whose distinct characters include all of
/// its own (itself when there is none). Nodes are taken most characters
/// first, so a style's few long texts stand for its many short ones; a
/// style has at most [`MAX_REPRESENTATIVES`].
pub fn representatives(nodes: &[TextNode]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(nodes[i].chars.len()));
    let mut reps_of_style: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut representative: Vec<usize> = (0..nodes.len()).collect();
    for i in order {
        let Some(style) = nodes[i].style else { continue };
        let reps = reps_of_style.entry(style).or_default();
        match reps.iter().find(|&&r| is_subset(&nodes[i].chars, &nodes[r].chars)) {
            Some(&r) => representative[i] = r,
            // Beyond that many, a node is asked about itself: the search
            // stays linear in the number of nodes.
            None if reps.len() < MAX_REPRESENTATIVES => reps.push(i),
            None => {}
        }
    }
    representative
}

/// Whether sorted `a` is within sorted `b`.
fn is_subset(a: &[char], b: &[char]) -> bool {
    let mut b = b.iter();
    a.iter().all(|c| b.by_ref().any(|d| d == c))
}

/// Of the web fonts of `family`, the file that drew `text`: the same style
/// first, then the file whose `unicode-range` covers most of its
/// characters (a family split by script into files of one face), then the
/// nearest weight, as CSS font matching picks a face.
fn web_font_for<'w>(fonts: &'w [WebFont], family: &str, text: &TextNode) -> Option<&'w WebFont> {
    let number = |w: &str| match w {
        "normal" => Some(400.0),
        "bold" => Some(700.0),
        w => w.parse::<f64>().ok(),
    };
    let wanted = number(&text.font_weight).unwrap_or(400.0);
    let distance = |declared: &str| {
        let mut range = declared.split_whitespace().filter_map(number);
        let low = range.next().unwrap_or(400.0);
        let high = range.next().unwrap_or(low);
        if wanted < low {
            low - wanted
        } else {
            (wanted - high).max(0.0)
        }
    };
    let kind = |s: &str| s.split_whitespace().next().unwrap_or("normal").to_owned();
    let uncovered = |f: &WebFont| {
        text.chars
            .iter()
            .filter(|c| {
                !f.unicode_range
                    .iter()
                    .any(|(low, high)| (*low..=*high).contains(&u32::from(**c)))
            })
            .count()
    };
    let key = |f: &WebFont| {
        (
            kind(&f.style) != kind(&text.font_style),
            uncovered(f),
            distance(&f.weight),
        )
    };
    fonts.iter().filter(|f| f.family == family).min_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(ka.1.cmp(&kb.1)).then(ka.2.total_cmp(&kb.2))
    })
}

// ---- The commands of its own.

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GetPlatformFontsForNode {
    node_id: i64,
}

impl Command for GetPlatformFontsForNode {
    const METHOD: &'static str = "CSS.getPlatformFontsForNode";
    type Reply = PlatformFonts;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_state::unicode_range;

    #[test]
    fn a_web_font_s_file_is_the_face_css_matching_picks() {
        let face = |weight: &str, style: &str, range: &str, src: &str| WebFont {
            family: "Fira Sans".into(),
            weight: weight.into(),
            style: style.into(),
            unicode_range: unicode_range(range),
            src: src.into(),
        };
        let fonts = [
            face("400", "normal", "U+0-10FFFF", "regular.woff2"),
            face("500", "normal", "U+0-10FFFF", "medium.woff2"),
            face("400", "italic", "U+0-10FFFF", "italic.woff2"),
            face("100 900", "normal", "", "variable.woff2"),
            face("400", "normal", "U+0400-045F, U+0490-0491", "cyrillic.woff2"),
            face("400", "normal", "U+0000-00FF, U+0131", "latin.woff2"),
        ];
        let text = |weight: &str, style: &str, chars: &str| TextNode {
            backend_node_id: 1,
            style: None,
            chars: chars.chars().collect(),
            font_weight: weight.into(),
            font_style: style.into(),
        };
        let pick = |fonts: &[WebFont], t: TextNode| web_font_for(fonts, "Fira Sans", &t).map(|f| f.src.clone());
        let faces = &fonts[..3];
        assert_eq!(pick(faces, text("500", "normal", "a")).as_deref(), Some("medium.woff2"));
        assert_eq!(
            pick(faces, text("normal", "normal", "a")).as_deref(),
            Some("regular.woff2")
        );
        assert_eq!(
            pick(faces, text("700", "normal", "a")).as_deref(),
            Some("medium.woff2"),
            "the nearest weight"
        );
        assert_eq!(pick(faces, text("400", "italic", "a")).as_deref(), Some("italic.woff2"));
        assert_eq!(web_font_for(&fonts, "Other", &text("400", "normal", "a")), None);
        assert_eq!(
            pick(&fonts[3..4], text("650", "normal", "a")).as_deref(),
            Some("variable.woff2"),
            "a weight range"
        );
        // One face split by script: the file whose range holds the text.
        let subsets = &fonts[4..];
        assert_eq!(
            pick(subsets, text("400", "normal", "Hi")).as_deref(),
            Some("latin.woff2")
        );
        assert_eq!(
            pick(subsets, text("400", "normal", "Жы")).as_deref(),
            Some("cyrillic.woff2")
        );
        assert_eq!(unicode_range("U+4??"), vec![(0x400, 0x4FF)]);
    }

    #[test]
    fn its_commands_send_what_chromium_expects_and_read_what_it_always_answers() {
        use crate::cdp::testing::{answer, sent};
        use serde_json::json;

        assert_eq!(sent(DomEnable {}), ("DOM.enable", json!({})));
        assert_eq!(sent(CssDisable {}), ("CSS.disable", json!({})));
        assert_eq!(sent(GetDocument { depth: 0 }), ("DOM.getDocument", json!({"depth": 0})));
        assert_eq!(
            sent(PushNodesByBackendIdsToFrontend {
                backend_node_ids: &[3, 4]
            }),
            ("DOM.pushNodesByBackendIdsToFrontend", json!({"backendNodeIds": [3, 4]}))
        );
        assert_eq!(
            sent(GetPlatformFontsForNode { node_id: 9 }),
            ("CSS.getPlatformFontsForNode", json!({"nodeId": 9}))
        );
        assert_eq!(
            sent(DescribeNode {
                backend_node_id: Some(5),
                object_id: None,
                depth: 1,
                pierce: true
            }),
            (
                "DOM.describeNode",
                json!({"backendNodeId": 5, "depth": 1, "pierce": true})
            )
        );
        assert_eq!(
            sent(DescribeNode {
                backend_node_id: None,
                object_id: Some("H"),
                depth: 1,
                pierce: true
            }),
            ("DOM.describeNode", json!({"objectId": "H", "depth": 1, "pierce": true}))
        );
        assert_eq!(
            sent(CreateIsolatedWorld {
                frame_id: "F",
                world_name: "w"
            }),
            ("Page.createIsolatedWorld", json!({"frameId": "F", "worldName": "w"}))
        );
        assert_eq!(
            sent(ResolveNode {
                backend_node_id: 5,
                execution_context_id: 2
            }),
            ("DOM.resolveNode", json!({"backendNodeId": 5, "executionContextId": 2}))
        );
        assert_eq!(
            sent(CallFunctionOn {
                object_id: "O",
                function_declaration: "function () {}",
                arguments: Vec::new(),
                return_by_value: true
            }),
            (
                "Runtime.callFunctionOn",
                json!({"objectId": "O", "functionDeclaration": "function () {}", "returnByValue": true})
            )
        );
        assert_eq!(
            sent(CallFunctionOn {
                object_id: "R",
                function_declaration: "function (h) {}",
                arguments: vec![crate::commands::CallArgument { object_id: "H" }],
                return_by_value: true
            }),
            (
                "Runtime.callFunctionOn",
                json!({"objectId": "R", "functionDeclaration": "function (h) {}",
                       "arguments": [{"objectId": "H"}], "returnByValue": true})
            )
        );

        let font = json!({"familyName": "Fira Sans", "postScriptName": "FiraSans-Regular", "isCustomFont": true, "glyphCount": 3});
        let fonts = answer::<GetPlatformFontsForNode>(json!({"fonts": [font]})).unwrap();
        assert_eq!(platform_fonts(fonts)[0].post_script_name, "FiraSans-Regular");
        // No glyph count: an error, not a font that drew nothing.
        let missing = json!({"fonts": [{"familyName": "A", "postScriptName": "A", "isCustomFont": false}]});
        assert!(answer::<GetPlatformFontsForNode>(missing).is_err());
        assert!(answer::<PushNodesByBackendIdsToFrontend>(json!({})).is_err());
        assert!(answer::<CreateIsolatedWorld>(json!({})).is_err());
        assert!(answer::<ResolveNode>(json!({})).is_err());
        assert_eq!(
            answer::<CreateIsolatedWorld>(json!({"executionContextId": 4}))
                .unwrap()
                .execution_context_id,
            4
        );
        assert!(read_pixels_function().contains(&MAX_ELEMENT_PIXELS.to_string()));
    }

    #[test]
    fn a_style_s_long_texts_stand_for_its_short_ones() {
        let node = |id: i64, style: Option<usize>, text: &str| {
            let mut chars: Vec<char> = text.chars().collect();
            chars.sort_unstable();
            chars.dedup();
            TextNode {
                backend_node_id: id,
                style,
                chars,
                font_weight: "400".into(),
                font_style: "normal".into(),
            }
        };
        let nodes = [
            node(1, Some(1), "cab"),
            node(2, Some(1), "abcdef"),
            node(3, Some(1), "xyz"),
            node(4, Some(2), "ab"),
            node(5, None, "a"),
            node(6, Some(1), "fa"),
        ];
        // 2 stands for 1 and 6 (their characters are among its own); 3 has
        // characters 2 lacks; 4 is another style; 5 has none to share.
        assert_eq!(representatives(&nodes), vec![1, 1, 2, 3, 4, 1]);
        assert!(is_subset(&['a', 'c'], &['a', 'b', 'c']));
        assert!(!is_subset(&['a', 'd'], &['a', 'b', 'c']));
        assert!(is_subset(&[], &['a']));
    }
}
