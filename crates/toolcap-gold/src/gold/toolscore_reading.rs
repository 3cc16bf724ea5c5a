//! How tool-scorer 1.10.0 itself would read a trace file: its auto-detection and its seven
//! adapters, restated from their documented behaviour (docs/toolscore-rules.md lists each rule).
//!
//! This is not how toolcap reads traces — the formats in `crate::formats` do that, and they
//! deliberately differ where toolscore's rule is a known pitfall (an Anthropic log wrapped in
//! `messages` read as OpenAI, a message list starting with a user turn read as nothing, MCP
//! protocol traffic counted as tool calls, …). `check --explain` and `check --json`'s
//! `toolscore_reading` use this to show what toolscore would have scored instead, so a user
//! comparing both tools can see why the numbers differ.

use serde_json::Value;

use super::{ActualCall, Args};
use crate::Error;
use crate::formats::message_logs::truthy;

mod otel;
pub use otel::*;

mod mcp;
use mcp::*;

/// toolscore's `--format` values.
pub const FORMATS: &[&str] = &[
    "auto",
    "openai",
    "anthropic",
    "gemini",
    "mcp",
    "langchain",
    "otel",
    "custom",
];

/// What toolscore would do with one trace document.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolscoreReading {
    /// The adapter toolscore uses (`custom`, `openai`, …).
    pub adapter: &'static str,
    /// Why auto-detection chose it (or "--format X").
    pub why: String,
    pub calls: Vec<ActualCall>,
    /// toolscore refuses the document (its adapter raises); the message says why.
    pub refused: Option<String>,
}

/// Reads `doc` the way `toolscore eval --format FORMAT` would.
pub fn read(doc: &Value, format: &str) -> ToolscoreReading {
    let (adapter, why) = if format == "auto" {
        detect(doc)
    } else {
        (
            FORMATS
                .iter()
                .copied()
                .find(|f| *f == format)
                .unwrap_or("custom"),
            format!("--format {format}"),
        )
    };
    let result = match adapter {
        "mcp" => mcp(doc),
        "otel" => Ok(otel(doc)),
        "gemini" => Ok(gemini(doc)),
        "openai" => openai(doc),
        "anthropic" => anthropic(doc),
        "langchain" => langchain(doc),
        _ => custom(doc),
    };
    let (calls, refused) = match result {
        Ok(calls) => (calls, None),
        Err(why) => (Vec::new(), Some(why.to_string())),
    };
    ToolscoreReading {
        adapter,
        why,
        calls,
        refused,
    }
}

fn is_jsonrpc_list(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_array)
        .and_then(|items| items.first())
        .is_some_and(|first| first.get("jsonrpc").and_then(Value::as_str) == Some("2.0"))
}

/// toolscore's auto-detection order (first match wins; only the first list item is examined
/// for message lists, and LangChain is never chosen).
pub fn detect(doc: &Value) -> (&'static str, String) {
    let object = doc.as_object();
    if object.is_some_and(|o| o.contains_key("jsonrpc")) {
        return ("mcp", "an object with `jsonrpc`".into());
    }
    if let Some(o) = object {
        if o.get("format").and_then(Value::as_str) == Some("mcp") {
            return ("mcp", "`format: mcp`".into());
        }
        if is_jsonrpc_list(o.get("messages")) {
            return (
                "mcp",
                "`messages` starts with a JSON-RPC 2.0 message".into(),
            );
        }
    }
    if is_jsonrpc_list(Some(doc)) {
        return ("mcp", "a list starting with a JSON-RPC 2.0 message".into());
    }
    if object.is_some_and(|o| o.contains_key("resourceSpans")) {
        return ("otel", "an object with `resourceSpans`".into());
    }
    if let Some(items) = doc.as_array()
        && items.iter().take(50).any(is_tool_span)
    {
        return ("otel", "a list holding an OTel tool span".into());
    }
    if let Some(o) = object {
        if o.contains_key("candidates") {
            return ("gemini", "an object with `candidates`".into());
        }
        if o.contains_key("messages") || o.contains_key("choices") {
            return ("openai", "an object with `messages` or `choices`".into());
        }
    }
    if let Some(first) = doc.as_array().and_then(|items| items.first())
        && first.is_object()
    {
        if let Some(parts) = first.get("parts").and_then(Value::as_array)
            && parts.iter().any(|p| p.get("functionCall").is_some())
        {
            return (
                "gemini",
                "the first item has `parts` with a `functionCall`".into(),
            );
        }
        if first.get("role").and_then(Value::as_str) == Some("assistant")
            && first.get("content").is_some_and(Value::is_array)
        {
            return (
                "anthropic",
                "the first item is an assistant message with list content".into(),
            );
        }
        if first.get("function_call").is_some() || first.get("tool_calls").is_some() {
            return (
                "openai",
                "the first item has `function_call` or `tool_calls`".into(),
            );
        }
    }
    ("custom", "nothing else matched".into())
}

