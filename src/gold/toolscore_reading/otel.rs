//! toolscore's OTel span-list reading: attribute maps or OTLP key/value lists, tool spans, their calls.

use super::*;

/// An OTLP `AnyValue`, or a plain value as it is.
pub(super) fn any_value(value: &Value) -> Value {
    let Some(o) = value.as_object() else {
        return value.clone();
    };
    for key in ["stringValue", "boolValue", "doubleValue", "bytesValue"] {
        if let Some(v) = o.get(key) {
            return v.clone();
        }
    }
    if let Some(v) = o.get("intValue") {
        return match v {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or(Value::Null),
            other => other.clone(),
        };
    }
    if let Some(values) = o
        .get("arrayValue")
        .and_then(|a| a.get("values"))
        .and_then(Value::as_array)
    {
        return Value::Array(values.iter().map(any_value).collect());
    }
    if let Some(values) = o
        .get("kvlistValue")
        .and_then(|a| a.get("values"))
        .and_then(Value::as_array)
    {
        return Value::Object(
            values
                .iter()
                .filter_map(|kv| {
                    Some((
                        kv.get("key")?.as_str()?.to_string(),
                        any_value(kv.get("value").unwrap_or(&Value::Null)),
                    ))
                })
                .collect(),
        );
    }
    Value::Null
}

/// A span's attributes as a map, from an OTLP key/value list or a plain map.
pub fn span_attributes(span: &Value) -> Map<String, Value> {
    match span.get("attributes") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|kv| {
                Some((
                    kv.get("key")?.as_str()?.to_string(),
                    any_value(kv.get("value").unwrap_or(&Value::Null)),
                ))
            })
            .collect(),
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    }
}

/// toolscore's tool-span rule: a tool name, and `execute_tool` or an MCP `tools/call`.
pub fn is_tool_span(span: &Value) -> bool {
    let attributes = span_attributes(span);
    attributes.get("gen_ai.tool.name").is_some_and(truthy)
        && (attributes
            .get("gen_ai.operation.name")
            .and_then(Value::as_str)
            == Some("execute_tool")
            || attributes.get("mcp.method.name").and_then(Value::as_str) == Some("tools/call"))
}

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

pub(super) fn otel(doc: &Value) -> Result<Vec<ActualCall>, String> {
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
    Ok(rows.into_iter().map(|(_, _, c)| c).collect())
}
