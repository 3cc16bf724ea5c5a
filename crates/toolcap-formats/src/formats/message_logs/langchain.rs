//! LangChain logs, auto-detected (toolscore only reads them with `--format langchain`):
//! * legacy `AgentAction` lists (`tool`, `tool_input`, `log`, optional `tool_call_id`), and
//!   `intermediate_steps` (`[[action, observation], …]`, bare or under that key), where the
//!   observation becomes the call's result; `{"action", "action_input"}` items likewise;
//! * modern `ToolCall` lists (`name`, `args`, `id`, `type: "tool_call"`);
//! * message lists (`type: ai/human/tool`, `messages_to_dict`'s `{type, data}` and the `lc`
//!   constructor form): an AI message is an LLM turn with its `tool_calls`, a tool message is
//!   paired by `tool_call_id` and fails when `status` is `error`.
//!
//! An action with a non-empty `log` is the model's reasoning that chose it, so it becomes an
//! LLM turn (output = the log) with the call under it; `ToolCall` lists hang off the root.
//! A string `tool_input` is kept verbatim (toolscore parses it as JSON or wraps it as
//! `{"input": …}`).

use serde_json::Value;

use super::dialect::Dialect;
use crate::formats::common::jsonrec;
use crate::formats::message_logs::{
    self, Call, Clock, Conversation, Doc, Item, PendingCalls, Turn, check_string_args, str_field,
    truthy,
};
use crate::formats::{Format, Input};
use crate::model::{Batch, LlmFacts};

pub struct LangChainLog;

impl Format for LangChainLog {
    fn name(&self) -> &'static str {
        "langchain"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_logs::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_logs::detect_dialect(input, Dialect::LangChain)
    }
    fn parse(&self, input: &Input) -> Batch {
        message_logs::parse_conversation(input, self.name(), |doc| (read(input, doc), "langchain"))
    }
}

