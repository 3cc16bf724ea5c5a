//! The OpenAI Responses API shape, read by the `openai-chat` format: a response object
//! (`{"object": "response", "output": […]}`) or a list of input/output items (JSON or JSONL).
//!
//! Consecutive model items (`function_call`, `custom_tool_call`, `mcp_call`, built-in
//! `*_call` tools, assistant `message`, `reasoning`) form one assistant turn; a
//! `function_call_output` / `custom_tool_call_output` pairs with its call by `call_id` and
//! closes the turn, as does a user message. `mcp_call` items carry their own output and error.

use serde_json::Value;

use crate::formats::Input;
use crate::formats::common::jsonrec;
use crate::formats::message_logs::{
    Call, Clock, Conversation, Doc, Item, PendingCalls, Turn, check_string_args, str_field, truthy,
};
use crate::model::LlmFacts;

/// Item types that only the Responses API uses.
const RESPONSES_TYPES: &[&str] = &[
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "mcp_call",
    "reasoning",
];

pub fn is_responses_item(item: &Value) -> bool {
    str_field(item, "type").is_some_and(|t| RESPONSES_TYPES.contains(&t))
}

/// A response object, or a list holding Responses items.
pub fn is_responses(root: &Value) -> bool {
    match root {
        Value::Array(items) => items.iter().any(is_responses_item),
        other => {
            str_field(other, "object") == Some("response")
                && other.get("output").is_some_and(Value::is_array)
        }
    }
}

pub fn read(input: &Input, doc: &Doc) -> Conversation {
    let root = &doc.root;
    let items: Vec<(&Value, Option<u64>)> = match root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (v, doc.line_of(i)))
            .collect(),
        other => other
            .get("output")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(|v| (v, None)).collect())
            .unwrap_or_default(),
    };
    let usage = root.get("usage");
    let mut reader = Reader {
        input,
        conversation: Conversation {
            native_id: str_field(root, "id").map(str::to_owned),
            ..Default::default()
        },
        clock: Clock::for_input(input),
        pending: PendingCalls::default(),
        prompt: Vec::new(),
        open_turn: None,
        llm: LlmFacts {
            provider: Some("openai".into()),
            model: str_field(root, "model").map(Into::into),
            input_tokens: jsonrec::tokens_at(usage, &["input_tokens"]),
            output_tokens: jsonrec::tokens_at(usage, &["output_tokens"]),
            ..Default::default()
        },
    };
    for (item, line) in items {
        reader.item(item, line);
    }
    let mut conversation = reader.conversation;
    let unpaired = reader.pending.unpaired();
    if unpaired > 0 {
        conversation.warn(
            input,
            None,
            format!("{unpaired} tool call(s) have no output in the log"),
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
    /// Item index of the assistant turn still collecting model items.
    open_turn: Option<usize>,
    llm: LlmFacts,
}

impl Reader<'_, '_> {
    fn turn(&mut self, item: &Value, line: Option<u64>) -> usize {
        if let Some(index) = self.open_turn
            && let Some(Item::Turn(turn)) = self.conversation.items.get_mut(index)
        {
            if let Some(parts) = turn.message.as_array_mut() {
                parts.push(item.clone());
            }
            return index;
        }
        let turn = Turn {
            message: Value::Array(vec![item.clone()]),
            prompt: std::mem::take(&mut self.prompt),
            start: self.clock.tick(None),
            line,
            llm: self.llm.clone(),
            ..Default::default()
        };
        self.conversation.items.push(Item::Turn(turn));
        let index = self.conversation.items.len() - 1;
        self.open_turn = Some(index);
        index
    }

    fn item(&mut self, item: &Value, line: Option<u64>) {
        let kind = str_field(item, "type").unwrap_or("");
        let role = str_field(item, "role");
        match kind {
            "function_call_output" | "custom_tool_call_output" => {
                self.open_turn = None;
                let time = self.clock.tick(None);
                let output = item.get("output").cloned().unwrap_or(Value::Null);
                let id = str_field(item, "call_id").unwrap_or("");
                match self
                    .pending
                    .take_by_id(id)
                    .and_then(|p| self.conversation.call_mut(p))
                {
                    Some(call) => {
                        call.end = Some(time);
                        call.result = Some(output);
                    }
                    None => self.conversation.orphan_result(
                        self.input,
                        line,
                        time,
                        &format!("{kind} for call_id {id}"),
                        &output,
                    ),
                }
                self.prompt.push(item.clone());
            }
            _ if kind.ends_with("_call") => self.call(kind, item, line),
            "reasoning" => {
                self.turn(item, line);
            }
            "message" | "" if role == Some("assistant") => {
                self.turn(item, line);
            }
            _ => {
                self.open_turn = None;
                self.clock.tick(None);
                self.prompt.push(item.clone());
            }
        }
    }

    fn call(&mut self, kind: &str, item: &Value, line: Option<u64>) {
        let index = self.turn(item, line);
        let (name, args, args_field) = match kind {
            "function_call" | "mcp_call" => (
                str_field(item, "name").unwrap_or("unknown"),
                item.get("arguments"),
                "arguments",
            ),
            "custom_tool_call" => (
                str_field(item, "name").unwrap_or("unknown"),
                item.get("input"),
                "input",
            ),
            // Built-in tools (web_search_call, file_search_call, computer_call, …).
            builtin => (
                builtin.strip_suffix("_call").unwrap_or(builtin),
                item.get("action").or_else(|| item.get("queries")),
                "action",
            ),
        };
        let mut call = Call {
            name: name.to_owned(),
            call_id: str_field(item, "call_id")
                .or_else(|| str_field(item, "id"))
                .map(str::to_owned),
            args: args.cloned(),
            args_field,
            result_field: "output",
            start: self.clock.tick(None),
            line,
            ..Default::default()
        };
        if kind == "mcp_call" {
            call.result = item.get("output").filter(|o| !o.is_null()).cloned();
            if let Some(error) = item.get("error").filter(|e| truthy(e)) {
                call.fail("mcp_call.error", Some(super::error_text(error)));
            }
        }
        if str_field(item, "status") == Some("failed") && call.error.is_none() {
            call.fail("status failed", None);
        }
        check_string_args(&mut self.conversation, self.input, &call);
        let Some(Item::Turn(turn)) = self.conversation.items.get_mut(index) else {
            return;
        };
        // Only client-side calls wait for an output item; hosted ones carry their own.
        if matches!(kind, "function_call" | "custom_tool_call") {
            self.pending.register(
                (index, turn.calls.len()),
                call.call_id.as_deref(),
                &call.name,
            );
        }
        turn.calls.push(call);
    }
}
