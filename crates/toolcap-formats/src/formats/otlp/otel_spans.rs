//! A JSON array of OpenTelemetry span objects without the OTLP export envelope, as toolscore
//! reads it: each span's `attributes` is a plain map (`{"gen_ai.tool.name": "search"}`) or an
//! OTLP key/value list. Ids may be OTLP's (`traceId`, `spanId`, `parentSpanId`) or the Python
//! SDK's `to_json()` ones (`context.trace_id`, `parent_id`, `0x…`); spans without ids get ids
//! made up from their position (warned). The spans are rewritten as one OTLP/JSON request and
//! built by the OTLP code, so they classify and fail exactly like exported spans.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::formats::{Format, Input};
use crate::model::{Batch, Problem};

pub struct OtelSpanList;

const NAME: &str = "otel-span-list";

/// How many items detection examines.
const DETECT_ITEMS: usize = 50;

fn looks_like_span(item: &Value) -> bool {
    item.get("name").is_some_and(Value::is_string)
        && matches!(
            item.get("attributes"),
            Some(Value::Object(_) | Value::Array(_))
        )
}

fn has_span_fields(item: &Value) -> bool {
    [
        "traceId",
        "spanId",
        "startTimeUnixNano",
        "context",
        "status",
        "parentSpanId",
    ]
    .iter()
    .any(|k| item.get(*k).is_some())
}

impl Format for OtelSpanList {
    fn name(&self) -> &'static str {
        NAME
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let items = input.head_json()?.as_array()?;
        let sample = &items[..items.len().min(DETECT_ITEMS)];
        (!sample.is_empty()
            && sample.iter().all(looks_like_span)
            && sample
                .iter()
                .any(|s| has_span_fields(s) || super::span_list_reading::is_tool_span(s)))
        .then(|| "a JSON array of span objects (`name` + `attributes`), no OTLP envelope".into())
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let doc: Value = match serde_json::from_slice(input.bytes) {
            Ok(doc) => doc,
            Err(e) => {
                batch
                    .problems
                    .push(Problem::error(input.origin, None, format!("not JSON: {e}")));
                return batch;
            }
        };
        let spans = doc.as_array().map(Vec::as_slice).unwrap_or_default();
        let mut made_up = 0usize;
        let fallback_trace = {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            input.origin.to_string().hash(&mut hasher);
            format!("{:016x}{:016x}", hasher.finish(), spans.len())
        };
        let mut converted = Vec::with_capacity(spans.len());
        for (index, span) in spans.iter().enumerate() {
            if !span.is_object() {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!("item {} is not a span object; skipped", index + 1),
                ));
                continue;
            }
            let (otlp, guessed) = to_otlp(span, index, &fallback_trace);
            made_up += usize::from(guessed);
            converted.push(otlp);
        }
        if made_up > 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!("{made_up} span(s) had no trace or span id; ids made up from their position (one trace)"),
            ));
        }
        let request = json!({"resourceSpans": [{"scopeSpans": [{"spans": converted}]}]});
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        if let Err(why) = super::build_json_in_memory(input, NAME, &bytes, &mut batch) {
            batch
                .problems
                .push(Problem::error(input.origin, None, why.to_string()));
        }
        batch
    }
}

fn hex_id(value: Option<&Value>) -> Option<String> {
    let text = value?.as_str()?.trim();
    let text = text.strip_prefix("0x").unwrap_or(text);
    (!text.is_empty()).then(|| text.to_ascii_lowercase())
}

fn any_value(value: &Value) -> Option<Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Number(n) => json!({"doubleValue": n.as_f64()}),
        Value::String(s) => json!({"stringValue": s}),
        Value::Array(items) => {
            json!({"arrayValue": {"values": items.iter().filter_map(any_value).collect::<Vec<_>>()}})
        }
        // Attribute values are scalars or lists in OTel; a map is kept as its JSON text.
        Value::Object(_) => json!({"stringValue": value.to_string()}),
    })
}

fn status_of(span: &Value) -> Option<Value> {
    let status = span.get("status")?;
    let code = status.get("code").or_else(|| status.get("status_code"));
    let code = match code {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => match s.as_str() {
            "2" | "ERROR" | "STATUS_CODE_ERROR" => 2,
            "1" | "OK" | "STATUS_CODE_OK" => 1,
            _ => 0,
        },
        _ => 0,
    };
    let message = status
        .get("message")
        .or_else(|| status.get("description"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Some(json!({"code": code, "message": message}))
}

/// One span as an OTLP/JSON span; `true` when its ids had to be made up.
fn to_otlp(span: &Value, index: usize, fallback_trace: &str) -> (Value, bool) {
    let context = span.get("context");
    let trace_id =
        hex_id(span.get("traceId")).or_else(|| hex_id(context.and_then(|c| c.get("trace_id"))));
    let span_id =
        hex_id(span.get("spanId")).or_else(|| hex_id(context.and_then(|c| c.get("span_id"))));
    let guessed = trace_id.is_none() || span_id.is_none();
    let mut out = Map::new();
    out.insert(
        "traceId".into(),
        json!(trace_id.unwrap_or_else(|| fallback_trace.to_string())),
    );
    out.insert(
        "spanId".into(),
        json!(span_id.unwrap_or_else(|| format!("{:016x}", index + 1))),
    );
    if let Some(parent) = hex_id(span.get("parentSpanId")).or_else(|| hex_id(span.get("parent_id")))
    {
        out.insert("parentSpanId".into(), json!(parent));
    }
    out.insert(
        "name".into(),
        span.get("name").cloned().unwrap_or(json!("")),
    );
    let start = span.get("startTimeUnixNano").cloned().unwrap_or(json!("0"));
    let end = span
        .get("endTimeUnixNano")
        .cloned()
        .unwrap_or_else(|| start.clone());
    out.insert("startTimeUnixNano".into(), start);
    out.insert("endTimeUnixNano".into(), end);
    let attributes = match span.get("attributes") {
        Some(Value::Array(list)) => Value::Array(list.clone()),
        Some(Value::Object(map)) => Value::Array(
            map.iter()
                .filter_map(|(k, v)| Some(json!({"key": k, "value": any_value(v)?})))
                .collect(),
        ),
        _ => Value::Array(Vec::new()),
    };
    out.insert("attributes".into(), attributes);
    if let Some(events) = span.get("events").filter(|e| e.is_array()) {
        out.insert("events".into(), events.clone());
    }
    if let Some(status) = status_of(span) {
        out.insert("status".into(), status);
    }
    (Value::Object(out), guessed)
}
