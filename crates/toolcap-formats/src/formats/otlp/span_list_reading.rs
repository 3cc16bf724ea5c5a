//! toolscore's rules for reading a JSON list of OTel spans: attributes from an OTLP key/value
//! list or a plain map, and which spans are tool calls. The span-list format's detection uses
//! them, and so does `check --explain`'s toolscore reading (`gold::toolscore_reading`).

use serde_json::{Map, Value};

use crate::formats::message_logs::truthy;

/// An OTLP `AnyValue`, or a plain value as it is.
fn any_value(value: &Value) -> Value {
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
