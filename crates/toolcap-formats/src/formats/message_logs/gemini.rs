//! Gemini logs: a `candidates` response, a `contents` request, or a list of contents / responses
//! (JSON or JSONL), with camelCase or snake_case keys. `functionCall` parts in model turns
//! become tool spans; `functionResponse` parts are paired by `id` when present, else by name in
//! call order (toolscore ignores them). A response holding `error` marks its call failed.

use serde_json::Value;

use super::dialect::Dialect;
use crate::formats::common::jsonrec;
use crate::formats::message_logs::{
    self, Call, Clock, Conversation, Doc, Item, PendingCalls, Turn, check_string_args, str_field,
    truthy,
};
use crate::formats::{Format, Input};
use crate::model::{AttrValue, Batch, LlmFacts};

pub struct GeminiContents;

impl Format for GeminiContents {
    fn name(&self) -> &'static str {
        "gemini"
    }
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        message_logs::reload_payload(self, record, locator)
    }
    fn detect(&self, input: &Input) -> Option<String> {
        message_logs::detect_dialect(input, Dialect::Gemini)
    }
    fn parse(&self, input: &Input) -> Batch {
        message_logs::parse_conversation(input, self.name(), |doc| (read(input, doc), "gemini"))
    }
}

/// A key in camelCase or snake_case.
fn get<'v>(value: &'v Value, camel: &str, snake: &str) -> Option<&'v Value> {
    let non_null = |v: &&Value| !v.is_null();
    value
        .get(camel)
        .filter(non_null)
        .or_else(|| value.get(snake).filter(non_null))
}

/// One content entry with the response-level facts that apply to it.
struct Entry<'d> {
    content: &'d Value,
    line: Option<u64>,
    response: Option<&'d Value>,
    candidate: Option<&'d Value>,
    candidate_index: Option<usize>,
}

fn push_response<'d>(out: &mut Vec<Entry<'d>>, response: &'d Value, line: Option<u64>) {
    let candidates = response
        .get("candidates")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, candidate) in candidates.iter().enumerate() {
        if let Some(content) = candidate.get("content") {
            out.push(Entry {
                content,
                line,
                response: Some(response),
                candidate: Some(candidate),
                candidate_index: (candidates.len() > 1).then_some(index),
            });
        }
    }
}

fn entries(doc: &Doc) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    let plain = |content, line| Entry {
        content,
        line,
        response: None,
        candidate: None,
        candidate_index: None,
    };
    let root = &doc.root;
    let items: Vec<(&Value, Option<u64>)> = match root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (v, doc.line_of(i)))
            .collect(),
        other => {
            if let Some(contents) = other.get("contents").and_then(Value::as_array) {
                out.extend(contents.iter().map(|c| plain(c, None)));
            }
            if other.get("candidates").is_some() {
                push_response(&mut out, other, None);
            } else if other.get("contents").is_none() {
                out.push(plain(other, None));
            }
            return out;
        }
    };
    for (item, line) in items {
        if item.get("candidates").is_some() {
            push_response(&mut out, item, line);
        } else if let Some(content) = item.get("content").filter(|c| c.get("parts").is_some()) {
            out.push(Entry {
                content,
                line,
                response: None,
                candidate: Some(item),
                candidate_index: None,
            });
        } else {
            out.push(plain(item, line));
        }
    }
    out
}

