//! The transcoded spool line is the owned path's line, byte for byte: on random requests with
//! every field populated sometimes (and some spans refused), and on hand-made wire shapes
//! (unknown fields, fields given twice, scalars in another wire type) where it either matches
//! or leaves the body to the owned path.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use proptest::prelude::*;
use prost::Message as _;

use super::super::CheckedRequest;

/// The transcoder's line (if it took the body) and the owned path's line.
fn both_lines(body: &[u8]) -> (Option<Vec<u8>>, Vec<u8>) {
    let checked = CheckedRequest::decode(body, true).expect("the borrowed decoder reads it");
    let owned = serde_json::to_vec(&checked.to_owned_request()).unwrap();
    (checked.transcoded_spool_line(), owned)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Strings with quotes, backslashes, control characters, DEL and non-ASCII.
fn tricky_string() -> impl Strategy<Value = String> {
    "[a\"\\\\/\u{0}-\u{1f}\u{7f}é\u{2028}😀 ]{0,6}"
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(-0.0),
        Just(1e300),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MIN_POSITIVE),
        any::<f64>(),
    ]
}

fn any_value() -> impl Strategy<Value = AnyValue> {
    use any_value::Value;
    let leaf = prop_oneof![
        Just(None),
        tricky_string().prop_map(|s| Some(Value::StringValue(s))),
        any::<bool>().prop_map(|b| Some(Value::BoolValue(b))),
        prop_oneof![Just(i64::MIN), Just(-1), any::<i64>()].prop_map(|i| Some(Value::IntValue(i))),
        double().prop_map(|d| Some(Value::DoubleValue(d))),
        prop::collection::vec(any::<u8>(), 0..7).prop_map(|b| Some(Value::BytesValue(b))),
        any::<i32>().prop_map(|i| Some(Value::StringValueStrindex(i))),
    ]
    .prop_map(|value| AnyValue { value });
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|values| AnyValue {
                value: Some(any_value::Value::ArrayValue(ArrayValue { values })),
            }),
            prop::collection::vec((tricky_string(), inner), 0..4).prop_map(|pairs| AnyValue {
                value: Some(any_value::Value::KvlistValue(KeyValueList {
                    values: pairs
                        .into_iter()
                        .map(|(key, value)| KeyValue {
                            key,
                            value: Some(value),
                            key_strindex: 0,
                        })
                        .collect(),
                })),
            }),
        ]
    })
}

fn key_values() -> impl Strategy<Value = Vec<KeyValue>> {
    let key_value = (
        tricky_string(),
        prop::option::weighted(0.9, any_value()),
        prop_oneof![3 => Just(0), 1 => any::<i32>()],
    )
        .prop_map(|(key, value, key_strindex)| KeyValue {
            key,
            value,
            key_strindex,
        });
    prop::collection::vec(key_value, 0..3)
}

/// Ids the judge accepts mostly, and some it refuses (empty, short, all zero).
fn id(len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        12 => prop::collection::vec(1u8..=255, len..=len),
        1 => Just(Vec::new()),
        1 => prop::collection::vec(any::<u8>(), 1..4),
        1 => Just(vec![0; len]),
    ]
}

fn parent_id() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![Just(Vec::new()), prop::collection::vec(1u8..=255, 8..=8)]
}

fn event() -> impl Strategy<Value = Event> {
    (any::<u64>(), tricky_string(), key_values(), any::<u32>()).prop_map(
        |(time_unix_nano, name, attributes, dropped_attributes_count)| Event {
            time_unix_nano,
            name,
            attributes,
            dropped_attributes_count,
        },
    )
}