/// The first of `keys` whose value is truthy (Python's `a or b or c`).
fn first_truthy<'v>(item: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().filter_map(|k| item.get(*k)).find(|v| truthy(v))
}

fn wrap(key: &str, value: Value) -> Args {
    let mut args = Args::new();
    args.insert(key.into(), value);
    args
}

fn object_or_empty(value: Option<&Value>) -> Args {
    value
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn call(name: &str, args: Args) -> ActualCall {
    ActualCall::new(name, args)
}

fn error_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn custom(doc: &Value) -> Result<Vec<ActualCall>, Error> {
    let items: Vec<&Value> = match doc {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) => {
            let list = o.get("calls").or_else(|| o.get("tool_calls"));
            match list {
                Some(v) if truthy(v) => match v {
                    Value::Array(items) => items.iter().collect(),
                    _ => return Err(Error::CustomNotACallList),
                },
                _ if o.contains_key("tool") || o.contains_key("name") => vec![doc],
                _ => Vec::new(),
            }
        }
        _ => return Err(Error::NotDictOrList),
    };
    let mut calls = Vec::new();
    for item in items.into_iter().filter(|i| i.is_object()) {
        let Some(name) = first_truthy(item, &["tool", "name", "function"]) else {
            continue;
        };
        let name = match name {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let args = match first_truthy(item, &["args", "arguments", "input"]) {
            None => Args::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(other) => wrap("value", other.clone()),
        };
        let mut c = call(&name, args);
        let error = item.get("error").filter(|e| truthy(e));
        c.failed = item.get("is_error") == Some(&Value::Bool(true)) || error.is_some();
        c.error = error.map(error_text);
        c.duration_s = first_truthy(item, &["duration", "elapsed"]).and_then(Value::as_f64);
        c.cost = item.get("cost").and_then(Value::as_f64);
        c.call_id = item.get("id").filter(|v| !v.is_null()).map(error_text);
        calls.push(c);
    }
    Ok(calls)
}

/// OpenAI arguments: a JSON string is decoded, one that is not JSON becomes `{"raw": …}`.
fn decoded_or_raw(value: Option<&Value>, default: &str) -> Args {
    let value = value.cloned().unwrap_or(Value::String(default.into()));
    match value {
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => Args::new(),
            Err(_) => wrap("raw", Value::String(text)),
        },
        Value::Object(map) => map,
        _ => Args::new(),
    }
}

fn openai(doc: &Value) -> Result<Vec<ActualCall>, Error> {
    let messages: Vec<Value> = match doc {
        Value::Array(items) => items.clone(),
        Value::Object(o) => {
            let list = o.get("messages").or_else(|| o.get("choices"));
            match list {
                None => Vec::new(),
                Some(Value::Array(items)) => {
                    if items.first().is_some_and(|f| f.get("message").is_some()) {
                        items
                            .iter()
                            .map(|c| c.get("message").cloned().unwrap_or(Value::Null))
                            .collect()
                    } else {
                        items.clone()
                    }
                }
                Some(_) => return Err(Error::OpenAiNotAMessageList),
            }
        }
        _ => return Err(Error::NotDictOrList),
    };
    let mut calls = Vec::new();
    for message in messages.iter().filter(|m| m.is_object()) {
        if let Some(function) = message.get("function_call") {
            let name = function.get("name").and_then(Value::as_str).unwrap_or("");
            calls.push(call(name, decoded_or_raw(function.get("arguments"), "{}")));
        }
        if let Some(tool_calls) = message.get("tool_calls").and_then(Value::as_array) {
            for tc in tool_calls {
                if tc.get("type").and_then(Value::as_str) != Some("function") {
                    continue;
                }
                let function = tc.get("function").cloned().unwrap_or(Value::Null);
                let name = function.get("name").and_then(Value::as_str).unwrap_or("");
                let mut c = call(name, decoded_or_raw(function.get("arguments"), "{}"));
                c.call_id = tc.get("id").and_then(Value::as_str).map(str::to_string);
                calls.push(c);
            }
        }
    }
    Ok(calls)
}

fn anthropic(doc: &Value) -> Result<Vec<ActualCall>, Error> {
    let messages = match doc {
        Value::Object(o) => o
            .get("messages")
            .or_else(|| o.get("content"))
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
        other => other.clone(),
    };
    let Value::Array(messages) = messages else {
        return Err(Error::AnthropicNotAMessageList);
    };
    let mut calls = Vec::new();
    for message in &messages {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        for block in message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            let name = block.get("name").and_then(Value::as_str).unwrap_or("");
            let mut c = call(name, object_or_empty(block.get("input")));
            c.call_id = block.get("id").and_then(Value::as_str).map(str::to_string);
            calls.push(c);
        }
    }
    Ok(calls)
}

