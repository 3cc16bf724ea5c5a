//! Anthropic Messages logs: a list of messages (JSON or JSONL), `{"messages": …}` (toolscore
//! auto-detects that as OpenAI and finds 0 calls), one response message, or agent transcript
//! JSONL whose lines wrap a message under `message` with a `timestamp` and `sessionId` (Claude
//! Code style: consecutive lines of one API response, same `message.id`, are one turn; lines
//! without a message are kept as root events). `tool_use`, `server_tool_use` and
//! `mcp_tool_use` blocks become tool spans; `tool_result` blocks (and the server-side
//! `*_tool_result` blocks) are paired by `tool_use_id` and keep `is_error`, which toolscore
//! ignores.

use serde_json::Value;

use super::dialect::Dialect;
use crate::formats::common::jsonrec;
use crate::formats::message_logs::{
    self, Call, Clock, Conversation, Doc, Item, PendingCalls, Turn, str_field, timestamp_nanos,
};
use crate::formats::{Format, Input};
use crate::model::{AttrValue, Batch, LlmFacts, Payload, SpanEvent};

pub struct AnthropicMessages;

impl Format for AnthropicMessages {
    fn name(&self) -> &'static str {
        "anthropic"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_logs::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_logs::detect_dialect(input, Dialect::Anthropic)
    }
    fn parse(&self, input: &Input) -> Batch {
        message_logs::parse_conversation(input, self.name(), |doc| {
            (read(input, doc), "anthropic messages")
        })
    }
}

const CALL_BLOCKS: &[&str] = &["tool_use", "server_tool_use", "mcp_tool_use"];

/// One entry of the log: the message, its file line, and the transcript line wrapping it
/// (agent transcripts such as Claude Code's JSONL put the message under `message`).
struct Entry<'d> {
    message: &'d Value,
    line: Option<u64>,
    wrapper: Option<&'d Value>,
}

fn entries(doc: &Doc) -> Vec<Entry<'_>> {
    let root = &doc.root;
    let listed: Vec<(&Value, Option<u64>)> = if let Some(items) = root.as_array() {
        items
            .iter()
            .enumerate()
            .map(|(i, m)| (m, doc.line_of(i)))
            .collect()
    } else if let Some(items) = root.get("messages").and_then(Value::as_array) {
        items.iter().map(|m| (m, None)).collect()
    } else {
        vec![(root, None)]
    };
    listed
        .into_iter()
        .map(
            |(item, line)| match item.get("message").filter(|m| m.get("role").is_some()) {
                Some(message) => Entry {
                    message,
                    line,
                    wrapper: Some(item),
                },
                None => Entry {
                    message: item,
                    line,
                    wrapper: None,
                },
            },
        )
        .collect()
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
    let entries = entries(doc);
    let session = entries
        .iter()
        .filter_map(|e| e.wrapper)
        .find_map(|w| str_field(w, "sessionId").or_else(|| str_field(w, "session_id")));
    let mut reader = Reader {
        input,
        conversation: Conversation {
            native_id: ["conversation_id", "thread_id", "session_id"]
                .iter()
                .find_map(|k| str_field(root, k))
                .or_else(|| is_response.then(|| str_field(root, "id")).flatten())
                .or(session)
                .map(str::to_owned),
            ..Default::default()
        },
        clock: Clock::for_input(input),
        pending: PendingCalls::default(),
        prompt: Vec::new(),
        wrapper_model: str_field(root, "model").map(str::to_owned),
        last_turn: None,
    };
    if let Some(system) = root.get("system") {
        reader.conversation.root_attributes.push((
            "anthropic.system".into(),
            AttrValue::Payload(std::sync::Arc::new(crate::model::Payload::inline(
                "system",
                message_logs::payload_text(system),
            ))),
        ));
    }
    for entry in entries {
        reader.entry(&entry);
    }
    let mut conversation = reader.conversation;
    let unpaired = reader.pending.unpaired();
    if unpaired > 0 {
        conversation.warn(
            input,
            None,
            format!("{unpaired} tool call(s) have no tool_result in the log"),
        );
    }
    conversation
}

struct Reader<'i, 'a> {
    input: &'i Input<'a>,
    conversation: Conversation,
    clock: Clock,
    pending: PendingCalls,
    prompt: Vec<Value>,
    wrapper_model: Option<String>,
    /// The last turn's API message id and item index: transcripts write one line per content
    /// block of a response, and those lines are one turn.
    last_turn: Option<(String, usize)>,
}

