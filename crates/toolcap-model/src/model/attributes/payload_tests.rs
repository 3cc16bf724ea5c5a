//! Payloads written into packed lists (`payloads.rs`) and a span's input and output kept there.

use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::model::{PayloadBody, PayloadRange, PayloadState, RawEncoding, Span};

fn range_payload(field: Option<&str>, state: PayloadState, encoding: RawEncoding) -> Payload {
    Payload {
        state,
        bytes: 70_000,
        field: field.map(ArcStr::from),
        body: PayloadBody::Range(PayloadRange {
            path: Arc::new(PathBuf::from("/payload-tests/spans.jsonl.gz")),
            offset: u64::from(u32::MAX) + 12_345,
            len: 81_234,
            encoding,
            gzip: true,
        }),
    }
}

/// One of each state and encoding, with and without a field.
fn every_range_payload() -> Vec<Payload> {
    let states = [
        PayloadState::NotCaptured,
        PayloadState::Empty,
        PayloadState::Present,
        PayloadState::Truncated {
            total_bytes: u64::MAX,
        },
    ];
    let encodings = [
        RawEncoding::JsonString,
        RawEncoding::RawJson,
        RawEncoding::JsonValue,
        RawEncoding::Utf8,
    ];
    let mut payloads = Vec::new();
    for (i, state) in states.into_iter().enumerate() {
        for (j, encoding) in encodings.into_iter().enumerate() {
            let field = ((i + j) % 2 == 0).then_some("gen_ai.tool.call.arguments");
            let mut payload = range_payload(field, state, encoding);
            if let PayloadBody::Range(range) = &mut payload.body {
                range.gzip = j % 2 == 1;
            }
            payloads.push(payload);
        }
    }
    payloads
}

