//! MCP JSON-RPC 2.0 sessions: a list of messages, JSONL, a single message, or a
//! `toolscore mcp record` file (`{"format": "mcp", "messages": […]}`). Messages may also be
//! wrapped as `{"timestamp", "direction", "message": {…}}` by a capture tool.
//!
//! * `tools/call` requests become tool spans, paired with their response by id. Ids are typed:
//!   the integer `1` and the string `"1"` are different requests; `null`, booleans and objects
//!   never pair. Each id pairs once (a reused id while pending is warned).
//! * A result with `isError: true` and a JSON-RPC `error` are failures; the error code is kept
//!   as `jsonrpc.error.code` and in the error type.
//! * A recorder's `duration` (seconds) on the response sets the span's end; numeric
//!   `timestamp`s on messages or wrappers give real start and end times.
//! * `initialize`, `tools/list`, notifications and other protocol traffic are *session
//!   context*: events (and server/client facts as attributes) on the root span, never tool
//!   calls (toolscore turns `initialize` into a call and an unmatched response into `unknown`).
//! * A request whose method is not an MCP protocol method (`{"method": "get_weather"}`) is a
//!   call of that name with `params` as its arguments; a response with no request whose result
//!   carries `_tool_name` is a call of that name with unknown arguments.

use std::collections::HashMap;

use serde_json::Value;

use super::message_logs::dialect::Dialect;
use super::message_logs::{
    self, Call, CallPos, Clock, Conversation, Doc, Item, check_string_args, seconds_nanos,
    str_field, timestamp_nanos,
};
use super::{Format, Input};
use crate::model::{AttrValue, Batch, Payload, SpanEvent};

pub struct McpSession;

impl Format for McpSession {
    fn name(&self) -> &'static str {
        "mcp"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_logs::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_logs::detect_dialect(input, Dialect::Mcp)
    }
    fn parse(&self, input: &Input) -> Batch {
        message_logs::parse_conversation(input, self.name(), |doc| {
            (read(input, doc), "mcp session")
        })
    }
}

fn read(input: &Input, doc: &Doc) -> Conversation {
    let root = &doc.root;
    let mut session = Session {
        input,
        conversation: Conversation {
            native_id: ["session_id", "sessionId"]
                .iter()
                .find_map(|k| str_field(root, k))
                .map(str::to_owned),
            ..Default::default()
        },
        clock: Clock::for_input(input),
        pending: HashMap::new(),
    };
    session.recording_facts(root);
    let mut messages: Vec<(&Value, Option<u64>)> = Vec::new();
    match root {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(item, doc.line_of(i), &mut messages);
            }
        }
        other if other.get("jsonrpc").is_some() => messages.push((other, None)),
        other => {
            if let Some(items) = ["messages", "calls", "tools"]
                .iter()
                .find_map(|k| other.get(*k).and_then(Value::as_array))
            {
                for item in items {
                    flatten(item, None, &mut messages);
                }
            }
        }
    }
    for (message, line) in messages {
        session.message(message, line);
    }
    session.finish();
    session.conversation
}

/// Methods of the MCP protocol itself (lifecycle, discovery, notifications): session context,
/// never tool calls.
fn is_protocol_method(method: &str) -> bool {
    const NAMESPACES: &[&str] = &[
        "tools/",
        "resources/",
        "prompts/",
        "completion/",
        "logging/",
        "sampling/",
        "roots/",
        "elicitation/",
        "notifications/",
        "tasks/",
        "$/",
    ];
    matches!(method, "initialize" | "ping") || NAMESPACES.iter().any(|ns| method.starts_with(ns))
}

/// JSON-RPC batches are arrays inside the list: their messages count one by one.
fn flatten<'v>(item: &'v Value, line: Option<u64>, out: &mut Vec<(&'v Value, Option<u64>)>) {
    match item {
        Value::Array(batch) => out.extend(batch.iter().map(|m| (m, line))),
        other => out.push((other, line)),
    }
}

/// A request id as JSON-RPC means it: typed, so `1` and `"1"` differ.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum RequestId {
    Number(String),
    Text(String),
}

impl RequestId {
    fn of(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => Some(RequestId::Number(n.to_string())),
            Value::String(s) => Some(RequestId::Text(s.clone())),
            _ => None,
        }
    }
    fn display(&self) -> String {
        match self {
            RequestId::Number(n) => n.clone(),
            RequestId::Text(s) => format!("{s:?}"),
        }
    }
    fn attr(&self) -> AttrValue {
        match self {
            RequestId::Number(n) => n
                .parse::<i64>()
                .map(AttrValue::Int)
                .unwrap_or_else(|_| AttrValue::Str(n.clone().into())),
            RequestId::Text(s) => AttrValue::Str(s.clone().into()),
        }
    }
}

