//! The snapshot turned into the manifest's `dom`, end to end.

use super::*;
use page_import_contract::capture::{AssetKind, UsedFont};
use serde_json::json;

/// `reply` (`{"id", "result": snapshot}`) with what Chromium always sends
/// and the test does not care about filled in: each document's URL and
/// frame, node values (none), attributes (none), backend node ids (1…),
/// layout text (none), styles (none), boxes, paint orders, rects and
/// stacking contexts, text boxes (none). What the test gives is kept.
fn as_chromium_sends(mut reply: serde_json::Value) -> crate::cdp::Reply {
    let snapshot = &mut reply["result"];
    let strings = snapshot["strings"].as_array_mut().unwrap();
    strings.extend([json!("https://example.test/"), json!("FRAME")]);
    let (url, frame) = (strings.len() as i64 - 2, strings.len() as i64 - 1);
    for document in snapshot["documents"].as_array_mut().unwrap() {
        let fill = |object: &mut serde_json::Value, key: &str, value: serde_json::Value| {
            if object.get(key).is_none() {
                object[key] = value;
            }
        };
        fill(document, "documentURL", json!(url));
        fill(document, "frameId", json!(frame));
        let nodes = document["nodes"]["parentIndex"].as_array().unwrap().len();
        let tree = &mut document["nodes"];
        fill(tree, "nodeValue", json!(vec![-1; nodes]));
        fill(tree, "attributes", json!(vec![json!([]); nodes]));
        fill(tree, "backendNodeId", json!((1..=nodes as i64).collect::<Vec<_>>()));
        let layout = &mut document["layout"];
        fill(layout, "nodeIndex", json!([]));
        let objects = layout["nodeIndex"].as_array().unwrap().len();
        fill(layout, "styles", json!(vec![json!([]); objects]));
        fill(layout, "bounds", json!(vec![[0, 0, 0, 0]; objects]));
        fill(layout, "text", json!(vec![-1; objects]));
        fill(layout, "stackingContexts", json!({"index": []}));
        fill(layout, "paintOrders", json!((0..objects as i64).collect::<Vec<_>>()));
        fill(layout, "scrollRects", json!(vec![json!([]); objects]));
        fill(layout, "clientRects", json!(vec![json!([]); objects]));
        let text = &mut document["textBoxes"];
        for key in ["layoutIndex", "bounds", "start", "length"] {
            fill(text, key, json!([]));
        }
    }
    crate::cdp::Reply::from_text(reply.to_string())
}

