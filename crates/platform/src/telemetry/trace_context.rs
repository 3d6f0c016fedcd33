//! W3C Trace Context (`traceparent`) on `tracing` spans: continue a trace a
//! caller started, carry the current one on, link to another (SPEC §9).
//!
//! The parser is W3C's, strictly: the SDK's propagator accepts ids of any
//! length up to 32 hex digits, which W3C rejects.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::Context;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `traceparent` per W3C Trace Context level 1: `00-<32 hex>-<16 hex>-<2
/// hex>`, lowercase; a later version may append `-…` fields, which are
/// ignored; version `ff` and all-zero ids are invalid.
pub fn parse(value: &str) -> Option<SpanContext> {
    let value = value.trim_matches([' ', '\t']);
    let bytes = value.as_bytes();
    if bytes.len() < 55 || !value.is_char_boundary(55) {
        return None;
    }
    let (head, rest) = value.split_at(55);
    if !head.is_ascii() {
        return None;
    }
    let version = hex_field(&head[0..2])?;
    if version == "ff" || (version == "00" && !rest.is_empty()) || (!rest.is_empty() && !rest.starts_with('-')) {
        return None;
    }
    if [2, 35, 52].iter().any(|&i| bytes[i] != b'-') {
        return None;
    }
    let trace_id = TraceId::from_hex(hex_field(&head[3..35])?).ok()?;
    let span_id = SpanId::from_hex(hex_field(&head[36..52])?).ok()?;
    let flags = u8::from_str_radix(hex_field(&head[53..55])?, 16).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    ))
}

fn hex_field(s: &str) -> Option<&str> {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        .then_some(s)
}

/// The `traceparent` of a span context (version 00).
pub fn format(cx: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        cx.trace_id(),
        cx.span_id(),
        (cx.trace_flags() & TraceFlags::SAMPLED).to_u8()
    )
}

/// Makes `span` continue the trace `traceparent` names, when it is valid;
/// otherwise the span starts (or keeps) a trace of its own. Call it before
/// the span is entered or logs anything. Returns whether it continued.
pub fn continue_from(span: &tracing::Span, traceparent: Option<&str>) -> bool {
    let Some(remote) = traceparent.and_then(parse) else {
        return false;
    };
    span.set_parent(Context::new().with_remote_span_context(remote)).is_ok()
}

/// The `traceparent` that makes a next step a child of `span`: what a queue
/// message or a callback carries on. `None` when tracing is off for it.
pub fn of(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let otel = cx.span();
    let ids = otel.span_context();
    ids.is_valid().then(|| format(ids))
}

/// Links `span` to the span `traceparent` names (a re-dispatched attempt to
/// the trace that created its import). An invalid one links nothing.
pub fn link(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(remote) = traceparent.and_then(parse) {
        span.add_link(remote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_w3c_example_is_read_and_written_back() {
        let cx = parse(VALID).unwrap();
        assert_eq!(cx.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(cx.span_id().to_string(), "00f067aa0ba902b7");
        assert!(cx.is_sampled() && cx.is_remote());
        assert_eq!(format(&cx), VALID);
    }

    #[test]
    fn what_w3c_rejects_is_rejected() {
        for bad in [
            "",
            "garbage",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_later_version_is_read_as_far_as_version_00_goes() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes-next";
        let cx = parse(later).unwrap();
        assert_eq!(format(&cx), VALID, "only the sampled flag is carried on");
    }

    proptest! {
        #[test]
        fn every_valid_traceparent_round_trips(t in 1u128.., s in 1u64.., flags: u8) {
            let value = format!("00-{t:032x}-{s:016x}-{flags:02x}");
            let cx = parse(&value).unwrap();
            prop_assert_eq!(u128::from_be_bytes(cx.trace_id().to_bytes()), t);
            prop_assert_eq!(u64::from_be_bytes(cx.span_id().to_bytes()), s);
            prop_assert_eq!(cx.is_sampled(), flags & 1 == 1);
        }

        #[test]
        fn nothing_panics_and_what_is_accepted_is_well_formed(value in "\\PC{0,80}") {
            if let Some(cx) = parse(&value) {
                let back = format(&cx);
                prop_assert_eq!(&back[3..52], &value.trim_matches([' ', '\t'])[3..52]);
            }
        }

        #[test]
        fn one_changed_character_is_either_still_valid_or_rejected(i in 0usize..55, c in any::<char>()) {
            let mut value: Vec<char> = VALID.chars().collect();
            value[i] = c;
            let value: String = value.into_iter().collect();
            let lower_hex = c.is_ascii_digit() || ('a'..='f').contains(&c);
            let accepted = parse(&value).is_some();
            match i {
                2 | 35 | 52 => prop_assert_eq!(accepted, c == '-'),
                0 | 1 => prop_assert_eq!(accepted, lower_hex && !value.starts_with("ff")),
                _ => prop_assert_eq!(accepted, lower_hex),
            }
        }
    }
}