fn read(input: &Input, doc: &Doc) -> Conversation {
    let root = &doc.root;
    let items: Vec<(&Value, Option<u64>)> = match root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (v, doc.line_of(i)))
            .collect(),
        other => ["intermediate_steps", "messages"]
            .iter()
            .find_map(|k| other.get(*k).and_then(Value::as_array))
            .map(|items| items.iter().map(|v| (v, None)).collect())
            .unwrap_or_default(),
    };
    let mut reader = Reader {
        input,
        conversation: Conversation {
            native_id: ["run_id", "thread_id", "id"]
                .iter()
                .find_map(|k| str_field(root, k))
                .map(str::to_owned),
            ..Default::default()
        },
        clock: Clock::for_input(input),
        pending: PendingCalls::default(),
        prompt: Vec::new(),
    };
    for (item, line) in items {
        reader.item(item, line);
    }
    let mut conversation = reader.conversation;
    let unpaired = reader.pending.unpaired();
    let has_messages = conversation
        .items
        .iter()
        .any(|i| matches!(i, Item::Turn(t) if t.message.is_object()));
    if unpaired > 0 && has_messages {
        conversation.warn(
            input,
            None,
            format!("{unpaired} tool call(s) have no tool message in the log"),
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
}

/// A message's kind (`ai`, `tool`, …) and the object holding its fields.
fn message_parts(item: &Value) -> Option<(String, &Value)> {
    if let Some(kwargs) = item.get("kwargs").filter(|_| item.get("lc").is_some()) {
        let class = item
            .get("id")
            .and_then(Value::as_array)
            .and_then(|path| path.last())
            .and_then(Value::as_str)
            .unwrap_or("");
        return Some((normalize_kind(class), kwargs));
    }
    if item.get("role").is_some() {
        return None;
    }
    let kind = str_field(item, "type")?;
    if matches!(kind, "tool_call" | "tool_call_chunk") {
        return None;
    }
    let body = item.get("data").filter(|d| d.is_object()).unwrap_or(item);
    (body.get("content").is_some()).then(|| (normalize_kind(kind), body))
}

fn normalize_kind(kind: &str) -> String {
    match kind {
        "AIMessage" | "AIMessageChunk" => "ai".into(),
        "HumanMessage" => "human".into(),
        "ToolMessage" => "tool".into(),
        "SystemMessage" => "system".into(),
        other => other.to_owned(),
    }
}

impl Reader<'_, '_> {
    fn item(&mut self, item: &Value, line: Option<u64>) {
        if let Some(pair) = item.as_array() {
            let (Some(action), observation) = (pair.first(), pair.get(1)) else {
                return;
            };
            self.action(action, observation, line);
            return;
        }
        if let Some((kind, body)) = message_parts(item) {
            self.message(&kind, body, line);
            return;
        }
        if item.get("tool").is_some() || item.get("action").is_some() {
            let observation = ["observation", "output", "result"]
                .iter()
                .find_map(|k| item.get(*k));
            self.action(item, observation, line);
            return;
        }
        if let Some(name) = str_field(item, "name") {
            let call = Call {
                name: name.to_owned(),
                call_id: str_field(item, "id").map(str::to_owned),
                args: item.get("args").cloned(),
                args_field: "args",
                result_field: "output",
                start: self.clock.tick(None),
                line,
                ..Default::default()
            };
            let pos = (self.conversation.items.len(), 0);
            self.pending
                .register(pos, call.call_id.as_deref(), &call.name);
            self.conversation.items.push(Item::Call(call));
            return;
        }
        self.conversation.warn(
            self.input,
            line,
            "item is neither a LangChain action, tool call nor message; skipped",
        );
    }

    fn action(&mut self, action: &Value, observation: Option<&Value>, line: Option<u64>) {
        let (name, args) = match str_field(action, "tool") {
            Some(tool) => (tool, action.get("tool_input")),
            None => (
                str_field(action, "action").unwrap_or("unknown"),
                action.get("action_input"),
            ),
        };
        let start = self.clock.tick(None);
        let mut call = Call {
            name: name.to_owned(),
            call_id: str_field(action, "tool_call_id").map(str::to_owned),
            args: args.cloned(),
            args_field: "tool_input",
            result_field: "observation",
            start,
            line,
            ..Default::default()
        };
        if let Some(observation) = observation {
            call.end = Some(self.clock.tick(None));
            call.result = Some(observation.clone());
        }
        let log = action
            .get("message_log")
            .filter(|m| truthy(m))
            .or_else(|| action.get("log").filter(|l| truthy(l)));
        if call.result.is_none() {
            let pos = (self.conversation.items.len(), 0);
            self.pending
                .register(pos, call.call_id.as_deref(), &call.name);
        }
        match log {
            Some(log) => self.conversation.items.push(Item::Turn(Turn {
                message: log.clone(),
                start,
                line,
                llm: LlmFacts {
                    provider: Some("langchain".into()),
                    ..Default::default()
                },
                calls: vec![call],
                ..Default::default()
            })),
            None => self.conversation.items.push(Item::Call(call)),
        }
    }

    fn message(&mut self, kind: &str, body: &Value, line: Option<u64>) {
        match kind {
            "ai" => self.ai_message(body, line),
            "tool" => {
                let time = self.clock.tick(None);
                let content = body.get("content").cloned().unwrap_or(Value::Null);
                let id = str_field(body, "tool_call_id").unwrap_or("");
                // Older tool messages carry only the tool's name.
                let pos = self.pending.take_by_id(id).or_else(|| {
                    str_field(body, "name").and_then(|name| self.pending.take_by_name(name))
                });
                match pos.and_then(|p| self.conversation.call_mut(p)) {
                    Some(call) => {
                        call.end = Some(time);
                        if str_field(body, "status") == Some("error") {
                            call.fail("status error", Some(message_logs::payload_text(&content)));
                        }
                        call.result = Some(content);
                    }
                    None => self.conversation.orphan_result(
                        self.input,
                        line,
                        time,
                        &format!("tool message for tool_call_id {id}"),
                        &content,
                    ),
                }
                self.prompt.push(body.clone());
            }
            _ => {
                self.clock.tick(None);
                self.prompt.push(body.clone());
            }
        }
    }

    fn ai_message(&mut self, body: &Value, line: Option<u64>) {
        let metadata = body.get("response_metadata");
        let usage = body.get("usage_metadata");
        let mut turn = Turn {
            message: body.clone(),
            prompt: std::mem::take(&mut self.prompt),
            start: self.clock.tick(None),
            line,
            llm: LlmFacts {
                provider: Some("langchain".into()),
                model: metadata
                    .and_then(|m| str_field(m, "model_name").or_else(|| str_field(m, "model")))
                    .map(Into::into),
                input_tokens: jsonrec::tokens_at(usage, &["input_tokens"]),
                output_tokens: jsonrec::tokens_at(usage, &["output_tokens"]),
                finish_reasons: metadata
                    .and_then(|m| {
                        str_field(m, "finish_reason").or_else(|| str_field(m, "stop_reason"))
                    })
                    .map(crate::model::interner::value)
                    .into_iter()
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        };
        let tool_calls = body.get("tool_calls").and_then(Value::as_array);
        for call in tool_calls.into_iter().flatten() {
            turn.calls.push(Call {
                name: str_field(call, "name").unwrap_or("unknown").to_owned(),
                call_id: str_field(call, "id").map(str::to_owned),
                args: call.get("args").cloned(),
                args_field: "tool_calls.args",
                result_field: "tool.content",
                start: self.clock.tick(None),
                line,
                ..Default::default()
            });
        }
        if tool_calls.is_none_or(|c| c.is_empty()) {
            // Older messages keep the provider's raw calls in additional_kwargs only.
            let raw = body
                .get("additional_kwargs")
                .and_then(|k| k.get("tool_calls"))
                .and_then(Value::as_array);
            for call in raw.into_iter().flatten() {
                let function = call.get("function").unwrap_or(call);
                turn.calls.push(Call {
                    name: str_field(function, "name").unwrap_or("unknown").to_owned(),
                    call_id: str_field(call, "id").map(str::to_owned),
                    args: function.get("arguments").cloned(),
                    args_field: "additional_kwargs.tool_calls.function.arguments",
                    result_field: "tool.content",
                    start: self.clock.tick(None),
                    line,
                    ..Default::default()
                });
            }
        }
        for invalid in body
            .get("invalid_tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut call = Call {
                name: str_field(invalid, "name").unwrap_or("unknown").to_owned(),
                call_id: str_field(invalid, "id").map(str::to_owned),
                args: invalid.get("args").cloned(),
                args_field: "invalid_tool_calls.args",
                result_field: "tool.content",
                start: self.clock.tick(None),
                line,
                ..Default::default()
            };
            call.fail(
                "invalid_tool_call",
                invalid.get("error").map(message_logs::error_text),
            );
            turn.calls.push(call);
        }
        let item = self.conversation.items.len();
        for (index, call) in turn.calls.iter().enumerate() {
            check_string_args(&mut self.conversation, self.input, call);
            self.pending
                .register((item, index), call.call_id.as_deref(), &call.name);
        }
        self.conversation.items.push(Item::Turn(turn));
    }
}
