//! OpenAI Chat Completions message logs: a list of messages (JSON or JSONL), `{"messages": …}`,
//! a `choices` response, or one assistant message. Assistant `tool_calls` (and the legacy
//! `function_call`) become tool spans; `tool` messages are paired to them by `tool_call_id`,
//! legacy `function` messages by name. toolscore drops those results; here they are the tool
//! spans' outputs. A tool message with `is_error: true`, a truthy `error`, or `status: "error"`
//! marks its call failed (OpenAI has no standard error flag; these are what loggers add).
//! The Responses API shape (response objects and item lists) is read by
//! [`super::openai_responses`] under the same format name.

use serde_json::Value;

use super::dialect::Dialect;
use super::openai_responses;
use crate::formats::common::jsonrec;
use crate::formats::message_logs::{
    self, Call, Clock, Conversation, Doc, Item, PendingCalls, Turn, check_string_args, str_field,
    truthy,
};
use crate::formats::{Format, Input};
use crate::model::{AttrValue, Batch, LlmFacts};

pub struct OpenAiChat;

impl Format for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai-chat"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_logs::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_logs::detect_dialect(input, Dialect::OpenAi)
    }
    fn parse(&self, input: &Input) -> Batch {
        message_logs::parse_conversation(input, self.name(), |doc| {
            if openai_responses::is_responses(&doc.root) {
                (openai_responses::read(input, doc), "openai responses")
            } else {
                (read(input, doc), "openai chat")
            }
        })
    }
}

/// Messages with their file lines, plus response-level facts shared by every turn.
struct Source<'d> {
    messages: Vec<(&'d Value, Option<u64>)>,
    model: Option<String>,
    usage: Option<&'d Value>,
}

fn source(doc: &Doc) -> Source<'_> {
    let root = &doc.root;
    let mut src = Source {
        messages: Vec::new(),
        model: str_field(root, "model").map(str::to_owned),
        usage: root.get("usage"),
    };
    if let Some(items) = root.as_array() {
        src.messages = items
            .iter()
            .enumerate()
            .map(|(i, m)| (m, doc.line_of(i)))
            .collect();
    } else if let Some(items) = root.get("messages").and_then(Value::as_array) {
        src.messages = items.iter().map(|m| (m, None)).collect();
    } else if let Some(choices) = root.get("choices").and_then(Value::as_array) {
        src.messages = choices
            .iter()
            .filter_map(|c| c.get("message"))
            .map(|m| (m, None))
            .collect();
    } else {
        src.messages = vec![(root, None)];
    }
    src
}

fn native_id(root: &Value) -> Option<String> {
    ["id", "conversation_id", "thread_id", "session_id"]
        .iter()
        .find_map(|k| str_field(root, k))
        .map(str::to_owned)
}

fn read(input: &Input, doc: &Doc) -> Conversation {
    let src = source(doc);
    let mut conversation = Conversation {
        native_id: native_id(&doc.root),
        ..Default::default()
    };
    let finish_reasons: crate::model::FinishReasons = doc
        .root
        .get("choices")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| str_field(c, "finish_reason").map(crate::model::interner::value))
                .collect()
        })
        .unwrap_or_default();
    let mut clock = Clock::for_input(input);
    let mut pending = PendingCalls::default();
    let mut prompt: Vec<Value> = Vec::new();
    for (message, line) in src.messages {
        let role = str_field(message, "role").unwrap_or("");
        let is_turn = role == "assistant"
            || present(message, "tool_calls")
            || present(message, "function_call");
        if is_turn {
            let mut turn = Turn {
                message: message.clone(),
                prompt: std::mem::take(&mut prompt),
                start: clock.tick(None),
                line,
                llm: LlmFacts {
                    provider: Some("openai".into()),
                    model: str_field(message, "model")
                        .map(str::to_owned)
                        .or_else(|| src.model.clone())
                        .map(Into::into),
                    input_tokens: jsonrec::tokens_at(src.usage, &["prompt_tokens", "input_tokens"]),
                    output_tokens: jsonrec::tokens_at(
                        src.usage,
                        &["completion_tokens", "output_tokens"],
                    ),
                    finish_reasons: finish_reasons.clone(),
                    ..Default::default()
                },
                ..Default::default()
            };
            turn.calls = requested_calls(message, line, &mut clock);
            let item = conversation.items.len();
            for (index, call) in turn.calls.iter().enumerate() {
                check_string_args(&mut conversation, input, call);
                pending.register((item, index), call.call_id.as_deref(), &call.name);
            }
            conversation.items.push(Item::Turn(turn));
            continue;
        }
        let time = clock.tick(None);
        if matches!(role, "tool" | "function") {
            attach_result(input, &mut conversation, &mut pending, message, line, time);
        }
        prompt.push(message.clone());
    }
    let unpaired = pending.unpaired();
    if unpaired > 0 {
        conversation.warn(
            input,
            None,
            format!("{unpaired} tool call(s) have no result in the log"),
        );
    }
    conversation
}