fn parts(content: &Value) -> &[Value] {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn read(input: &Input, doc: &Doc) -> Conversation {
    let mut conversation = Conversation {
        native_id: get(&doc.root, "responseId", "response_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Default::default()
    };
    let mut clock = Clock::for_input(input);
    let mut pending = PendingCalls::default();
    let mut prompt: Vec<Value> = Vec::new();
    for entry in entries(doc) {
        let content = entry.content;
        let role = str_field(content, "role").unwrap_or("");
        let has_call = parts(content)
            .iter()
            .any(|p| get(p, "functionCall", "function_call").is_some());
        let from_response =
            entry.candidate.is_some() && !matches!(role, "user" | "function" | "tool");
        if matches!(role, "model" | "assistant") || has_call || from_response {
            let usage = entry
                .response
                .and_then(|r| get(r, "usageMetadata", "usage_metadata"));
            let mut turn = Turn {
                message: content.clone(),
                prompt: std::mem::take(&mut prompt),
                start: clock.tick(None),
                line: entry.line,
                llm: LlmFacts {
                    provider: Some("gemini".into()),
                    model: entry
                        .response
                        .and_then(|r| get(r, "modelVersion", "model_version"))
                        .and_then(Value::as_str)
                        .map(Into::into),
                    input_tokens: jsonrec::tokens_at(
                        usage,
                        &["promptTokenCount", "prompt_token_count"],
                    ),
                    output_tokens: jsonrec::tokens_at(
                        usage,
                        &["candidatesTokenCount", "candidates_token_count"],
                    ),
                    cache_read_tokens: jsonrec::tokens_at(
                        usage,
                        &["cachedContentTokenCount", "cached_content_token_count"],
                    ),
                    finish_reasons: entry
                        .candidate
                        .and_then(|c| get(c, "finishReason", "finish_reason"))
                        .and_then(Value::as_str)
                        .map(crate::model::interner::value)
                        .into_iter()
                        .collect(),
                    ..Default::default()
                },
                ..Default::default()
            };
            if let Some(index) = entry.candidate_index {
                turn.attributes.push((
                    "gemini.candidate_index".into(),
                    AttrValue::Int(index as i64),
                ));
            }
            for part in parts(content) {
                let Some(function) = get(part, "functionCall", "function_call") else {
                    continue;
                };
                turn.calls.push(Call {
                    name: str_field(function, "name").unwrap_or("unknown").to_owned(),
                    call_id: str_field(function, "id").map(str::to_owned),
                    args: function
                        .get("args")
                        .or_else(|| function.get("arguments"))
                        .cloned(),
                    args_field: "functionCall.args",
                    result_field: "functionResponse.response",
                    start: clock.tick(None),
                    line: entry.line,
                    ..Default::default()
                });
            }
            let item = conversation.items.len();
            for (index, call) in turn.calls.iter().enumerate() {
                check_string_args(&mut conversation, input, call);
                pending.register((item, index), call.call_id.as_deref(), &call.name);
            }
            conversation.items.push(Item::Turn(turn));
            continue;
        }
        for part in parts(content) {
            if let Some(response) = get(part, "functionResponse", "function_response") {
                let time = clock.tick(None);
                attach(
                    input,
                    &mut conversation,
                    &mut pending,
                    response,
                    entry.line,
                    time,
                );
            }
        }
        prompt.push(content.clone());
    }
    let unpaired = pending.unpaired();
    if unpaired > 0 {
        conversation.warn(
            input,
            None,
            format!("{unpaired} function call(s) have no functionResponse in the log"),
        );
    }
    conversation
}

fn attach(
    input: &Input,
    conversation: &mut Conversation,
    pending: &mut PendingCalls,
    response: &Value,
    line: Option<u64>,
    time: u64,
) {
    let name = str_field(response, "name").unwrap_or("");
    let pos = match str_field(response, "id") {
        Some(id) => pending
            .take_by_id(id)
            .or_else(|| pending.take_by_name(name)),
        None => pending.take_by_name(name),
    };
    let body = response.get("response").cloned().unwrap_or(Value::Null);
    let Some(call) = pos.and_then(|p| conversation.call_mut(p)) else {
        conversation.orphan_result(
            input,
            line,
            time,
            &format!("functionResponse for {name}"),
            &body,
        );
        return;
    };
    call.end = Some(time);
    if let Some(error) = body.get("error").filter(|e| truthy(e)) {
        call.fail(
            "functionResponse.error",
            Some(message_logs::error_text(error)),
        );
    }
    call.result = Some(body);
}