fn gemini_function_call(function: &Value) -> ActualCall {
    let name = function.get("name").and_then(Value::as_str).unwrap_or("");
    let args = match function.get("args").or_else(|| function.get("arguments")) {
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => Args::new(),
            Err(_) => wrap("raw", Value::String(text.clone())),
        },
        other => object_or_empty(other),
    };
    let mut c = call(name, args);
    c.call_id = function
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string);
    c
}

fn gemini_parts(parts: Option<&Value>, out: &mut Vec<ActualCall>) {
    for part in parts.and_then(Value::as_array).into_iter().flatten() {
        if let Some(f) = part
            .get("functionCall")
            .or_else(|| part.get("function_call"))
        {
            out.push(gemini_function_call(f));
        }
    }
}

fn gemini_content(content: &Value, out: &mut Vec<ActualCall>) {
    match content {
        Value::Object(o) if o.contains_key("parts") => gemini_parts(o.get("parts"), out),
        Value::Array(_) => gemini_parts(Some(content), out),
        _ => {}
    }
}

fn gemini(doc: &Value) -> Vec<ActualCall> {
    let mut calls = Vec::new();
    match doc {
        Value::Object(o) => {
            if let Some(candidates) = o.get("candidates") {
                for candidate in candidates.as_array().into_iter().flatten() {
                    if let Some(content) = candidate.get("content") {
                        gemini_content(content, &mut calls);
                    }
                }
            } else if let Some(content) = o.get("content") {
                gemini_content(content, &mut calls);
            } else if o.contains_key("parts") {
                gemini_parts(o.get("parts"), &mut calls);
            }
        }
        Value::Array(items) => {
            for item in items.iter().filter(|i| i.is_object()) {
                if let Some(content) = item.get("content") {
                    gemini_content(content, &mut calls);
                } else if item.get("parts").is_some() {
                    gemini_parts(item.get("parts"), &mut calls);
                } else if item.get("functionCall").is_some() || item.get("function_call").is_some()
                {
                    // toolscore hands the whole item, not the function call, to its reader.
                    calls.push(gemini_function_call(item));
                }
            }
        }
        _ => {}
    }
    calls
}

/// LangChain's string inputs: JSON is decoded, anything else becomes `{"input": …}`.
fn langchain_input(value: Option<&Value>) -> Args {
    match value {
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => Args::new(),
            Err(_) => wrap("input", Value::String(text.clone())),
        },
        other => object_or_empty(other),
    }
}

fn langchain(doc: &Value) -> Result<Vec<ActualCall>, Error> {
    let Value::Array(items) = doc else {
        return Err(Error::LangChainNotAList);
    };
    let mut calls = Vec::new();
    for item in items.iter().filter(|i| i.is_object()) {
        let (name, args, id) = if let Some(tool) = item.get("tool") {
            (
                error_text(tool),
                langchain_input(item.get("tool_input")),
                item.get("tool_call_id"),
            )
        } else if let Some(name) = item.get("name") {
            (
                error_text(name),
                object_or_empty(item.get("args")),
                item.get("id"),
            )
        } else if let Some(action) = item.get("action") {
            (
                error_text(action),
                langchain_input(item.get("action_input")),
                None,
            )
        } else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let mut c = call(&name, args);
        c.call_id = id.filter(|v| !v.is_null()).map(error_text);
        calls.push(c);
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(doc: Value) -> (&'static str, Vec<String>) {
        let r = read(&doc, "auto");
        (r.adapter, r.calls.into_iter().map(|c| c.name).collect())
    }

    #[test]
    fn auto_detection_reproduces_the_pitfalls() {
        let anthropic_in_messages = json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "name": "a", "input": {}}]}]});
        assert_eq!(names(anthropic_in_messages), ("openai", vec![]));
        let user_first = json!([{"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a"}}]}]);
        assert_eq!(names(user_first), ("custom", vec![]));
        assert_eq!(names(json!([])), ("custom", vec![]));
    }

    #[test]
    fn mcp_counts_protocol_traffic_and_orphans() {
        let session = json!([
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "id": 0, "result": {}},
            {"jsonrpc": "2.0", "id": 9, "result": {"_tool_name": "late"}},
            {"jsonrpc": "2.0", "id": 8, "result": {}}]);
        assert_eq!(
            names(session),
            (
                "mcp",
                vec!["initialize".into(), "late".into(), "unknown".into()]
            )
        );
    }
}