enum Waiting {
    Call(CallPos),
    Protocol(String),
}

struct Session<'i, 'a> {
    input: &'i Input<'a>,
    conversation: Conversation,
    clock: Clock,
    pending: HashMap<RequestId, Waiting>,
}

fn time_of(wrapper: &Value, message: &Value) -> Option<u64> {
    ["timestamp", "ts", "time"]
        .iter()
        .find_map(|k| wrapper.get(*k).or_else(|| message.get(*k)))
        .and_then(timestamp_nanos)
}

/// The text of a tool result's `content` list, as a client would show it.
pub fn render_content(result: &Value) -> String {
    let Some(items) = result.get("content").and_then(Value::as_array) else {
        return result.to_string();
    };
    let rendered: Vec<String> = items
        .iter()
        .map(|item| match str_field(item, "type").unwrap_or("") {
            "text" => str_field(item, "text").unwrap_or("").to_owned(),
            "resource" => {
                let resource = item.get("resource").unwrap_or(&Value::Null);
                format!(
                    "[resource {}]\n{}",
                    str_field(resource, "uri").unwrap_or(""),
                    str_field(resource, "text").unwrap_or("")
                )
            }
            "resource_link" => format!(
                "[resource link {} {}]",
                str_field(item, "uri").unwrap_or(""),
                str_field(item, "name").unwrap_or("")
            ),
            other => format!(
                "[{other} ({})]",
                str_field(item, "mimeType").unwrap_or("unknown type")
            ),
        })
        .collect();
    rendered.join("\n")
}

impl Session<'_, '_> {
    fn root_attr(&mut self, key: &str, value: AttrValue) {
        self.conversation.root_attributes.push((key.into(), value));
    }

    fn recording_facts(&mut self, root: &Value) {
        if let Some(by) = str_field(root, "recorded_by") {
            self.root_attr("mcp.recorded_by", AttrValue::Str(by.into()));
        }
        match root.get("server_command") {
            Some(Value::Array(parts)) => {
                let command: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                self.root_attr(
                    "mcp.server.command",
                    AttrValue::Str(command.join(" ").into()),
                );
            }
            Some(Value::String(command)) => {
                self.root_attr("mcp.server.command", AttrValue::Str(command.clone().into()));
            }
            _ => {}
        }
    }

    fn event(&mut self, time: u64, name: String, attributes: Vec<(String, AttrValue)>) {
        self.conversation.root_events.push(SpanEvent {
            time_unix_nano: time,
            name: name.into(),
            attributes: crate::model::shared_keys(attributes),
        });
    }

    fn message(&mut self, item: &Value, line: Option<u64>) {
        let message = item
            .get("message")
            .filter(|m| m.get("jsonrpc").is_some())
            .unwrap_or(item);
        let time = self.clock.tick(time_of(item, message));
        if !message.is_object() {
            self.conversation
                .warn(self.input, line, "not a JSON-RPC message; skipped");
            return;
        }
        if let Some(method) = str_field(message, "method") {
            self.request(method, message, line, time);
        } else if message.get("result").is_some() || message.get("error").is_some() {
            self.response(message, line, time);
        } else {
            self.conversation
                .warn(self.input, line, "not a JSON-RPC message; skipped");
        }
    }