/// Present and not null: SDK dumps often carry `"function_call": null`.
fn present(message: &Value, key: &str) -> bool {
    message.get(key).is_some_and(|v| !v.is_null())
}

fn requested_calls(message: &Value, line: Option<u64>, clock: &mut Clock) -> Vec<Call> {
    let mut calls = Vec::new();
    for entry in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // `function` tools carry name + arguments; `custom` tools carry name + free-text input.
        let (body, args_key) = match (entry.get("function"), entry.get("custom")) {
            (Some(function), _) => (function, "arguments"),
            (None, Some(custom)) => (custom, "input"),
            (None, None) => (entry, "arguments"),
        };
        calls.push(Call {
            name: str_field(body, "name").unwrap_or("unknown").to_owned(),
            call_id: str_field(entry, "id").map(str::to_owned),
            args: body.get(args_key).cloned(),
            args_field: "function.arguments",
            result_field: "tool.content",
            start: clock.tick(None),
            line,
            attributes: str_field(entry, "type")
                .map(|t| vec![("openai.tool_call.type".into(), AttrValue::Str(t.into()))])
                .unwrap_or_default(),
            ..Default::default()
        });
    }
    if let Some(function) = message.get("function_call").filter(|f| !f.is_null()) {
        calls.push(Call {
            name: str_field(function, "name").unwrap_or("unknown").to_owned(),
            args: function.get("arguments").cloned(),
            args_field: "function_call.arguments",
            result_field: "function.content",
            start: clock.tick(None),
            line,
            ..Default::default()
        });
    }
    calls
}

fn attach_result(
    input: &Input,
    conversation: &mut Conversation,
    pending: &mut PendingCalls,
    message: &Value,
    line: Option<u64>,
    time: u64,
) {
    let content = message.get("content").cloned().unwrap_or(Value::Null);
    let (pos, what) = match (
        str_field(message, "tool_call_id"),
        str_field(message, "name"),
    ) {
        (Some(id), _) => (
            pending.take_by_id(id),
            format!("tool result for tool_call_id {id}"),
        ),
        (None, Some(name)) => (
            pending.take_by_name(name),
            format!("function result for {name}"),
        ),
        (None, None) => (None, "tool message without tool_call_id or name".to_owned()),
    };
    let Some(call) = pos.and_then(|p| conversation.call_mut(p)) else {
        conversation.orphan_result(input, line, time, &what, &content);
        return;
    };
    call.end = Some(time);
    let failed = message.get("is_error").and_then(Value::as_bool) == Some(true)
        || message.get("error").is_some_and(truthy)
        || str_field(message, "status") == Some("error");
    if failed {
        match message.get("error").filter(|e| truthy(e)) {
            Some(error) => call.fail("tool_error", Some(message_logs::error_text(error))),
            None => call.fail_with_result("tool_error", message_logs::payload_text(&content)),
        }
    }
    call.result = Some(content);
}