#[test]
fn a_payload_left_in_its_file_is_written_into_the_packed_bytes_and_reads_back_the_same() {
    let payloads = every_range_payload();
    let list: Vec<(ArcStr, AttrValue)> = payloads
        .iter()
        .map(|p| ("payload".into(), AttrValue::Payload(Arc::new(p.clone()))))
        .chain([("after".into(), AttrValue::Int(-7))])
        .collect();
    let mut packed = Attributes::from(list.clone());
    packed.pack();
    assert!(packed.is_packed());
    assert_eq!(packed.held_values().count(), 0, "nothing held in full");
    assert_eq!(packed, Attributes::from(list), "the same pairs");
    let read: Vec<Payload> = packed
        .iter()
        .filter_map(|(_, v)| match &*v {
            AttrValue::Payload(p) => Some((**p).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(read, payloads);
    assert_eq!(packed.get("after").as_deref(), Some(&AttrValue::Int(-7)));
    // Told apart without being read, as the indexer and redacted searches pass over them.
    let kinds: Vec<bool> = packed.iter().map(|(_, v)| v.is_payload()).collect();
    assert_eq!(kinds.iter().filter(|&&p| p).count(), payloads.len());
    assert_eq!(kinds.last(), Some(&false));
    // Each payload takes a few bytes, not a held value and an allocation.
    assert!(packed.own_heap_bytes() < 30 * payloads.len() as u64);
    // Unpacked again, the list holds them as values.
    let mut reopened = packed.clone();
    reopened.open_mut();
    assert_eq!(reopened, packed);
}

#[test]
fn a_payload_held_in_memory_stays_a_held_value() {
    let inline = Payload::inline("gen_ai.input.messages", "[{\"role\":\"user\"}]");
    let mut packed = Attributes::from(vec![(
        "gen_ai.input.messages".into(),
        AttrValue::Payload(Arc::new(inline.clone())),
    )]);
    packed.pack();
    assert_eq!(packed.held_values().count(), 1);
    assert!(packed.get("gen_ai.input.messages").unwrap().is_payload());
    assert_eq!(
        packed.get("gen_ai.input.messages").as_deref(),
        Some(&AttrValue::Payload(Arc::new(inline)))
    );
}

fn span_with(input: Payload, output: Payload) -> Span {
    let input = Arc::new(input);
    let mut span = Span {
        extras: crate::model::SpanExtras {
            input: crate::model::PayloadSlot::held(input.clone()),
            output: output.into(),
            ..Default::default()
        }
        .into(),
        ..Span::default()
    };
    span.attributes = Attributes::from(vec![
        (
            "gen_ai.operation.name".into(),
            AttrValue::Str("execute_tool".into()),
        ),
        (
            "gen_ai.tool.call.arguments".into(),
            AttrValue::Payload(input),
        ),
    ]);
    span
}

#[test]
fn a_spans_input_from_an_attribute_is_kept_once_in_the_packed_list() {
    let arguments = range_payload(
        Some("gen_ai.tool.call.arguments"),
        PayloadState::Present,
        RawEncoding::JsonString,
    );
    let result = Payload::inline("gen_ai.tool.call.result", "{\"ok\":true}");
    let mut span = span_with(arguments.clone(), result.clone());
    span.pack();
    assert!(span.input_slot().is_unset(), "the slot let its copy go");
    assert!(
        span.attributes
            .payload_in_role(PayloadRoles::INPUT)
            .is_some()
    );
    assert_eq!(span.attributes.payload_in_role(PayloadRoles::OUTPUT), None);
    assert_eq!(*span.input(), arguments);
    // The output is not an attribute: it stays in its slot.
    assert!(span.output_slot().holder().is_some());
    assert_eq!(*span.output(), result);
    // The attribute reads as it did, and a copy of the span reads the same.
    let attribute = span.attr("gen_ai.tool.call.arguments").unwrap();
    assert_eq!(*attribute, AttrValue::Payload(Arc::new(arguments.clone())));
    let copy = span.clone();
    assert_eq!(*copy.input(), arguments);
    // Packing again changes nothing.
    span.pack();
    assert_eq!(*span.input(), arguments);
    assert!(
        span.attributes
            .payload_in_role(PayloadRoles::INPUT)
            .is_some()
    );
    assert_eq!(span.attributes.payload_in_role(PayloadRoles::OUTPUT), None);
}

#[test]
fn a_payload_that_is_both_input_and_output_is_marked_with_both() {
    let both = Arc::new(range_payload(
        Some("gen_ai.tool.call.arguments"),
        PayloadState::Empty,
        RawEncoding::RawJson,
    ));
    let mut span = Span {
        extras: crate::model::SpanExtras {
            input: crate::model::PayloadSlot::held(both.clone()),
            output: crate::model::PayloadSlot::held(both.clone()),
            ..Default::default()
        }
        .into(),
        ..Span::default()
    };
    span.attributes = Attributes::from(vec![(
        "gen_ai.tool.call.arguments".into(),
        AttrValue::Payload(both.clone()),
    )]);
    span.pack();
    for role in [PayloadRoles::INPUT, PayloadRoles::OUTPUT] {
        assert_eq!(span.attributes.payload_in_role(role).as_ref(), Some(&*both));
    }
    assert_eq!(Arc::strong_count(&both), 1, "only the test holds it now");
    assert_eq!(*span.input(), *both);
    assert_eq!(*span.output(), *both);
}

#[test]
fn a_cut_short_packed_payload_reads_without_a_panic() {
    let mut packed = Attributes::from(vec![(
        "payload".into(),
        AttrValue::Payload(Arc::new(every_range_payload()[5].clone())),
    )]);
    packed.pack();
    let View::Packed(block) = packed.0.view() else {
        panic!("packed");
    };
    let bytes = block.bytes();
    // Whole, the bytes read back as the payload; every shorter cut reads without a panic.
    let (mut whole, _) = Reader::entries(bytes);
    whole.key();
    assert_eq!(
        *whole.value(&[]),
        AttrValue::Payload(Arc::new(every_range_payload()[5].clone()))
    );
    for cut in 0..bytes.len() {
        let (mut reader, count) = Reader::entries(&bytes[..cut]);
        for _ in 0..count {
            reader.key();
            let _ = (*reader.value(&[])).clone();
        }
    }
}

#[test]
fn an_input_taken_from_a_text_attribute_is_marked_on_that_entry() {
    let text = "{\"city\":\"Paris\"}";
    let mut arguments = range_payload(
        Some("gen_ai.tool.call.arguments"),
        PayloadState::Present,
        RawEncoding::JsonString,
    );
    arguments.bytes = text.len() as u64;
    let mut span = Span {
        extras: crate::model::SpanExtras {
            input: arguments.clone().into(),
            ..Default::default()
        }
        .into(),
        ..Span::default()
    };
    let list: Vec<(ArcStr, AttrValue)> = vec![
        (
            "gen_ai.operation.name".into(),
            AttrValue::Str("execute_tool".into()),
        ),
        (
            "gen_ai.tool.call.arguments".into(),
            AttrValue::Str(text.into()),
        ),
        (
            "gen_ai.tool.name".into(),
            AttrValue::Str("get_weather".into()),
        ),
    ];
    span.attributes = Attributes::from(list.clone());
    span.pack();
    assert!(span.input_slot().is_unset());
    assert!(
        span.attributes
            .payload_in_role(PayloadRoles::INPUT)
            .is_some()
    );
    assert_eq!(span.attributes.payload_in_role(PayloadRoles::OUTPUT), None);
    assert_eq!(*span.input(), arguments, "the range, not the text");
    assert_eq!(*span.output(), Payload::default());
    // Every entry reads as it did, by key and in order.
    assert_eq!(span.attributes, Attributes::from(list));
    assert_eq!(
        span.attr("gen_ai.tool.name").as_deref(),
        Some(&AttrValue::Str("get_weather".into()))
    );
    assert_eq!(
        span.attr("gen_ai.tool.call.arguments").unwrap().text(),
        Some(text)
    );
}
