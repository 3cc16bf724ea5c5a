//! toolscore's OTel span-list reading: attribute maps or OTLP key/value lists, tool spans, their calls.

use super::*;

// How toolscore reads a span list's attributes and which spans it counts as tool calls is
// also what detects the span-list format, so those rules live with the format.
pub use crate::formats::otlp::span_list_reading::{is_tool_span, span_attributes};

pub(super) fn nanos(span: &Value, key: &str) -> Option<i128> {
    match span.get(key)? {
        Value::String(s) => s.trim().parse::<i128>().ok(),
        Value::Number(n) => n.as_i64().map(i128::from),
        _ => None,
    }
}

pub(super) fn otel_spans(doc: &Value) -> Vec<&Value> {
    if let Some(resources) = doc.get("resourceSpans") {
        return resources
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| {
                r.get("scopeSpans")
                    .filter(|s| truthy(s))
                    .or_else(|| r.get("instrumentationLibrarySpans"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .flat_map(|scope| {
                scope
                    .get("spans")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .collect();
    }
    match doc {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

pub(super) fn decode_json_string(value: &Value) -> Value {
    match value {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

pub(super) fn otel(doc: &Value) -> Vec<ActualCall> {
    let mut rows: Vec<(i128, usize, ActualCall)> = Vec::new();
    for (position, span) in otel_spans(doc).into_iter().enumerate() {
        if !is_tool_span(span) {
            continue;
        }
        let attributes = span_attributes(span);
        let start = nanos(span, "startTimeUnixNano");
        let end = nanos(span, "endTimeUnixNano");
        let status = span.get("status").filter(|s| truthy(s));
        let code = status.and_then(|s| s.get("code"));
        let status_failed = matches!(code, Some(Value::Number(n)) if n.as_i64() == Some(2))
            || matches!(code, Some(Value::String(s)) if ["2", "STATUS_CODE_ERROR", "ERROR"].contains(&s.as_str()));
        let message = status
            .and_then(|s| s.get("message"))
            .filter(|m| truthy(m))
            .map(error_text);
        let error_type = attributes.get("error.type").filter(|v| truthy(v));
        let args = match attributes
            .get("gen_ai.tool.call.arguments")
            .map(decode_json_string)
        {
            None | Some(Value::Null) => Args::new(),
            Some(Value::Object(map)) => map,
            Some(other) => wrap("value", other),
        };
        let name = attributes
            .get("gen_ai.tool.name")
            .map(error_text)
            .unwrap_or_default();
        let mut c = call(&name, args);
        c.failed = status_failed || error_type.is_some();
        c.error = c
            .failed
            .then(|| message.or_else(|| error_type.map(error_text)))
            .flatten();
        c.duration_s = match (start, end) {
            (Some(s), Some(e)) => Some((e - s) as f64 / 1e9),
            _ => None,
        };
        c.call_id = attributes
            .get("gen_ai.tool.call.id")
            .filter(|v| truthy(v))
            .or_else(|| attributes.get("jsonrpc.request.id"))
            .filter(|v| !v.is_null())
            .map(error_text);
        rows.push((start.unwrap_or(0), position, c));
    }
    rows.sort_by_key(|(start, position, _)| (*start, *position));
    rows.into_iter().map(|(_, _, c)| c).collect()
}
