//! arksim tool calls (`{id, name, arguments, result, error, source}`), shared by
//! `simulation.json`, the receiver dump and the A2A extension: turning one into a provisional
//! tool span, arksim's dedup rule, and the error-looking-result check.

use serde_json::Value;

use crate::formats::Input;
use crate::formats::common::jsonrec;
use crate::model::{
    AttrValue, Batch, ErrorInfo, Identity, KindFacts, Problem, RecordRef, Span, SpanKind,
    SpanStatus, ToolFacts,
};

/// One tool call as arksim (or its A2A extension) records it.
pub(crate) struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    pub result: Option<Value>,
    pub error: Option<Value>,
    pub source: Option<String>,
    /// JSON pointer of the call inside its record.
    pub pointer: String,
}

/// Where a tool call's span goes.
pub(crate) struct CallPlacement<'a> {
    pub trace_id: &'a str,
    pub parent_id: &'a str,
    /// Span id used when the call has no id of its own.
    pub fallback_id: String,
    pub time: u64,
    pub format: &'static str,
    pub record: Option<&'a std::sync::Arc<RecordRef>>,
    /// How warnings name the turn or task.
    pub label: &'a str,
}

impl ToolCallRecord {
    pub fn from_json(call: &Value, pointer: String) -> Option<Self> {
        let name = jsonrec::str_at(call, "name")?.to_owned();
        Some(ToolCallRecord {
            id: jsonrec::id_at(call, "id").unwrap_or_default(),
            name,
            arguments: call.get("arguments").cloned().unwrap_or(Value::Null),
            result: call.get("result").filter(|v| !v.is_null()).cloned(),
            error: call.get("error").filter(|v| !v.is_null()).cloned(),
            source: jsonrec::str_at(call, "source").map(str::to_owned),
            pointer,
        })
    }

    /// Captured from a trace (arksim's automatic capture) rather than returned explicitly.
    fn is_traced(&self) -> bool {
        match self.source.as_deref() {
            Some("otel_trace") => true,
            Some("openai_agents") => self.id.starts_with("span_"),
            _ => false,
        }
    }

    fn signature(&self) -> (String, String) {
        (self.name.clone(), canonical_json(&self.arguments))
    }

    pub fn to_span(&self, at: &CallPlacement, input: &Input, batch: &mut Batch) -> Span {
        let span_id = if self.id.is_empty() {
            at.fallback_id.clone()
        } else {
            self.id.clone()
        };
        let call_id =
            (!self.id.is_empty() && !self.id.starts_with("span_")).then(|| self.id.clone());
        let mut span = Span {
            trace_id: at.trace_id.to_owned().into(),
            span_id: span_id.into(),
            parent_span_id: Some(at.parent_id.to_owned().into()),
            name: self.name.clone().into(),
            kind: SpanKind::Tool,
            status: SpanStatus::Ok,
            start_unix_nano: at.time,
            end_unix_nano: at.time,
            extras: crate::model::SpanExtras {
                identity: Identity {
                    invocation_id: Some(at.trace_id.into()),
                    ..Default::default()
                },
                input: jsonrec::payload_null_is_absent(
                    "arguments",
                    Some(&self.arguments),
                    at.record,
                    &format!("{}/arguments", self.pointer),
                )
                .into(),
                output: jsonrec::payload_null_is_absent(
                    "result",
                    self.result.as_ref(),
                    at.record,
                    &format!("{}/result", self.pointer),
                )
                .into(),
                ..Default::default()
            }
            .into(),
            facts: KindFacts::from(Box::new(ToolFacts {
                name: Some(self.name.as_str().into()),
                call_id: call_id.map(Into::into),
            })),
            provenance: input.span_provenance(at.format.into()),
            ..Default::default()
        };
        if !self.arguments.is_object() && !self.arguments.is_null() {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!(
                    "{}: tool {} arguments are not a JSON object",
                    at.label, self.name
                ),
            ));
        }
        if let Some(source) = &self.source {
            span.attributes.push((
                "arksim.tool_call.source".into(),
                AttrValue::Str(source.clone().into()),
            ));
        }
        if let Some(error) = &self.error {
            span.status = SpanStatus::Error;
            span.set_error(Some(ErrorInfo {
                error_type: None,
                message: Some(jsonrec::text_of(error).into()),
                ..Default::default()
            }));
        } else if let Some(result) = self.result.as_ref().and_then(Value::as_str)
            && looks_like_tool_error(result)
        {
            span.status = SpanStatus::Error;
            span.set_error(Some(ErrorInfo {
                error_type: Some("error-looking result".into()),
                message: Some(result.into()),
                ..Default::default()
            }));
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!(
                    "{}: tool {} has error: null but its result looks like a tool error (arksim keeps the explicit copy without the error); counted as failed",
                    at.label, self.name
                ),
            ));
        }
        jsonrec::mark_provisional(&mut span);
        span
    }
}

/// The SDK's stand-in text for a raising tool, and other results that plainly report a failure.
fn looks_like_tool_error(result: &str) -> bool {
    let lower = result.trim_start().to_lowercase();
    [
        "an error occurred while running the tool",
        "error:",
        "error running tool",
        "exception:",
        "traceback (most recent call last)",
    ]
    .iter()
    .any(|prefix| lower.starts_with(prefix))
}

/// JSON with object keys sorted, so equal arguments compare equal however they were written.
pub(crate) fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        map.get(k).map(canonical_json).unwrap_or_default()
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// arksim's merge rule applied to a recorded list: explicit calls are kept; a traced call is
/// dropped when a kept call has its id, or its name and canonical arguments. Returns the calls
/// in their recorded order and how many were dropped.
pub(crate) fn dedup(calls: Vec<ToolCallRecord>) -> (Vec<ToolCallRecord>, usize) {
    let explicit_signatures: Vec<(String, String)> = calls
        .iter()
        .filter(|c| !c.is_traced())
        .map(ToolCallRecord::signature)
        .collect();
    let mut kept_ids: Vec<String> = Vec::new();
    let mut kept = Vec::with_capacity(calls.len());
    let mut dropped = 0;
    // Explicit copies first, so their ids win over traced ones recorded earlier.
    let (explicit, traced): (Vec<_>, Vec<_>) = calls
        .into_iter()
        .enumerate()
        .partition(|(_, c)| !c.is_traced());
    for (position, call) in explicit.into_iter().chain(traced) {
        let duplicate_id = !call.id.is_empty() && kept_ids.contains(&call.id);
        let duplicate_signature =
            call.is_traced() && explicit_signatures.contains(&call.signature());
        if duplicate_id || duplicate_signature {
            dropped += 1;
            continue;
        }
        if !call.id.is_empty() {
            kept_ids.push(call.id.clone());
        }
        kept.push((position, call));
    }
    kept.sort_by_key(|(position, _)| *position);
    (kept.into_iter().map(|(_, c)| c).collect(), dropped)
}
