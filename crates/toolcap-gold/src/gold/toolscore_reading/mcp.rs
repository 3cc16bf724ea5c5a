//! toolscore's MCP / JSON-RPC reading: requests paired with responses by id, orphans carrying `_tool_name`.

use super::*;

/// A JSON-RPC id as toolscore keys it: type and value, never bool or null.
pub(super) fn rpc_key(id: Option<&Value>) -> Option<(bool, String)> {
    match id? {
        Value::Number(n) => Some((true, n.to_string())),
        Value::String(s) => Some((false, s.clone())),
        _ => None,
    }
}

pub(super) fn mcp_messages(doc: &Value) -> Vec<&Value> {
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

pub(super) fn apply_mcp_response(c: &mut ActualCall, response: &Value) {
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

pub(super) fn mcp(doc: &Value) -> Result<Vec<ActualCall>, crate::Error> {
    if !doc.is_object() && !doc.is_array() {
        return Err(crate::Error::NotDictOrList);
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
