//! Shared machinery for formats that hold one agent run per file with no span tree of their own:
//! provider message logs (OpenAI, Anthropic, Gemini, LangChain), MCP JSON-RPC sessions and
//! toolscore's custom call lists.
//!
//! A format reads its file into a [`Conversation`] (assistant turns with their tool calls, or
//! bare calls) and [`build`] turns that into spans:
//!
//! * **Invocation id**: the log's own id when it has one (a response `id`, a `conversation_id`,
//!   …), else the source path exactly as given (`dir/trace.json`), so two `trace.json` files in
//!   different folders never merge. Network sources use the endpoint plus a content hash.
//! * **Tree**: one root span (kind `agent`) per file; each assistant turn is an `llm` span whose
//!   requested tool calls are its `tool` children; calls without a turn hang off the root.
//! * **Time**: logs rarely carry timestamps, so every record gets a *synthetic* start from a
//!   monotonic [`Clock`]: the n-th record starts at n nanoseconds (start order = log order). A
//!   record that carries a real timestamp uses it (as long as time does not go backwards), and a
//!   recorded duration sets the end. A tool call ends when its result arrives in the log.
//! * **Payloads**: arguments, results and messages are kept inline up to
//!   [`INLINE_PAYLOAD_LIMIT`]; bigger ones stay in the file and are found again by re-parsing it.
//! * **Tailed JSONL** (a chunk parsed with `load_chunk_as`): the chunk's spans join the same
//!   invocation under ids prefixed with the chunk's first line; results are paired within a
//!   chunk only (a result whose call was in an earlier chunk is kept as an unpaired event).

use serde_json::Value;

use super::Input;
use crate::model::{AttrValue, ErrorInfo, LlmFacts, Payload, Problem, SpanEvent};

pub mod anthropic;
mod build;
mod clock;
pub mod dialect;
pub mod gemini;
pub mod input;
pub mod langchain;
pub mod openai_chat;
pub mod openai_responses;
pub mod toolscore_custom;

pub use build::{INLINE_PAYLOAD_LIMIT, build, invocation_id, parse_conversation, reload_payload};
pub use clock::*;
pub use input::{Doc, detect_dialect, is_gold_name, read_or_fail};

/// One tool call as a log records it.
#[derive(Debug, Default)]
pub struct Call {
    pub name: String,
    pub call_id: Option<String>,
    /// Arguments exactly as recorded (a JSON string stays a string, so its text is kept).
    pub args: Option<Value>,
    pub args_field: &'static str,
    pub result: Option<Value>,
    pub result_field: &'static str,
    pub error: Option<ErrorInfo>,
    pub start: u64,
    pub end: Option<u64>,
    pub line: Option<u64>,
    pub attributes: Vec<(String, AttrValue)>,
}

impl Call {
    pub fn fail(&mut self, error_type: &str, message: Option<String>) {
        self.error = Some(ErrorInfo {
            error_type: Some(error_type.into()),
            message: message.map(Into::into),
            ..Default::default()
        });
    }

    /// A failure whose only message is the tool's result text: that text is a payload, so
    /// views show it only when revealed.
    pub fn fail_with_result(&mut self, error_type: &str, result_text: String) {
        self.error = Some(ErrorInfo {
            error_type: Some(error_type.into()),
            message: Some(result_text.into()),
            message_is_result: true,
        });
    }
}

/// One assistant turn: the message, what led to it, and the calls it requested.
#[derive(Debug, Default)]
pub struct Turn {
    pub message: Value,
    /// The messages between the previous assistant turn and this one.
    pub prompt: Vec<Value>,
    pub llm: LlmFacts,
    pub calls: Vec<Call>,
    pub start: u64,
    pub line: Option<u64>,
    pub attributes: Vec<(String, AttrValue)>,
}

/// Something in the log that is neither a turn nor a call (an assistant-less run, MCP
/// protocol traffic) but still belongs to the run.
#[derive(Debug)]
pub enum Item {
    Turn(Turn),
    Call(Call),
}

/// Everything a format read from one file, ready for [`build`].
#[derive(Debug, Default)]
pub struct Conversation {
    pub native_id: Option<String>,
    pub items: Vec<Item>,
    pub root_attributes: Vec<(String, AttrValue)>,
    pub root_events: Vec<SpanEvent>,
    pub problems: Vec<Problem>,
}

impl Conversation {
    /// `line` is a file line (as [`Doc::line_of`] gives it).
    pub fn warn(&mut self, input: &Input, line: Option<u64>, message: impl Into<String>) {
        self.problems
            .push(Problem::warning(input.origin, line, message));
    }

    pub fn call_mut(&mut self, (item, call): CallPos) -> Option<&mut Call> {
        match self.items.get_mut(item)? {
            Item::Turn(turn) => turn.calls.get_mut(call),
            Item::Call(c) => (call == 0).then_some(c),
        }
    }

