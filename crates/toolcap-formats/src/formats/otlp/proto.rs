//! Conversions between opentelemetry-proto's owned request and the borrowed [`wire`] model:
//! protobuf requests are built into spans through the wire model, and OTLP/JSON decoded by the
//! wire model is handed to the receiver as an owned request.

use std::borrow::Cow;

use base64::Engine as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue as PAnyValue, ArrayValue as PArrayValue, InstrumentationScope, KeyValue as PKeyValue,
    KeyValueList, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource as PResource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans as PResourceSpans, ScopeSpans as PScopeSpans, Span as PSpan, Status as PStatus,
    span::Event as PEvent,
};

use super::wire::{self, Leniency, Scalar, Text};

/// Views an owned request through the wire model (strings are borrowed, ids become hex).
pub fn request_to_wire(request: &ExportTraceServiceRequest) -> wire::Request<'_> {
    wire::Request {
        resource_spans: request
            .resource_spans
            .iter()
            .map(|rs| wire::ResourceSpans {
                resource: rs.resource.as_ref().map(|r| wire::Resource {
                    attributes: kvs_to_wire(&r.attributes),
                }),
                scope_spans: rs
                    .scope_spans
                    .iter()
                    .map(|ss| wire::ScopeSpans {
                        scope: ss.scope.as_ref().map(|s| wire::Scope {
                            name: Some(Cow::Borrowed(s.name.as_str())),
                            version: Some(Cow::Borrowed(s.version.as_str())),
                        }),
                        spans: ss.spans.iter().map(span_to_wire).collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

pub fn span_to_wire(span: &PSpan) -> wire::Span<'_> {
    let id = |bytes: &[u8]| (!bytes.is_empty()).then(|| Cow::Owned(hex::encode(bytes)));
    wire::Span {
        trace_id: id(&span.trace_id),
        span_id: id(&span.span_id),
        parent_span_id: id(&span.parent_span_id),
        name: Cow::Borrowed(span.name.as_str()),
        kind: Some(Scalar::Int(i64::from(span.kind))),
        start_time_unix_nano: Some(Scalar::UInt(span.start_time_unix_nano)),
        end_time_unix_nano: Some(Scalar::UInt(span.end_time_unix_nano)),
        attributes: kvs_to_wire(&span.attributes),
        events: span
            .events
            .iter()
            .map(|e| wire::Event {
                time_unix_nano: Some(Scalar::UInt(e.time_unix_nano)),
                name: Cow::Borrowed(e.name.as_str()),
                attributes: kvs_to_wire(&e.attributes),
            })
            .collect(),
        status: span.status.as_ref().map(|s| wire::Status {
            code: Some(Scalar::Int(i64::from(s.code))),
            message: Some(Cow::Borrowed(s.message.as_str())),
        }),
    }
}

fn kvs_to_wire(kvs: &[PKeyValue]) -> Vec<wire::KeyValue<'_>> {
    kvs.iter()
        .map(|kv| wire::KeyValue {
            key: Cow::Borrowed(kv.key.as_str()),
            value: kv.value.as_ref().map(value_to_wire),
        })
        .collect()
}

fn value_to_wire(value: &PAnyValue) -> wire::AnyValue<'_> {
    let mut out = wire::AnyValue::default();
    match &value.value {
        // String tables (profiles signal) do not occur in trace requests.
        None | Some(any_value::Value::StringValueStrindex(_)) => {}
        Some(any_value::Value::StringValue(s)) => {
            out.string_value = Some(Text::Plain(Cow::Borrowed(s.as_str())))
        }
        Some(any_value::Value::BoolValue(b)) => out.bool_value = Some(*b),
        Some(any_value::Value::IntValue(i)) => out.int_value = Some(Scalar::Int(*i)),
        Some(any_value::Value::DoubleValue(d)) => out.double_value = Some(Scalar::Float(*d)),
        Some(any_value::Value::BytesValue(b)) => {
            out.bytes_value = Some(Box::new(Cow::Owned(
                base64::engine::general_purpose::STANDARD.encode(b),
            )))
        }
        Some(any_value::Value::ArrayValue(a)) => {
            out.array_value = Some(Box::new(wire::ArrayValue {
                values: a.values.iter().map(value_to_wire).collect(),
            }))
        }
        Some(any_value::Value::KvlistValue(kv)) => {
            out.kvlist_value = Some(Box::new(wire::KvList {
                values: kvs_to_wire(&kv.values),
            }))
        }
    }
    out
}

/// Builds the owned request from the wire model. Trace and span ids that do not decode become
/// empty, so validation later rejects their spans as "missing"; parents follow the builder's rule
/// ([`wire::parent_id_bytes`]), so the receiver refuses exactly the spans a file refuses.
pub fn request_from_wire(
    request: &wire::Request,
    leniencies: &mut Vec<Leniency>,
) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: request
            .resource_spans
            .iter()
            .map(|rs| PResourceSpans {
                resource: rs.resource.as_ref().map(|r| PResource {
                    attributes: kvs_from_wire(&r.attributes),
                    ..Default::default()
                }),
                scope_spans: rs
                    .scope_spans
                    .iter()
                    .map(|ss| PScopeSpans {
                        scope: ss.scope.as_ref().map(|s| InstrumentationScope {
                            name: s.name.as_deref().unwrap_or_default().to_owned(),
                            version: s.version.as_deref().unwrap_or_default().to_owned(),
                            ..Default::default()
                        }),
                        spans: ss
                            .spans
                            .iter()
                            .map(|s| span_from_wire(s, leniencies))
                            .collect(),
                        schema_url: String::new(),
                    })
                    .collect(),
                schema_url: String::new(),
            })
            .collect(),
    }
}