/// A part with no answers: `owner` as (part, backend node id).
fn parsed(snapshot: Snapshot<'_>, owner: Option<(usize, i64)>) -> Part<'_> {
    Part {
        snapshot,
        owner: owner.map(|(part, backend_node_id)| Owner { part, backend_node_id }),
        details: Details::default(),
    }
}

#[test]
fn a_snapshot_becomes_a_flat_node_list_with_a_shared_style_table() {
    // strings: 0 "#document", 1 "HTML", 2 "BODY", 3 "#text", 4 "hi",
    // 5 "block", 6 "red", 7 "class", 8 "x", 9 "IFRAME", 10 "inline"
    let snapshot = json!({
        "strings": ["#document", "HTML", "BODY", "#text", "hi", "block", "red", "class", "x", "IFRAME", "inline", "hidden"],
        "documents": [
            {
                "nodes": {
                    "parentIndex": [-1, 0, 1, 2, 2],
                    "nodeType": [9, 1, 1, 3, 1],
                    "nodeName": [0, 1, 2, 3, 9],
                    "nodeValue": [-1, -1, -1, 4, -1],
                    // An empty value (`hidden`) is -1.
                    "attributes": [[], [], [7, 8, 11, -1], [], []],
                    "contentDocumentIndex": {"index": [4], "value": [1]}
                },
                "layout": {
                    "nodeIndex": [1, 2, 3, 3],
                    "styles": [[5, 6], [5, 6], [10, 6], [10, 6]],
                    "bounds": [[0, 0, 800, 600], [8, 8, 784, 20], [8, 8, 12, 18], [0, 0, 1, 1]],
                    "paintOrders": [0, 1, 2, 3]
                },
                "textBoxes": {"layoutIndex": [2], "bounds": [[8, 8, 12, 18]], "start": [0], "length": [2]}
            },
            {
                "nodes": {"parentIndex": [-1], "nodeType": [9], "nodeName": [0], "nodeValue": [-1], "attributes": [[]]},
                "layout": {"nodeIndex": [], "styles": [], "bounds": [], "paintOrders": []},
                "textBoxes": {"layoutIndex": [], "bounds": [], "start": [], "length": []}
            }
        ]
    });
    let reply = as_chromium_sends(json!({"id": 1, "result": snapshot}));
    let parts = [parsed(Snapshot::parse(&reply).unwrap(), None)];
    let dom = dom(&parts, &[], Vec::new());
    assert_eq!(dom.nodes.len(), 6);
    assert_eq!(dom.styles, vec![vec!["block", "red"], vec!["inline", "red"]]);
    let body = &dom.nodes[2];
    assert_eq!((body.parent, body.name), (Some(1), "BODY"));
    assert_eq!(body.attributes, vec![["class", "x"], ["hidden", ""]]);
    assert_eq!(body.style, Some(0));
    let text = &dom.nodes[3];
    assert_eq!(text.value, Some("hi"));
    assert_eq!(text.style, Some(1));
    assert_eq!(
        text.layout_box,
        Some([8.0, 8.0, 12.0, 18.0]),
        "the first layout object is the box"
    );
    assert_eq!(text.text_boxes, vec![[8.0, 8.0, 12.0, 18.0, 0.0, 2.0]]);
    let frame_document = &dom.nodes[5];
    assert_eq!((frame_document.document, frame_document.parent), (1, Some(4)));
    let json = serde_json::to_value(&dom).unwrap();
    assert_eq!(json["nodes"][3]["box"], json!([8.0, 8.0, 12.0, 18.0]));
    assert!(json["nodes"][0].get("style").is_none());
}

/// A node's computed style list for `STYLE_NAMES`: `default` for every
/// property but the ones given.
fn style_of(default: i32, given: &[(&str, i32)]) -> Vec<i32> {
    STYLE_NAMES
        .iter()
        .map(|n| given.iter().find(|(name, _)| name == n).map_or(default, |(_, v)| *v))
        .collect()
}

#[test]
fn each_part_s_styles_are_read_with_its_own_strings() {
    let part = |strings: serde_json::Value, name: i32| {
        let snapshot = json!({"id": 1, "result": {"strings": strings, "documents": [{
            "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 1], "nodeName": [0, name], "backendNodeId": [1, 42]},
            "layout": {"nodeIndex": [1], "styles": [[2]], "bounds": [[0, 0, 10, 10]]},
            "textBoxes": {}
        }]}});
        as_chromium_sends(snapshot)
    };
    // The same string indexes, different strings: the page's IFRAME is
    // red, the frame's DIV blue.
    let (page, frame) = (
        part(json!(["#document", "IFRAME", "red"]), 1),
        part(json!(["#document", "DIV", "blue"]), 1),
    );
    let parts = [
        parsed(Snapshot::parse(&page).unwrap(), None),
        parsed(Snapshot::parse(&frame).unwrap(), Some((0, 42))),
    ];
    let dom = dom(&parts, &[], Vec::new());
    let style_of = |name: &str| {
        let node = dom.nodes.iter().find(|n| n.name == name).unwrap();
        dom.styles[node.style.unwrap()].clone()
    };
    assert_eq!((style_of("IFRAME"), style_of("DIV")), (vec!["red"], vec!["blue"]));
}

#[test]
fn what_spec_11_adds_comes_from_the_snapshot_and_the_answers() {
    let strings = json!([
        "#document",
        "HTML",
        "BODY",
        "#text",
        "hello world",
        "HELLO WORLD",
        "SPAN",
        "::before",
        "before",
        "Since ",
        "v",
        "DIV",
        "closed",
        "B",
        "shadow",
        "INPUT",
        "type",
        "password",
        "hunter2",
        "checkbox",
        "on",
        "SELECT",
        "OPTION",
        "IMG",
        "http://x/b.png",
        "auto",
        "visible",
        "0px",
        "CANVAS",
        "user-agent",
        "http://x/",
        "FRAME1",
        "open",
        "I",
        "text",
        "typed",
        "1.0",
        "my-card"
    ]);
    // 0 #document, 1 HTML, 2 BODY, 3 #text "hello world", 4 SPAN, 5 ::before,
    // 6 #text "1.0", 7 DIV (closed host), 8 B (closed tree), 9 #text "shadow",
    // 10 INPUT password (closed tree), 11 INPUT checkbox, 12 SELECT, 13 OPTION,
    // 14 IMG, 15 DIV scroller, 16 DIV plain, 17 CANVAS, 18 DIV (UA tree: dropped),
    // 19 #text below it (dropped), 20 MY-CARD (closed tree: a host of its own, nested),
    // 21 B (closed tree of 20), 22 INPUT text
    let auto = style_of(27, &[("overflow-x", 25), ("overflow-y", 25)]);
    let visible = style_of(27, &[("overflow-x", 26), ("overflow-y", 26)]);
    let plain = style_of(27, &[]);
    let snapshot = json!({"id": 1, "result": {"strings": strings, "documents": [{
        "documentURL": 30, "frameId": 31, "scrollOffsetX": 0, "scrollOffsetY": 40,
        "contentWidth": 800, "contentHeight": 3000,
        "nodes": {
            "parentIndex": [-1, 0, 1, 2, 2, 4, 4, 2, 7, 8, 7, 2, 2, 12, 2, 2, 2, 2, 11, 18, 7, 20, 2],
            "nodeType": [9, 1, 1, 3, 1, 1, 3, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1],
            "nodeName": [0, 1, 2, 3, 6, 7, 3, 11, 13, 3, 15, 15, 21, 22, 23, 11, 11, 28, 11, 3, 37, 13, 15],
            "nodeValue": [-1, -1, -1, 4, -1, -1, 36, -1, -1, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, 10, -1, -1, -1],
            "attributes": [[], [], [], [], [], [], [], [], [], [], [16, 17], [16, 19], [], [], [], [], [], [], [], [], [], [], [16, 34]],
            "backendNodeId": [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122],
            "shadowRootType": {"index": [8, 9, 10, 18, 19, 20, 21], "value": [12, 12, 12, 29, 29, 12, 12]},
            "pseudoType": {"index": [5], "value": [8]},
            "inputValue": {"index": [10, 11, 22], "value": [18, 20, 35]},
            "inputChecked": {"index": [11]},
            "optionSelected": {"index": [13]},
            "currentSourceURL": {"index": [14], "value": [24]}
        },
        "layout": {
            "nodeIndex": [1, 2, 3, 5, 5, 6, 7, 9, 15, 16, 17, 13, 21],
            "styles": [plain, plain, plain, plain, [], plain, plain, plain, auto, visible, plain, [], plain],
            "bounds": [[0, 0, 800, 3000], [8, 8, 784, 100], [8, 8, 90, 18], [8, 30, 40, 18], [8, 30, 40, 18],
                       [48, 30, 20, 18], [8, 60, 100, 20], [8, 60, 50, 18], [8, 100, 100, 50], [8, 160, 100, 50],
                       [8, 220, 50, 50], [0, 0, 0, 0], [8, 300, 10, 10]],
            "text": [-1, -1, 5, -1, 9, -1, -1, 14, -1, -1, -1, -1, -1],
            "stackingContexts": {"index": [0, 2, 6]},
            "paintOrders": [0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            "scrollRects": [[0, 0, 800, 3000], [0, 0, 784, 100], [], [0, 0, 40, 18], [], [], [0, 0, 100, 20], [],
                            [0, 40, 100, 400], [0, 0, 100, 400], [0, 0, 50, 50], [0, 0, 0, 0], [0, 0, 10, 10]],
            "clientRects": [[0, 0, 800, 3000], [0, 0, 784, 100], [], [0, 0, 40, 18], [], [], [0, 0, 100, 20], [],
                            [0, 0, 100, 50], [0, 0, 100, 50], [0, 0, 50, 50], [0, 0, 0, 0], [0, 0, 10, 10]]
        },
        "textBoxes": {"layoutIndex": [2, 4, 7], "bounds": [[8, 8, 90, 18], [8, 30, 40, 18], [8, 60, 50, 18]],
                      "start": [0, 0, 0], "length": [11, 6, 6]}
    }]}});
    let reply = as_chromium_sends(snapshot);
    let snapshot = Snapshot::parse(&reply).unwrap();

    let questions = snapshot.questions();
    let asked: Vec<(i64, String)> = questions
        .text_nodes
        .iter()
        .map(|t| (t.backend_node_id, t.chars.iter().collect()))
        .collect();
    assert_eq!(
        asked,
        [(103, "DEHLORW"), (105, "Scein"), (109, "adhosw")].map(|(id, chars)| (id, chars.to_owned())),
        "laid-out text and generated text, by their distinct characters"
    );
    assert_eq!(
        questions.text_nodes[0].style, questions.text_nodes[2].style,
        "the same computed style"
    );
    assert_eq!(
        questions.pixels,
        vec![PixelsOf {
            backend_node_id: 117,
            kind: AssetKind::Canvas,
            layout_box: [8.0, 220.0, 50.0, 50.0],
            first_document: true
        }]
    );
    assert_eq!(questions.frame_id.as_deref(), Some("FRAME1"));
    assert_eq!(
        questions.maybe_hosts,
        vec![120],
        "an element that can host, in a closed tree, with closed-tree children (B cannot host)"
    );

    let details = Details {
        fonts: HashMap::from([(103, vec![1, 0])]),
        pixels: HashMap::from([(117, 0)]),
        hosts: HashSet::from([120]),
        styles: HashMap::new(),
    };
    let parts = [Part {
        snapshot,
        owner: None,
        details,
    }];
    let fonts = vec![UsedFont {
        family: "Liberation Sans".into(),
        post_script_name: "LiberationSans".into(),
        custom: false,
        asset: None,
    }];
    let dom = dom(&parts, &["k/canvas.png".to_owned()], fonts.clone());
    let named = |name: &'static str| dom.nodes.iter().filter(move |n| n.name == name);
    let by_backend = |i: usize| &dom.nodes[i];

    assert_eq!(dom.fonts, fonts);
    assert_eq!(
        dom.documents.len(),
        1,
        "{:?}",
        dom.documents.iter().map(|d| d.url).collect::<Vec<_>>()
    );
    let page = &dom.documents[0];
    assert_eq!(
        (page.index, page.frame_id, page.url, page.owner),
        (0, "FRAME1", "http://x/", None)
    );
    assert_eq!((page.scroll, page.content_size), ([0.0, 40.0], [800.0, 3000.0]));

    // Laid-out text, its fonts, text boxes into it.
    let hello = by_backend(3);
    assert_eq!(
        (hello.value, hello.text.as_deref()),
        (Some("hello world"), Some("HELLO WORLD"))
    );
    assert_eq!(hello.fonts, vec![1, 0]);
    assert_eq!(hello.text_boxes, vec![[8.0, 8.0, 90.0, 18.0, 0.0, 11.0]]);

    // A pseudo-element: its own node, its box the first layout object's,
    // its text the generated one, no empty style entry.
    let before = named("::before").next().unwrap();
    assert_eq!(
        (before.pseudo, before.text.as_deref(), before.parent),
        (Some("before"), Some("Since "), Some(4))
    );
    assert_eq!(before.layout_box, Some([8.0, 30.0, 40.0, 18.0]));
    assert!(
        dom.styles.iter().all(|s| s.len() == STYLE_NAMES.len()),
        "no empty style entry"
    );
    assert_eq!(
        named("OPTION").next().unwrap().style,
        None,
        "an empty style list is no style"
    );

    // Shadow roots: one per host, between the host and its children;
    // the nested host (asked of Chromium) gets its own; the user-agent
    // tree is left out.
    let roots: Vec<_> = dom.nodes.iter().filter(|n| n.node_type == 11).collect();
    assert_eq!(roots.len(), 2, "{roots:?}");
    let host = named("DIV").next().unwrap();
    assert_eq!(
        (roots[0].parent, roots[0].shadow_root, roots[0].name),
        (Some(host.id), Some("closed"), "#shadow-root")
    );
    assert!(
        roots[0].id < dom.nodes.iter().find(|n| n.name == "B").unwrap().id,
        "the root comes before its children"
    );
    let nested_host = named("my-card").next().unwrap();
    assert_eq!(
        (nested_host.parent, roots[1].parent),
        (Some(roots[0].id), Some(nested_host.id))
    );
    assert_eq!(named("B").next_back().unwrap().parent, Some(roots[1].id));
    let ua_text = dom.nodes.iter().find(|n| n.value == Some("v")).unwrap();
    let ua_div = &dom.nodes[ua_text.parent.unwrap()];
    assert_eq!(
        (ua_div.name, dom.nodes[ua_div.parent.unwrap()].name),
        ("DIV", "INPUT"),
        "a user-agent tree gets no shadow root node"
    );

    // Form state: a password shows as bullets, a checkbox's value is no text.
    let inputs: Vec<_> = named("INPUT").collect();
    assert_eq!(inputs[0].input_value.as_deref(), Some("•••••••"));
    assert_eq!((inputs[1].input_value.as_deref(), inputs[1].checked), (None, true));
    assert_eq!(inputs[2].input_value.as_deref(), Some("typed"));
    assert!(named("OPTION").next().unwrap().selected);
    assert_eq!(named("IMG").next().unwrap().current_src, Some("http://x/b.png"));

    // Scroll containers and stacking contexts.
    let divs: Vec<_> = named("DIV").filter(|d| d.parent != Some(inputs[1].id)).collect();
    assert_eq!(
        divs[1].scroll,
        Some([0.0, 40.0, 100.0, 400.0]),
        "overflow: auto, taller content"
    );
    assert_eq!(divs[2].scroll, None, "overflow: visible does not scroll");
    assert_eq!(by_backend(1).scroll, None, "content that fits");
    assert!(by_backend(1).stacking_context && host.stacking_context);
    assert!(!by_backend(3).stacking_context, "text starts none");

    // Canvas pixels by key.
    assert_eq!(named("CANVAS").next().unwrap().image.as_deref(), Some("k/canvas.png"));

    let json = serde_json::to_value(&dom).unwrap();
    let plain_div = &json["nodes"][divs[2].id];
    for key in [
        "pseudo",
        "text",
        "shadowRoot",
        "inputValue",
        "checked",
        "selected",
        "currentSrc",
        "image",
        "scroll",
        "stackingContext",
        "fonts",
    ] {
        assert!(plain_div.get(key).is_none(), "{key} on a plain div: {plain_div}");
    }
}

#[test]
fn a_frame_snapshotted_in_its_own_session_hangs_below_its_iframe_in_page_coordinates() {
    // strings: 0 "#document", 1 "IFRAME", 2 "#text", 3 "in frame", 4 "0px", 5 "4px", 6 "6px"
    let strings = json!(["#document", "IFRAME", "#text", "in frame", "0px", "4px", "6px"]);
    let style = |name_value: &[(&str, i32)]| -> Vec<i32> {
        STYLE_NAMES
            .iter()
            .map(|n| name_value.iter().find(|(name, _)| name == n).map_or(4, |(_, v)| *v))
            .collect()
    };
    let iframe_style = style(&[
        ("border-left-width", 5),
        ("border-top-width", 5),
        ("padding-left", 6),
        ("padding-top", 6),
    ]);
    let page = json!({"id": 1, "result": {"strings": strings, "documents": [{
        "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 1], "nodeName": [0, 1], "nodeValue": [-1, -1],
                  "backendNodeId": [1, 42]},
        "layout": {"nodeIndex": [1], "styles": [iframe_style], "bounds": [[100, 150, 520, 320]], "paintOrders": [1]},
        "textBoxes": {}
    }]}});
    let frame = json!({"id": 2, "result": {"strings": strings, "documents": [{
        "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 3], "nodeName": [0, 2], "nodeValue": [-1, 3],
                  "backendNodeId": [1, 2]},
        "layout": {"nodeIndex": [1], "styles": [style(&[])], "bounds": [[0, 0, 50, 18]], "paintOrders": [1]},
        "textBoxes": {"layoutIndex": [0], "bounds": [[0, 0, 50, 18]], "start": [0], "length": [8]}
    }]}});
    let (page, frame) = (as_chromium_sends(page), as_chromium_sends(frame));
    // The page, and the frame whose owner has this backend node id.
    let parts = |owner: i64| {
        [
            parsed(Snapshot::parse(&page).unwrap(), None),
            parsed(Snapshot::parse(&frame).unwrap(), Some((0, owner))),
        ]
    };
    let stitched = parts(42);
    let dom = dom(&stitched, &[], Vec::new());
    assert_eq!(dom.nodes.len(), 4);
    let (frame_document, text) = (&dom.nodes[2], &dom.nodes[3]);
    assert_eq!(
        (frame_document.parent, frame_document.document),
        (Some(1), 1),
        "below the IFRAME"
    );
    assert_eq!((text.parent, text.document, text.value), (Some(2), 1, Some("in frame")));
    // The iframe's content starts at its box + 4px border + 6px padding.
    assert_eq!(text.layout_box, Some([110.0, 160.0, 50.0, 18.0]));
    assert_eq!(text.text_boxes, vec![[110.0, 160.0, 50.0, 18.0, 0.0, 8.0]]);
    assert_eq!(dom.styles.len(), 2, "one style table for both parts");

    // A frame that shows Chromium's error page is left empty.
    let error = json!({"id": 3, "result": {"strings": ["#document", "chrome-error://chromewebdata/", "#text", "This site can't be reached"],
        "documents": [{"documentURL": 1,
            "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 3], "nodeName": [0, 2], "nodeValue": [-1, 3]},
            "layout": {}, "textBoxes": {}}]}});
    let error = as_chromium_sends(error);
    let with_error = [
        parsed(Snapshot::parse(&page).unwrap(), None),
        parsed(Snapshot::parse(&error).unwrap(), Some((0, 42))),
    ];
    assert_eq!(
        super::dom(&with_error, &[], Vec::new()).nodes.len(),
        2,
        "only the page's nodes"
    );

    // A frame whose snapshot did not parse is an empty part: the parts
    // after it keep their numbers and their places.
    let after_empty = [
        parsed(Snapshot::parse(&page).unwrap(), None),
        parsed(Snapshot::default(), Some((0, 42))),
        parsed(Snapshot::parse(&frame).unwrap(), Some((0, 42))),
    ];
    let dom = super::dom(&after_empty, &[], Vec::new());
    assert_eq!(dom.nodes.len(), 4);
    assert_eq!(dom.nodes[2].parent, Some(1));
    assert_eq!(dom.nodes[3].layout_box, Some([110.0, 160.0, 50.0, 18.0]));

    // A frame whose owner is not found cannot be placed: left empty too.
    let orphan = parts(7);
    assert_eq!(
        super::dom(&orphan, &[], Vec::new()).nodes.len(),
        2,
        "only the page's nodes"
    );
}