    /// A result (or failure) that names no known call: kept as a root event, and warned.
    pub fn orphan_result(
        &mut self,
        input: &Input,
        line: Option<u64>,
        time: u64,
        what: &str,
        content: &Value,
    ) {
        self.warn(
            input,
            line,
            format!("{what} matches no earlier tool call; kept on the root"),
        );
        self.root_events.push(SpanEvent {
            time_unix_nano: time,
            name: "unpaired tool result".into(),
            attributes: vec![
                ("what".into(), AttrValue::Str(what.into())),
                (
                    "content".into(),
                    AttrValue::Payload(std::sync::Arc::new(Payload::inline(
                        "content",
                        payload_text(content),
                    ))),
                ),
            ]
            .into(),
        });
    }

    pub fn call_count(&self) -> usize {
        self.items
            .iter()
            .map(|item| match item {
                Item::Turn(turn) => turn.calls.len(),
                Item::Call(_) => 1,
            })
            .sum()
    }
}

/// Tool calls still waiting for their result, found by call id or (for logs without ids) by
/// name in request order. Each call is paired at most once.
#[derive(Debug, Default)]
pub struct PendingCalls {
    by_id: std::collections::HashMap<String, std::collections::VecDeque<CallPos>>,
    by_name: std::collections::HashMap<String, std::collections::VecDeque<CallPos>>,
    done: std::collections::HashSet<CallPos>,
}

/// Where a call sits: item index in [`Conversation::items`], call index inside a turn.
pub type CallPos = (usize, usize);

impl PendingCalls {
    pub fn register(&mut self, pos: CallPos, id: Option<&str>, name: &str) {
        if let Some(id) = id {
            self.by_id.entry(id.to_owned()).or_default().push_back(pos);
        }
        self.by_name
            .entry(name.to_owned())
            .or_default()
            .push_back(pos);
    }

    fn take_from(
        queue: Option<&mut std::collections::VecDeque<CallPos>>,
        done: &mut std::collections::HashSet<CallPos>,
    ) -> Option<CallPos> {
        let queue = queue?;
        while let Some(pos) = queue.pop_front() {
            if done.insert(pos) {
                return Some(pos);
            }
        }
        None
    }

    pub fn take_by_id(&mut self, id: &str) -> Option<CallPos> {
        Self::take_from(self.by_id.get_mut(id), &mut self.done)
    }

    pub fn take_by_name(&mut self, name: &str) -> Option<CallPos> {
        Self::take_from(self.by_name.get_mut(name), &mut self.done)
    }

    /// Calls never paired with a result.
    pub fn unpaired(&self) -> usize {
        let mut all: std::collections::HashSet<CallPos> = std::collections::HashSet::new();
        for queue in self.by_name.values() {
            all.extend(queue.iter().copied());
        }
        all.difference(&self.done).count()
    }
}

/// The text a payload shows: strings as they are (a JSON string's text is kept verbatim),
/// anything else as compact JSON.
pub fn payload_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A JSON string holding arguments: parsed value, or `None` (caller warns) when invalid.
pub fn parse_json_string(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// Checks a call's arguments: a string must hold JSON (warned otherwise).
pub fn check_string_args(conversation: &mut Conversation, input: &Input, call: &Call) {
    if let Some(Value::String(text)) = &call.args
        && parse_json_string(text).is_none()
    {
        conversation.warn(
            input,
            call.line,
            format!(
                "arguments were not valid JSON for call {} ({}); kept as text",
                call.name,
                call.call_id.as_deref().unwrap_or("no id")
            ),
        );
    }
}

/// A string field, if present and a string.
pub fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key)?.as_str()
}

/// A result or error value is "truthy" the way a log writer (and toolscore, in Python) means it:
/// not null, not false, not zero, not an empty string, array or object.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
    }
}

/// Text of an error value: a string as is, an object's `message`, else compact JSON.
pub fn error_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| value.to_string()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthiness_is_pythons_so_a_zero_error_flag_is_no_error() {
        for falsy in [
            Value::Null,
            Value::Bool(false),
            serde_json::json!(0),
            serde_json::json!(0.0),
            serde_json::json!(""),
            serde_json::json!([]),
            serde_json::json!({}),
        ] {
            assert!(!truthy(&falsy), "{falsy} should be falsy");
        }
        for truthy_value in [
            serde_json::json!(1),
            serde_json::json!(-0.5),
            serde_json::json!("x"),
        ] {
            assert!(truthy(&truthy_value), "{truthy_value} should be truthy");
        }
    }

    #[test]
    fn clock_is_monotonic_and_prefers_real_time() {
        let mut clock = Clock::default();
        assert_eq!(clock.tick(None), 1);
        assert_eq!(clock.tick(Some(100)), 100);
        assert_eq!(clock.tick(Some(50)), 101);
        assert!(clock.went_backwards);
        assert_eq!(clock.tick(None), 102);
    }

    #[test]
    fn timestamps_scale_by_magnitude() {
        let s = serde_json::json!(1760000000.5);
        let ms = serde_json::json!(1760000000500u64);
        assert_eq!(timestamp_nanos(&s), timestamp_nanos(&ms));
        assert_eq!(timestamp_nanos(&serde_json::json!(-1)), None);
        assert_eq!(
            timestamp_nanos(&serde_json::json!("2025-10-09T08:53:20.5Z")),
            timestamp_nanos(&s)
        );
        assert_eq!(timestamp_nanos(&serde_json::json!("yesterday")), None);
    }
}