    fn request(&mut self, method: &str, message: &Value, line: Option<u64>, time: u64) {
        let params = message.get("params").unwrap_or(&Value::Null);
        let id = message.get("id");
        let key = id.and_then(RequestId::of);
        if id.is_some_and(|v| !v.is_null()) && key.is_none() {
            self.conversation.warn(
                self.input,
                line,
                format!(
                    "{method} request has an id of the wrong type ({}); it can never be paired",
                    id.map(Value::to_string).unwrap_or_default()
                ),
            );
        }
        // A method outside MCP's own protocol is a tool called by its name, arguments = params
        // (hand-written logs and servers that skip `tools/call`; toolscore reads them so too).
        let tool_name = if method == "tools/call" {
            Some(str_field(params, "name").unwrap_or("unknown"))
        } else if !is_protocol_method(method) {
            Some(method)
        } else {
            None
        };
        if let Some(tool_name) = tool_name {
            let by_method = method != "tools/call";
            let mut call = Call {
                name: tool_name.to_owned(),
                call_id: key.as_ref().map(|k| match k {
                    RequestId::Number(n) | RequestId::Text(n) => n.clone(),
                }),
                args: if by_method {
                    Some(if params.is_null() {
                        Value::Object(Default::default())
                    } else {
                        params.clone()
                    })
                } else {
                    params.get("arguments").cloned()
                },
                args_field: if by_method {
                    "params"
                } else {
                    "params.arguments"
                },
                result_field: "result",
                start: time,
                line,
                ..Default::default()
            };
            call.attributes
                .push(("mcp.method.name".into(), AttrValue::Str(method.into())));
            if let Some(key) = &key {
                call.attributes
                    .push(("jsonrpc.request.id".into(), key.attr()));
            }
            check_string_args(&mut self.conversation, self.input, &call);
            let pos = (self.conversation.items.len(), 0);
            self.conversation.items.push(Item::Call(call));
            match key {
                Some(key) => self.wait(key, Waiting::Call(pos), line),
                // A badly typed id was warned above.
                None if id.is_some_and(|v| !v.is_null()) => {}
                None => self.conversation.warn(
                    self.input,
                    line,
                    format!("{method} without an id: no response can be paired with it"),
                ),
            }
            return;
        }
        if method == "initialize" {
            if let Some(client) = params.get("clientInfo") {
                self.info_attrs("mcp.client", client);
            }
            if let Some(version) = str_field(params, "protocolVersion") {
                self.root_attr("mcp.protocol.version", AttrValue::Str(version.into()));
            }
        }
        if method == "notifications/cancelled"
            && let Some(target) = params.get("requestId").and_then(RequestId::of)
            && let Some(Waiting::Call(pos)) = self.pending.get(&target)
        {
            let pos = *pos;
            self.pending.remove(&target);
            if let Some(call) = self.conversation.call_mut(pos) {
                call.end = Some(time);
                call.fail("cancelled", str_field(params, "reason").map(str::to_owned));
            }
        }
        let mut attributes = vec![("mcp.method.name".into(), AttrValue::Str(method.into()))];
        if let Some(key) = &key {
            attributes.push(("jsonrpc.request.id".into(), key.attr()));
        }
        if !params.is_null() {
            attributes.push((
                "params".into(),
                AttrValue::Payload(std::sync::Arc::new(Payload::inline(
                    "params",
                    params.to_string(),
                ))),
            ));
        }
        let kind = if key.is_some() {
            "request"
        } else {
            "notification"
        };
        self.event(time, format!("{kind} {method}"), attributes);
        if let Some(key) = key {
            self.wait(key, Waiting::Protocol(method.to_owned()), line);
        }
    }

    fn wait(&mut self, key: RequestId, waiting: Waiting, line: Option<u64>) {
        if self.pending.insert(key.clone(), waiting).is_some() {
            self.conversation.warn(
                self.input,
                line,
                format!(
                    "request id {} reused before its response; the earlier request stays unpaired",
                    key.display()
                ),
            );
        }
    }

    fn info_attrs(&mut self, prefix: &str, info: &Value) {
        for field in ["name", "version"] {
            if let Some(value) = str_field(info, field) {
                self.root_attr(&format!("{prefix}.{field}"), AttrValue::Str(value.into()));
            }
        }
    }