impl Reader<'_, '_> {
    fn entry(&mut self, entry: &Entry) {
        let message = entry.message;
        let time = entry
            .wrapper
            .and_then(|w| w.get("timestamp"))
            .and_then(timestamp_nanos);
        let Some(role) = str_field(message, "role") else {
            // Transcript bookkeeping (summaries, system notices): kept as root events.
            let time = self.clock.tick(time);
            self.conversation.root_events.push(SpanEvent {
                time_unix_nano: time,
                name: format!(
                    "log entry {}",
                    str_field(message, "type").unwrap_or("unknown")
                )
                .into(),
                attributes: vec![(
                    "entry".into(),
                    AttrValue::Payload(std::sync::Arc::new(Payload::inline(
                        "entry",
                        message.to_string(),
                    ))),
                )]
                .into(),
            });
            return;
        };
        if role != "assistant" {
            self.last_turn = None;
            self.results(message, entry.line, time);
            self.prompt.push(message.clone());
            return;
        }
        let api_id = str_field(message, "id").map(str::to_owned);
        let continues = match (&self.last_turn, &api_id) {
            (Some((last, _)), Some(id)) => last == id,
            _ => false,
        };
        let item = match self.last_turn.as_ref().filter(|_| continues) {
            Some((_, item)) => *item,
            None => {
                let turn = self.new_turn(message, entry.line, time);
                self.conversation.items.push(Item::Turn(turn));
                self.conversation.items.len() - 1
            }
        };
        if continues && let Some(Item::Turn(turn)) = self.conversation.items.get_mut(item) {
            merge_message(turn, message);
            self.clock.tick(time);
        }
        self.last_turn = api_id.map(|id| (id, item));
        self.calls(message, entry.line, item);
        // Server tools answer inside the same assistant message.
        self.results(message, entry.line, None);
    }

    fn new_turn(&mut self, message: &Value, line: Option<u64>, time: Option<u64>) -> Turn {
        let mut turn = Turn {
            message: message.clone(),
            prompt: std::mem::take(&mut self.prompt),
            start: self.clock.tick(time),
            line,
            llm: LlmFacts {
                provider: Some("anthropic".into()),
                model: str_field(message, "model")
                    .map(str::to_owned)
                    .or_else(|| self.wrapper_model.clone())
                    .map(Into::into),
                ..Default::default()
            },
            ..Default::default()
        };
        apply_usage(&mut turn.llm, message);
        turn
    }

    fn calls(&mut self, message: &Value, line: Option<u64>, item: usize) {
        let Some(Item::Turn(turn)) = self.conversation.items.get_mut(item) else {
            return;
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
            let call = Call {
                name: str_field(block, "name").unwrap_or("unknown").to_owned(),
                call_id: str_field(block, "id").map(str::to_owned),
                args: block.get("input").cloned(),
                args_field: "tool_use.input",
                result_field: "tool_result.content",
                start: self.clock.tick(None),
                line,
                attributes,
                ..Default::default()
            };
            self.pending.register(
                (item, turn.calls.len()),
                call.call_id.as_deref(),
                &call.name,
            );
            turn.calls.push(call);
        }
    }

    fn results(&mut self, message: &Value, line: Option<u64>, time: Option<u64>) {
        let mut time = time;
        for block in blocks(message) {
            let kind = str_field(block, "type").unwrap_or("");
            if kind != "tool_result" && !kind.ends_with("_tool_result") {
                continue;
            }
            let at = self.clock.tick(time.take());
            attach_result(
                self.input,
                &mut self.conversation,
                &mut self.pending,
                block,
                line,
                at,
            );
        }
        if time.is_some() {
            self.clock.tick(time);
        }
    }
}

/// Token counts and stop reason of the (last line of the) response.
fn apply_usage(llm: &mut LlmFacts, message: &Value) {
    let usage = message.get("usage");
    llm.input_tokens = jsonrec::tokens_at(usage, &["input_tokens"]);
    llm.output_tokens = jsonrec::tokens_at(usage, &["output_tokens"]);
    llm.cache_read_tokens = jsonrec::tokens_at(usage, &["cache_read_input_tokens"]);
    llm.finish_reasons = str_field(message, "stop_reason")
        .map(crate::model::interner::value)
        .into_iter()
        .collect();
}

/// A later transcript line of the same response: its blocks join the turn's message.
fn merge_message(turn: &mut Turn, message: &Value) {
    let extra = blocks(message).to_vec();
    if let Some(content) = turn
        .message
        .get_mut("content")
        .and_then(Value::as_array_mut)
    {
        content.extend(extra);
    }
    apply_usage(&mut turn.llm, message);
}

/// The text of a tool_result's content: a string, or its text blocks joined by newlines.
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| str_field(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        other => message_logs::payload_text(other),
    }
}

fn attach_result(
    input: &Input,
    conversation: &mut Conversation,
    pending: &mut PendingCalls,
    block: &Value,
    line: Option<u64>,
    time: u64,
) {
    let kind = str_field(block, "type").unwrap_or("");
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
        return;
    };
    call.end = Some(time);
    let server_error = str_field(&content, "type").filter(|t| t.ends_with("_error"));
    if block.get("is_error").and_then(Value::as_bool) == Some(true) {
        call.fail_with_result("tool_result.is_error", content_text(&content));
    } else if let Some(error_type) = server_error {
        let code = str_field(&content, "error_code").map(str::to_owned);
        call.fail(error_type, code);
    }
    call.result = Some(content);
}
