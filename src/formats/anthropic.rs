//! Anthropic Messages logs: a list of messages (JSON or JSONL), `{"messages": …}` (toolscore
//! auto-detects that as OpenAI and finds 0 calls), or one response message. `tool_use`,
//! `server_tool_use` and `mcp_tool_use` blocks become tool spans; `tool_result` blocks (and the
//! server-side `*_tool_result` blocks) are paired by `tool_use_id` and keep `is_error`, which
//! toolscore ignores.

use serde_json::Value;

use super::log_detect::Dialect;
use super::message_log::{
    self, Call, Clock, Conversation, Doc, Item, PendingCalls, Turn, str_field, u64_field,
};
use super::{Format, Input};
use crate::model::{AttrValue, Batch, LlmFacts};

pub struct AnthropicMessages;

impl Format for AnthropicMessages {
    fn name(&self) -> &'static str {
        "anthropic"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_log::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_log::detect_dialect(input, Dialect::Anthropic)
    }
    fn parse(&self, input: &Input) -> Batch {
        let (doc, problems) = match message_log::read_or_fail(input) {
            Ok(read) => read,
            Err(batch) => return *batch,
        };
        let mut conversation = read(input, &doc);
        conversation.problems.splice(0..0, problems);
        message_log::build(input, self.name(), "anthropic messages", conversation)
    }
}

const CALL_BLOCKS: &[&str] = &["tool_use", "server_tool_use", "mcp_tool_use"];

fn messages(doc: &Doc) -> Vec<(&Value, Option<u64>)> {
    let root = &doc.root;
    if let Some(items) = root.as_array() {
        return items
            .iter()
            .enumerate()
            .map(|(i, m)| (m, doc.line_of(i)))
            .collect();
    }
    if let Some(items) = root.get("messages").and_then(Value::as_array) {
        return items.iter().map(|m| (m, None)).collect();
    }
    vec![(root, None)]
}

fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn read(input: &Input, doc: &Doc) -> Conversation {
    let root = &doc.root;
    let is_response = str_field(root, "type") == Some("message");
    let mut conversation = Conversation {
        native_id: ["conversation_id", "thread_id", "session_id"]
            .iter()
            .find_map(|k| str_field(root, k))
            .or_else(|| is_response.then(|| str_field(root, "id")).flatten())
            .map(str::to_owned),
        ..Default::default()
    };
    if let Some(system) = root.get("system") {
        conversation.root_attributes.push((
            "anthropic.system".into(),
            AttrValue::Payload(crate::model::Payload::inline(
                "system",
                message_log::payload_text(system),
            )),
        ));
    }
    let wrapper_model = str_field(root, "model").map(str::to_owned);
    let mut clock = Clock::for_input(input);
    let mut pending = PendingCalls::default();
    let mut prompt: Vec<Value> = Vec::new();
    for (message, line) in messages(doc) {
        if str_field(message, "role") == Some("assistant") {
            let usage = message.get("usage");
            let mut turn = Turn {
                message: message.clone(),
                prompt: std::mem::take(&mut prompt),
                start: clock.tick(None),
                line,
                llm: LlmFacts {
                    provider: Some("anthropic".into()),
                    model: str_field(message, "model")
                        .map(str::to_owned)
                        .or_else(|| wrapper_model.clone()),
                    input_tokens: usage.and_then(|u| u64_field(u, &["input_tokens"])),
                    output_tokens: usage.and_then(|u| u64_field(u, &["output_tokens"])),
                    cache_read_tokens: usage
                        .and_then(|u| u64_field(u, &["cache_read_input_tokens"])),
                    finish_reasons: str_field(message, "stop_reason")
                        .map(|r| vec![r.to_owned()])
                        .unwrap_or_default(),
                    ..Default::default()
                },
                ..Default::default()
            };
            for block in blocks(message) {
                let kind = str_field(block, "type").unwrap_or("");
                if !CALL_BLOCKS.contains(&kind) {
                    continue;
                }
                let mut attributes = vec![("anthropic.block".into(), AttrValue::Str(kind.into()))];
                if let Some(server) = str_field(block, "server_name") {
                    attributes.push(("mcp.server.name".into(), AttrValue::Str(server.into())));
                }
                turn.calls.push(Call {
                    name: str_field(block, "name").unwrap_or("unknown").to_owned(),
                    call_id: str_field(block, "id").map(str::to_owned),
                    args: block.get("input").cloned(),
                    args_field: "tool_use.input",
                    result_field: "tool_result.content",
                    start: clock.tick(None),
                    line,
                    attributes,
                    ..Default::default()
                });
            }
            let item = conversation.items.len();
            for (index, call) in turn.calls.iter().enumerate() {
                pending.register((item, index), call.call_id.as_deref(), &call.name);
            }
            conversation.items.push(Item::Turn(turn));
            // Server tools answer inside the same assistant message.
            attach_results(
                input,
                &mut conversation,
                &mut pending,
                message,
                line,
                &mut clock,
            );
            continue;
        }
        attach_results(
            input,
            &mut conversation,
            &mut pending,
            message,
            line,
            &mut clock,
        );
        prompt.push(message.clone());
    }
    let unpaired = pending.unpaired();
    if unpaired > 0 {
        conversation.warn(
            input,
            None,
            format!("{unpaired} tool call(s) have no tool_result in the log"),
        );
    }
    conversation
}

/// The text of a tool_result's content: a string, or its text blocks joined by newlines.
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| str_field(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        other => message_log::payload_text(other),
    }
}

fn attach_results(
    input: &Input,
    conversation: &mut Conversation,
    pending: &mut PendingCalls,
    message: &Value,
    line: Option<u64>,
    clock: &mut Clock,
) {
    for block in blocks(message) {
        let kind = str_field(block, "type").unwrap_or("");
        if kind != "tool_result" && !kind.ends_with("_tool_result") {
            continue;
        }
        let time = clock.tick(None);
        let content = block.get("content").cloned().unwrap_or(Value::Null);
        let id = str_field(block, "tool_use_id").unwrap_or("");
        let Some(call) = pending
            .take_by_id(id)
            .and_then(|p| conversation.call_mut(p))
        else {
            conversation.orphan_result(
                input,
                line,
                time,
                &format!("{kind} for tool_use_id {id}"),
                &content,
            );
            continue;
        };
        call.end = Some(time);
        let server_error = str_field(&content, "type").filter(|t| t.ends_with("_error"));
        if block.get("is_error").and_then(Value::as_bool) == Some(true) {
            call.fail("tool_result.is_error", Some(content_text(&content)));
        } else if let Some(error_type) = server_error {
            let code = str_field(&content, "error_code").map(str::to_owned);
            call.fail(error_type, code);
        }
        call.result = Some(content);
    }
}
