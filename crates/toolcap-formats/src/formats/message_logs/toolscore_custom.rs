//! toolscore's custom trace format: `{"calls": […]}`, `{"tool_calls": […]}`, a bare list, or
//! one call. Per call: name from `tool` / `name` / `function`; arguments from `args` /
//! `arguments` / `input`; `result` / `output`; `timestamp` / `time` (seconds) and `duration` /
//! `elapsed` (seconds) give real start and end; `cost` (USD); `id`; a call fails when
//! `is_error` is `true` or `error` is truthy. Every other key is kept as an attribute.
//!
//! Unlike toolscore, falsy values are kept: `result: 0`, `duration: 0` and `timestamp: 0`
//! stay (toolscore's `or` fallbacks turn them into None).
//!
//! Gold files share this shape; files named `gold*`, `*.gold`, `*-gold`, `*_gold` are refused
//! here (the directory walk skips them too) and read with `crate::gold::source` instead.

use serde_json::Value;

use super::dialect::Dialect;
use crate::formats::common::jsonrec;
use crate::formats::message_logs::{
    self, Call, Clock, Conversation, Doc, Item, seconds_nanos, str_field, timestamp_nanos, truthy,
};
use crate::formats::{Format, Input};
use crate::model::{AttrValue, Batch, Payload};

pub struct ToolscoreCustom;

const KNOWN_KEYS: &[&str] = &[
    "tool",
    "name",
    "function",
    "args",
    "arguments",
    "input",
    "result",
    "output",
    "timestamp",
    "time",
    "duration",
    "elapsed",
    "cost",
    "id",
    "error",
    "is_error",
];

impl Format for ToolscoreCustom {
    fn name(&self) -> &'static str {
        "toolscore-custom"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_logs::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_logs::detect_dialect(input, Dialect::ToolscoreCustom)
    }
    fn parse(&self, input: &Input) -> Batch {
        message_logs::parse_conversation(input, self.name(), |doc| {
            (read(input, doc), "toolscore trace")
        })
    }
}

fn read(input: &Input, doc: &Doc) -> Conversation {
    let root = &doc.root;
    let mut conversation = Conversation {
        native_id: ["trace_id", "run_id", "id"]
            .iter()
            .find_map(|k| str_field(root, k).filter(|_| root.get("tool").is_none()))
            .map(str::to_owned),
        ..Default::default()
    };
    let calls: Vec<(&Value, Option<u64>)> = match root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (v, doc.line_of(i)))
            .collect(),
        other => match ["calls", "tool_calls"]
            .iter()
            .find_map(|k| other.get(*k).and_then(Value::as_array))
        {
            Some(items) => items.iter().map(|v| (v, None)).collect(),
            None => vec![(other, None)],
        },
    };
    let mut clock = Clock::for_input(input);
    for (index, (item, line)) in calls.into_iter().enumerate() {
        if let Some(call) = read_call(input, &mut conversation, &mut clock, item, index, line) {
            conversation.items.push(Item::Call(call));
        }
    }
    if clock.went_backwards {
        conversation.warn(
            input,
            None,
            "timestamps go backwards; calls are kept in file order",
        );
    }
    conversation
}

fn call_name(item: &Value) -> Option<&str> {
    str_field(item, "tool")
        .or_else(|| str_field(item, "name"))
        .or_else(|| str_field(item, "function"))
        .or_else(|| item.get("function").and_then(|f| str_field(f, "name")))
        .filter(|n| !n.is_empty())
}

/// toolscore's custom arguments: the first truthy of `args` / `arguments` / `input`; an object
/// is used as it is, anything else (a string too, JSON or not) becomes `{"value": …}`, and a
/// missing or falsy one (`[]`, `""`, `0`) is `{}`.
fn custom_args(item: &Value) -> Value {
    let found = ["args", "arguments", "input"]
        .iter()
        .find_map(|k| item.get(*k).filter(|v| truthy(v)));
    match found {
        None => Value::Object(Default::default()),
        Some(Value::Object(map)) => Value::Object(map.clone()),
        Some(other) => {
            let mut map = serde_json::Map::new();
            map.insert("value".into(), other.clone());
            Value::Object(map)
        }
    }
}

fn first<'v>(item: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().find_map(|k| item.get(*k))
}

/// An extra key's value as an attribute. Objects and lists are whatever the trace writer put
/// there, so they stay payloads (shown only when revealed) instead of attribute text.
fn extra_attr(value: &Value) -> AttrValue {
    match value {
        Value::Object(_) | Value::Array(_) => AttrValue::Payload(std::sync::Arc::new(
            Payload::inline("value", value.to_string()),
        )),
        scalar => jsonrec::attr_of(scalar),
    }
}

fn read_call(
    input: &Input,
    conversation: &mut Conversation,
    clock: &mut Clock,
    item: &Value,
    index: usize,
    line: Option<u64>,
) -> Option<Call> {
    let Some(name) = call_name(item) else {
        conversation.warn(
            input,
            line,
            format!("call {} has no tool name; skipped", index + 1),
        );
        return None;
    };
    let start = clock.tick(first(item, &["timestamp", "time"]).and_then(timestamp_nanos));
    let mut call = Call {
        name: name.to_owned(),
        call_id: item.get("id").and_then(|id| match id {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }),
        args: Some(custom_args(item)),
        args_field: "args",
        result: first(item, &["result", "output"]).cloned(),
        result_field: "result",
        start,
        end: first(item, &["duration", "elapsed"])
            .and_then(seconds_nanos)
            .map(|d| start.saturating_add(d)),
        line,
        ..Default::default()
    };
    if ["args", "arguments", "input"]
        .iter()
        .find_map(|k| item.get(*k).filter(|v| truthy(v)))
        .and_then(Value::as_str)
        .is_some_and(|text| text.trim_start().starts_with('{'))
    {
        conversation.warn(
            input,
            line,
            format!(
                "call {} ({name}): arguments are a JSON string; toolscore's custom format does not decode it, so it is read as {{\"value\": \"…\"}}",
                index + 1
            ),
        );
    }
    let error = item.get("error").filter(|e| truthy(e));
    if item.get("is_error").and_then(Value::as_bool) == Some(true) || error.is_some() {
        call.fail("error", error.map(message_logs::error_text));
    }
    if let Some(cost) = item.get("cost").and_then(Value::as_f64) {
        call.attributes
            .push(("cost_usd".into(), AttrValue::Float(cost)));
    }
    if let Some(map) = item.as_object() {
        for (key, value) in map {
            if !KNOWN_KEYS.contains(&key.as_str()) {
                call.attributes.push((key.clone(), extra_attr(value)));
            }
        }
    }
    Some(call)
}
