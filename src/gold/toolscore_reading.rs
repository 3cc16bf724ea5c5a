//! How tool-scorer 1.10.0 itself would read a trace file: its auto-detection and its seven
//! adapters, restated from their documented behaviour (docs/toolscore-rules.md lists each rule).
//!
//! This is not how toolcap reads traces — the formats in `crate::formats` do that, and they
//! deliberately differ where toolscore's rule is a known pitfall (an Anthropic log wrapped in
//! `messages` read as OpenAI, a message list starting with a user turn read as nothing, MCP
//! protocol traffic counted as tool calls, …). `check --explain` and `check --json`'s
//! `toolscore_reading` use this to show what toolscore would have scored instead, so a user
//! comparing both tools can see why the numbers differ.

use serde_json::{Map, Value};

use super::{ActualCall, Args};

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
        "otel" => otel(doc),
        "gemini" => Ok(gemini(doc)),
        "openai" => openai(doc),
        "anthropic" => anthropic(doc),
        "langchain" => langchain(doc),
        _ => custom(doc),
    };
    let (calls, refused) = match result {
        Ok(calls) => (calls, None),
        Err(why) => (Vec::new(), Some(why)),
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

/// Python truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
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

fn custom(doc: &Value) -> Result<Vec<ActualCall>, String> {
    let items: Vec<&Value> = match doc {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) => {
            let list = o.get("calls").or_else(|| o.get("tool_calls"));
            match list {
                Some(v) if truthy(v) => match v {
                    Value::Array(items) => items.iter().collect(),
                    _ => return Err("Expected list of calls in custom trace".into()),
                },
                _ if o.contains_key("tool") || o.contains_key("name") => vec![doc],
                _ => Vec::new(),
            }
        }
        _ => return Err("Trace data must be dict or list".into()),
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

fn openai(doc: &Value) -> Result<Vec<ActualCall>, String> {
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
                Some(_) => return Err("Expected list of messages in OpenAI trace".into()),
            }
        }
        _ => return Err("Trace data must be dict or list".into()),
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

fn anthropic(doc: &Value) -> Result<Vec<ActualCall>, String> {
    let messages = match doc {
        Value::Object(o) => o
            .get("messages")
            .or_else(|| o.get("content"))
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
        other => other.clone(),
    };
    let Value::Array(messages) = messages else {
        return Err("Expected list of messages in Anthropic trace".into());
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

fn langchain(doc: &Value) -> Result<Vec<ActualCall>, String> {
    let Value::Array(items) = doc else {
        return Err("LangChain trace must be a list".into());
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

/// A JSON-RPC id as toolscore keys it: type and value, never bool or null.
fn rpc_key(id: Option<&Value>) -> Option<(bool, String)> {
    match id? {
        Value::Number(n) => Some((true, n.to_string())),
        Value::String(s) => Some((false, s.clone())),
        _ => None,
    }
}

fn mcp_messages(doc: &Value) -> Vec<&Value> {
    let items = match doc {
        Value::Array(_) => Some(doc),
        Value::Object(o) if o.contains_key("jsonrpc") => return vec![doc],
        Value::Object(o) if o.contains_key("messages") => o.get("messages"),
        Value::Object(o) => o.get("calls").or_else(|| o.get("tools")),
        _ => None,
    };
    items
        .and_then(Value::as_array)
        .map(|items| items.iter().filter(|i| i.is_object()).collect())
        .unwrap_or_default()
}

fn apply_mcp_response(c: &mut ActualCall, response: &Value) {
    let result = response.get("result");
    let result_map = result.and_then(Value::as_object);
    let rpc_error = match response.get("error") {
        Some(Value::String(s)) if !s.is_empty() => Some(error_text(&Value::String(s.clone()))),
        Some(Value::Object(e)) => Some(e.get("message").map(error_text).unwrap_or_default()),
        _ => None,
    };
    let is_error_result = result_map
        .and_then(|r| r.get("isError"))
        .is_some_and(truthy);
    c.failed = is_error_result || rpc_error.is_some();
    c.error = match rpc_error {
        Some(message) => Some(message),
        None if is_error_result => result
            .map(crate::formats::mcp::render_content)
            .filter(|t| !t.is_empty()),
        None => None,
    };
    c.duration_s = response
        .get("duration")
        .filter(|d| !d.is_boolean())
        .and_then(Value::as_f64);
}

fn mcp(doc: &Value) -> Result<Vec<ActualCall>, String> {
    if !doc.is_object() && !doc.is_array() {
        return Err("Trace data must be dict or list".into());
    }
    let mut calls: Vec<ActualCall> = Vec::new();
    let mut pending: Vec<((bool, String), usize)> = Vec::new();
    for message in mcp_messages(doc) {
        let is_response = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        let key = rpc_key(message.get("id"));
        if is_response
            && let Some(key) = &key
            && let Some(pos) = pending.iter().position(|(k, _)| k == key)
        {
            let (_, index) = pending.remove(pos);
            apply_mcp_response(&mut calls[index], message);
            continue;
        }
        let looks_rpc = ["jsonrpc", "method", "params", "error"]
            .iter()
            .any(|k| message.get(*k).is_some());
        if !looks_rpc {
            continue;
        }
        let parsed =
            if let (Some(method), Some(params)) = (message.get("method"), message.get("params")) {
                let method = method.as_str().unwrap_or("");
                if method == "tools/call" {
                    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                    if name.is_empty() {
                        None
                    } else {
                        let args = match params.get("arguments") {
                            Some(Value::String(text)) => serde_json::from_str::<Value>(text)
                                .ok()
                                .and_then(|v| v.as_object().cloned())
                                .unwrap_or_default(),
                            other => object_or_empty(other),
                        };
                        Some(call(name, args))
                    }
                } else if !method.is_empty() && !method.starts_with("tools/") {
                    Some(call(method, object_or_empty(Some(params))))
                } else {
                    None
                }
            } else if message.get("id").is_some()
                && (message.get("result").is_some() || message.get("error").is_some())
            {
                let name = message
                    .get("result")
                    .and_then(|r| r.get("_tool_name"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                let mut c = call(name, Args::new());
                apply_mcp_response(&mut c, message);
                Some(c)
            } else {
                None
            };
        let Some(mut c) = parsed else { continue };
        c.call_id = message.get("id").filter(|v| !v.is_null()).map(error_text);
        calls.push(c);
        if message.get("method").is_some()
            && let Some(key) = key
        {
            pending.retain(|(k, _)| *k != key);
            pending.push((key, calls.len() - 1));
        }
    }
    Ok(calls)
}

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

fn nanos(span: &Value, key: &str) -> Option<i128> {
    match span.get(key)? {
        Value::String(s) => s.trim().parse::<i128>().ok(),
        Value::Number(n) => n.as_i64().map(i128::from),
        _ => None,
    }
}

fn otel_spans(doc: &Value) -> Vec<&Value> {
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

fn decode_json_string(value: &Value) -> Value {
    match value {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

fn otel(doc: &Value) -> Result<Vec<ActualCall>, String> {
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