fn span_from_wire(span: &wire::Span, leniencies: &mut Vec<Leniency>) -> PSpan {
    let mut id = |text: &Option<Cow<str>>| {
        text.as_deref()
            .and_then(|t| wire::id_bytes(t, leniencies))
            .map(|bytes| bytes.to_vec())
            .unwrap_or_default()
    };
    let trace_id = id(&span.trace_id);
    let span_id = id(&span.span_id);
    let parent_span_id = wire::parent_id_bytes(span.parent_span_id.as_deref(), leniencies).to_vec();
    let time = |s: &Option<Scalar>| s.as_ref().and_then(Scalar::as_u64).unwrap_or(0);
    PSpan {
        trace_id,
        span_id,
        parent_span_id,
        name: span.name.to_string(),
        kind: wire::enum_value(span.kind.as_ref(), wire::SPAN_KIND_NAMES, leniencies),
        start_time_unix_nano: time(&span.start_time_unix_nano),
        end_time_unix_nano: time(&span.end_time_unix_nano),
        attributes: kvs_from_wire(&span.attributes),
        events: span
            .events
            .iter()
            .map(|e| PEvent {
                time_unix_nano: time(&e.time_unix_nano),
                name: e.name.to_string(),
                attributes: kvs_from_wire(&e.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        status: span.status.as_ref().map(|s| PStatus {
            code: wire::enum_value(s.code.as_ref(), wire::STATUS_CODE_NAMES, leniencies),
            message: s.message.as_deref().unwrap_or_default().to_owned(),
        }),
        ..Default::default()
    }
}

fn kvs_from_wire(kvs: &[wire::KeyValue]) -> Vec<PKeyValue> {
    kvs.iter()
        .map(|kv| PKeyValue {
            key: kv.key.to_string(),
            value: kv.value.as_ref().map(value_from_wire),
            ..Default::default()
        })
        .collect()
}

fn value_from_wire(value: &wire::AnyValue) -> PAnyValue {
    let inner = if let Some(s) = &value.string_value {
        Some(any_value::Value::StringValue(s.decoded().into_owned()))
    } else if let Some(b) = value.bool_value {
        Some(any_value::Value::BoolValue(b))
    } else if let Some(i) = value.int_value.as_ref().and_then(Scalar::as_i64) {
        Some(any_value::Value::IntValue(i))
    } else if let Some(d) = value.double_value.as_ref().and_then(Scalar::as_f64) {
        Some(any_value::Value::DoubleValue(d))
    } else if let Some(b) = &value.bytes_value {
        base64::engine::general_purpose::STANDARD
            .decode(b.as_bytes())
            .ok()
            .map(any_value::Value::BytesValue)
    } else if let Some(a) = &value.array_value {
        Some(any_value::Value::ArrayValue(PArrayValue {
            values: a.values.iter().map(value_from_wire).collect(),
        }))
    } else {
        value.kvlist_value.as_ref().map(|kv| {
            any_value::Value::KvlistValue(KeyValueList {
                values: kvs_from_wire(&kv.values),
            })
        })
    };
    PAnyValue { value: inner }
}