    fn response(&mut self, message: &Value, line: Option<u64>, time: u64) {
        let key = message.get("id").and_then(RequestId::of);
        let waiting = key.as_ref().and_then(|k| self.pending.remove(k));
        // Some servers send `"error": null` next to a result.
        let error = message.get("error").filter(|e| !e.is_null());
        match waiting {
            Some(Waiting::Call(pos)) => {
                let duration = message.get("duration").and_then(seconds_nanos);
                let Some(call) = self.conversation.call_mut(pos) else {
                    return;
                };
                call.end = Some(duration.map_or(time, |d| call.start.saturating_add(d)));
                if let Some(error) = error {
                    let code = error.get("code").and_then(Value::as_i64);
                    let error_type = match code {
                        Some(code) => format!("JSON-RPC error {code}"),
                        None => "JSON-RPC error".to_owned(),
                    };
                    call.fail(&error_type, Some(message_logs::error_text(error)));
                    if let Some(code) = code {
                        call.attributes
                            .push(("jsonrpc.error.code".into(), AttrValue::Int(code)));
                    }
                    call.result = Some(error.clone());
                    call.result_field = "error";
                } else if let Some(result) = message.get("result") {
                    if result.get("isError").and_then(Value::as_bool) == Some(true) {
                        call.fail_with_result("isError", render_content(result));
                    }
                    call.result = Some(result.clone());
                }
            }
            Some(Waiting::Protocol(method)) => {
                let result = message.get("result").unwrap_or(&Value::Null);
                let mut attributes = vec![(
                    "mcp.method.name".into(),
                    AttrValue::Str(method.clone().into()),
                )];
                if method == "initialize" {
                    if let Some(server) = result.get("serverInfo") {
                        self.info_attrs("mcp.server", server);
                    }
                    if let Some(version) = str_field(result, "protocolVersion") {
                        self.root_attr("mcp.protocol.version", AttrValue::Str(version.into()));
                    }
                }
                if let Some(tools) = result.get("tools").and_then(Value::as_array) {
                    let names: Vec<AttrValue> = tools
                        .iter()
                        .filter_map(|t| str_field(t, "name"))
                        .map(|n| AttrValue::Str(n.into()))
                        .collect();
                    self.root_attr("mcp.server.tools", AttrValue::List(names.clone().into()));
                    attributes.push(("tools".into(), AttrValue::List(names.into())));
                }
                if let Some(error) = error {
                    attributes.push((
                        "error.message".into(),
                        AttrValue::Str(message_logs::error_text(error).into()),
                    ));
                }
                self.event(time, format!("response {method}"), attributes);
            }
            None if message
                .get("result")
                .and_then(|r| str_field(r, "_tool_name"))
                .is_some_and(|n| !n.is_empty()) =>
            {
                self.orphan_call(message, error, line, time);
            }
            None => {
                let shown = key.as_ref().map_or("null".to_owned(), RequestId::display);
                self.conversation.warn(
                    self.input,
                    line,
                    format!(
                        "unpaired JSON-RPC response (id {shown}): no earlier request has this id"
                    ),
                );
                let body = error
                    .or_else(|| message.get("result"))
                    .unwrap_or(&Value::Null);
                self.event(
                    time,
                    "unpaired response".into(),
                    vec![
                        (
                            "jsonrpc.request.id".into(),
                            key.map_or(AttrValue::Null, |k| k.attr()),
                        ),
                        (
                            "body".into(),
                            AttrValue::Payload(std::sync::Arc::new(Payload::inline(
                                "body",
                                body.to_string(),
                            ))),
                        ),
                    ],
                );
            }
        }
    }

    /// A response whose request is not in the log but whose result names the tool
    /// (`result._tool_name`, added by some proxies): the call itself, arguments unknown.
    fn orphan_call(
        &mut self,
        message: &Value,
        error: Option<&Value>,
        line: Option<u64>,
        time: u64,
    ) {
        let result = message.get("result").unwrap_or(&Value::Null);
        let name = str_field(result, "_tool_name").unwrap_or("unknown");
        let key = message.get("id").and_then(RequestId::of);
        let mut call = Call {
            name: name.to_owned(),
            call_id: key.as_ref().map(|k| match k {
                RequestId::Number(n) | RequestId::Text(n) => n.clone(),
            }),
            args: Some(Value::Object(Default::default())),
            args_field: "params.arguments",
            result: Some(result.clone()),
            result_field: "result",
            start: time,
            end: Some(
                message
                    .get("duration")
                    .and_then(seconds_nanos)
                    .map_or(time, |d| time.saturating_add(d)),
            ),
            line,
            ..Default::default()
        };
        if let Some(error) = error {
            call.fail("JSON-RPC error", Some(message_logs::error_text(error)));
        } else if result.get("isError").and_then(Value::as_bool) == Some(true) {
            call.fail("isError", Some(render_content(result)));
        }
        self.conversation.warn(
            self.input,
            line,
            format!(
                "response without its request, named {name} by result._tool_name: read as a call with unknown arguments"
            ),
        );
        self.conversation.items.push(Item::Call(call));
    }

    fn finish(&mut self) {
        let mut unanswered: Vec<(u64, String)> = self
            .pending
            .iter()
            .filter_map(|(key, waiting)| match waiting {
                Waiting::Call(pos) => {
                    let call = self.conversation.call_mut(*pos)?;
                    Some((
                        call.start,
                        format!(
                            "tools/call request id {} ({}) got no response",
                            key.display(),
                            call.name
                        ),
                    ))
                }
                Waiting::Protocol(_) => None,
            })
            .collect();
        unanswered.sort();
        for (_, message) in unanswered {
            self.conversation.warn(self.input, None, message);
        }
    }
}