fn link() -> impl Strategy<Value = Link> {
    (
        id(16),
        id(8),
        tricky_string(),
        key_values(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(
            |(trace_id, span_id, trace_state, attributes, dropped_attributes_count, flags)| Link {
                trace_id,
                span_id,
                trace_state,
                attributes,
                dropped_attributes_count,
                flags,
            },
        )
}

fn span() -> impl Strategy<Value = Span> {
    let ids = (id(16), id(8), parent_id(), tricky_string(), any::<u32>());
    let shape = (tricky_string(), any::<i32>(), any::<u64>(), any::<u64>());
    let children = (
        key_values(),
        prop::collection::vec(event(), 0..3),
        prop::collection::vec(link(), 0..3),
        (any::<u32>(), any::<u32>(), any::<u32>()),
        prop::option::of((tricky_string(), any::<i32>())),
    );
    (ids, shape, children).prop_map(
        |(
            (trace_id, span_id, parent_span_id, trace_state, flags),
            (name, kind, start_time_unix_nano, end_time_unix_nano),
            (attributes, events, links, dropped, status),
        )| Span {
            trace_id,
            span_id,
            trace_state,
            parent_span_id,
            flags,
            name,
            kind,
            start_time_unix_nano,
            end_time_unix_nano,
            attributes,
            dropped_attributes_count: dropped.0,
            events,
            dropped_events_count: dropped.1,
            links,
            dropped_links_count: dropped.2,
            status: status.map(|(message, code)| Status { message, code }),
        },
    )
}

fn scope_spans() -> impl Strategy<Value = ScopeSpans> {
    let scope = (tricky_string(), tricky_string(), key_values(), any::<u32>()).prop_map(
        |(name, version, attributes, dropped_attributes_count)| InstrumentationScope {
            name,
            version,
            attributes,
            dropped_attributes_count,
        },
    );
    (
        prop::option::of(scope),
        prop::collection::vec(span(), 0..4),
        tricky_string(),
    )
        .prop_map(|(scope, spans, schema_url)| ScopeSpans {
            scope,
            spans,
            schema_url,
        })
}

fn resource_spans() -> impl Strategy<Value = ResourceSpans> {
    let strings = || prop::collection::vec(tricky_string(), 0..3);
    let entity_ref = (tricky_string(), tricky_string(), strings(), strings()).prop_map(
        |(schema_url, r#type, id_keys, description_keys)| EntityRef {
            schema_url,
            r#type,
            id_keys,
            description_keys,
        },
    );
    let resource = (
        key_values(),
        any::<u32>(),
        prop::collection::vec(entity_ref, 0..2),
    )
        .prop_map(
            |(attributes, dropped_attributes_count, entity_refs)| Resource {
                attributes,
                dropped_attributes_count,
                entity_refs,
            },
        );
    (
        prop::option::of(resource),
        prop::collection::vec(scope_spans(), 0..3),
        tricky_string(),
    )
        .prop_map(|(resource, scope_spans, schema_url)| ResourceSpans {
            resource,
            scope_spans,
            schema_url,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn a_random_request_is_spooled_as_the_owned_path_spools_it(
        resource_spans in prop::collection::vec(resource_spans(), 0..5),
    ) {
        let body = ExportTraceServiceRequest { resource_spans }.encode_to_vec();
        let (transcoded, owned) = both_lines(&body);
        let transcoded = transcoded.expect("a body prost encoded is transcoded");
        prop_assert_eq!(text(&transcoded), text(&owned));
        prop_assert_eq!(transcoded, owned);
    }
}

// Hand-made wire shapes.

fn key(number: u32, wire_type: u64, out: &mut Vec<u8>) {
    prost::encoding::encode_varint((u64::from(number) << 3) | wire_type, out);
}

fn length_delimited(number: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    key(number, 2, &mut out);
    prost::encoding::encode_varint(body.len() as u64, &mut out);
    out.extend_from_slice(body);
    out
}

fn varint(number: u32, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    key(number, 0, &mut out);
    prost::encoding::encode_varint(value, &mut out);
    out
}

fn fixed64(number: u32, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    key(number, 1, &mut out);
    out.extend_from_slice(&value.to_le_bytes());
    out
}

fn fixed32(number: u32, value: u32) -> Vec<u8> {
    let mut out = Vec::new();
    key(number, 5, &mut out);
    out.extend_from_slice(&value.to_le_bytes());
    out
}

/// Every unknown wire type the reader skips, under a field number no message uses.
fn unknown_fields() -> Vec<u8> {
    [
        varint(99, 7),
        fixed64(100, 8),
        length_delimited(101, b"\xff\xfe not UTF-8"),
        fixed32(102, 9),
    ]
    .concat()
}

fn good_span(name: &str) -> Span {
    Span {
        trace_id: vec![7; 16],
        span_id: vec![9; 8],
        name: name.into(),
        kind: 3,
        start_time_unix_nano: 1,
        end_time_unix_nano: 2,
        ..Default::default()
    }
}

/// A request of one resource with one scope holding spans whose encodings are given.
fn request_with_spans(spans: &[Vec<u8>]) -> Vec<u8> {
    let spans: Vec<u8> = spans.iter().flat_map(|s| length_delimited(2, s)).collect();
    length_delimited(1, &length_delimited(2, &spans))
}

fn assert_transcoded_as_owned(body: &[u8]) -> String {
    let (transcoded, owned) = both_lines(body);
    let transcoded = transcoded.expect("the transcoder takes this body");
    assert_eq!(text(&transcoded), text(&owned));
    text(&transcoded)
}

fn assert_left_to_the_owned_path(body: &[u8]) {
    let (transcoded, owned) = both_lines(body);
    assert_eq!(transcoded.map(|line| text(&line)), None);
    let checked = CheckedRequest::decode(body, true).unwrap();
    assert_eq!(text(&checked.spool_line().unwrap()), text(&owned));
}

#[test]
fn unknown_fields_at_every_level_are_dropped() {
    let any = [unknown_fields(), length_delimited(1, b"v")].concat();
    let key_value = [
        length_delimited(1, b"k"),
        length_delimited(2, &any),
        unknown_fields(),
    ]
    .concat();
    let event = [length_delimited(3, &key_value), unknown_fields()].concat();
    let status = [unknown_fields(), varint(3, 2)].concat();
    let span = [
        good_span("s").encode_to_vec(),
        unknown_fields(),
        length_delimited(11, &event),
        length_delimited(15, &status),
    ]
    .concat();
    let scope = [length_delimited(1, b"lib"), unknown_fields()].concat();
    let scope_spans = [
        unknown_fields(),
        length_delimited(1, &scope),
        length_delimited(2, &span),
    ]
    .concat();
    let resource = [length_delimited(1, &key_value), unknown_fields()].concat();
    let resource_spans = [
        length_delimited(1, &resource),
        unknown_fields(),
        length_delimited(2, &scope_spans),
    ]
    .concat();
    let body = [unknown_fields(), length_delimited(1, &resource_spans)].concat();
    let line = assert_transcoded_as_owned(&body);
    assert!(line.contains(r#""stringValue":"v""#), "{line}");
}

#[test]
fn a_singular_field_given_twice_keeps_the_last() {
    let span = [
        good_span("first").encode_to_vec(),
        length_delimited(5, b"second"),
        length_delimited(3, b"a=1"),
        length_delimited(3, b"b=2"),
        varint(6, 1),
        fixed32(16, 0x301),
        fixed32(16, 0x101),
        varint(10, u64::MAX),
    ]
    .concat();
    let line = assert_transcoded_as_owned(&request_with_spans(&[span]));
    assert!(line.contains(r#""name":"second""#), "{line}");
    assert!(line.contains(r#""traceState":"b=2""#), "{line}");

    // A oneof: the last member wins, whatever came before it.
    let value = [
        length_delimited(1, b"text"),
        varint(3, u64::MAX),
        varint(2, 1),
    ]
    .concat();
    let attribute = [length_delimited(1, b"k"), length_delimited(2, &value)].concat();
    let span = [
        good_span("s").encode_to_vec(),
        length_delimited(9, &attribute),
    ]
    .concat();
    let line = assert_transcoded_as_owned(&request_with_spans(&[span]));
    assert!(line.contains(r#""value":{"boolValue":true}"#), "{line}");
}

#[test]
fn a_singular_message_given_twice_is_left_to_the_owned_path() {
    let status = |code: u64| length_delimited(15, &varint(3, code));
    let span = [good_span("s").encode_to_vec(), status(1), status(2)].concat();
    assert_left_to_the_owned_path(&request_with_spans(&[span]));

    // Two array values in a row merge in prost; a string between them does not.
    let array = |item: &[u8]| length_delimited(5, &length_delimited(1, &length_delimited(1, item)));
    let merged = [array(b"a"), array(b"b")].concat();
    let replaced = [array(b"a"), length_delimited(1, b"x"), array(b"b")].concat();
    let with_value = |value: &[u8]| {
        let attribute = [length_delimited(1, b"k"), length_delimited(2, value)].concat();
        [
            good_span("s").encode_to_vec(),
            length_delimited(9, &attribute),
        ]
        .concat()
    };
    assert_left_to_the_owned_path(&request_with_spans(&[with_value(&merged)]));
    let line = assert_transcoded_as_owned(&request_with_spans(&[with_value(&replaced)]));
    assert!(
        line.contains(r#"{"arrayValue":{"values":[{"stringValue":"b"}]}}"#),
        "{line}"
    );
}

#[test]
fn a_body_prost_refuses_is_left_to_the_owned_path() {
    // A packed (length-delimited) count, as repeated scalars may be sent: prost refuses it for
    // a singular field, so the owned path converts the borrowed model.
    let packed_count = [good_span("s").encode_to_vec(), length_delimited(10, &[3])].concat();
    assert_left_to_the_owned_path(&request_with_spans(&[packed_count]));
    let fixed_kind = [good_span("s").encode_to_vec(), fixed32(6, 2)].concat();
    assert_left_to_the_owned_path(&request_with_spans(&[fixed_kind]));
    // Trace state is skipped by the borrowed decoder; prost refuses a string that is not UTF-8.
    let bad_text = [good_span("s").encode_to_vec(), length_delimited(3, b"\xff")].concat();
    assert_left_to_the_owned_path(&request_with_spans(&[bad_text]));
    // The same in a link of a span that is refused, so never spooled: prost still refuses.
    let refused = Span {
        span_id: vec![1, 2],
        ..good_span("refused")
    };
    let bad_link = length_delimited(13, &length_delimited(3, b"\xff"));
    let refused_with_bad_link = [refused.encode_to_vec(), bad_link].concat();
    let spans = [good_span("s").encode_to_vec(), refused_with_bad_link];
    assert_left_to_the_owned_path(&request_with_spans(&spans));
    // A key past 32 bits: the borrowed reader skips the field, prost refuses the key.
    let mut huge_number = good_span("s").encode_to_vec();
    prost::encoding::encode_varint(1 << 34, &mut huge_number);
    huge_number.push(0);
    assert_left_to_the_owned_path(&request_with_spans(&[huge_number]));
}

#[test]
fn refused_spans_are_skipped_and_emptied_scopes_and_resources_dropped() {
    let refused = Span {
        span_id: vec![1, 2],
        ..good_span("refused")
    };
    let kept_scope = ScopeSpans {
        spans: vec![refused.clone(), good_span("kept"), refused.clone()],
        ..Default::default()
    };
    let emptied_scope = ScopeSpans {
        spans: vec![refused.clone()],
        ..Default::default()
    };
    let request = ExportTraceServiceRequest {
        resource_spans: vec![
            ResourceSpans {
                scope_spans: vec![emptied_scope.clone(), kept_scope, ScopeSpans::default()],
                ..Default::default()
            },
            ResourceSpans {
                scope_spans: vec![emptied_scope],
                ..Default::default()
            },
            ResourceSpans::default(),
        ],
    };
    let line = assert_transcoded_as_owned(&request.encode_to_vec());
    assert_eq!(line.matches(r#""scope":"#).count(), 1, "{line}");
    assert_eq!(line.matches(r#""resource":"#).count(), 1, "{line}");
    assert!(!line.contains("refused"), "{line}");
}
