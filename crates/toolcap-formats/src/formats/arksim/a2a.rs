//! A2A `Task` JSON carrying arksim's tool-call-capture extension: tool calls listed under
//! `Artifact.metadata["https://arksim.arklex.ai/a2a/tool-call-capture/v1/tool_calls"]`.
//!
//! Accepts one Task, a JSON-RPC response wrapping one (`{"result": Task}`), a list of them, or
//! a JSONL stream of `artifact-update` events and `task` snapshots. As in arksim's client, a
//! task snapshot replaces the artifacts accumulated from earlier updates of that task.
//! Each task is one invocation (id = the task id) with a root span and one tool span per call.
//! Artifacts that carry the calls without listing the extension URI are still read, with a
//! warning (arksim would drop them).

use std::collections::HashMap;

use serde_json::Value;

use super::calls::{CallPlacement, ToolCallRecord};
use crate::formats::common::{jsonrec, timestamp};
use crate::formats::{Format, Input};
use crate::model::{AttrValue, Batch, ErrorInfo, Identity, Problem, Span, SpanKind, SpanStatus};

pub struct A2aTask;

const NAME: &str = "a2a-task";
pub const EXTENSION_URI: &str = "https://arksim.arklex.ai/a2a/tool-call-capture/v1";
const KEY_PREFIX: &str = "https://arksim.arklex.ai/a2a/tool-call-capture/";

/// A Task or event, unwrapped from a JSON-RPC envelope.
fn unwrap(value: &Value) -> &Value {
    value
        .get("result")
        .filter(|r| r.is_object())
        .unwrap_or(value)
}

fn kind_of(value: &Value) -> Option<&'static str> {
    let value = unwrap(value);
    match jsonrec::str_at(value, "kind") {
        Some("task") => Some("task"),
        Some("artifact-update") => Some("artifact-update"),
        Some("status-update") => Some("status-update"),
        _ if value.get("artifacts").is_some_and(Value::is_array)
            && value.get("id").is_some()
            && (value.get("status").is_some() || value.get("contextId").is_some()) =>
        {
            Some("task")
        }
        _ if value.get("artifact").is_some() && value.get("taskId").is_some() => {
            Some("artifact-update")
        }
        _ => None,
    }
}

impl Format for A2aTask {
    fn name(&self) -> &'static str {
        NAME
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        let first = match head {
            Value::Array(items) => items.first()?,
            other => other,
        };
        kind_of(first).map(|kind| format!("A2A {kind} JSON (tool calls from artifact metadata)"))
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let mut items: Vec<(Value, String, Option<u64>)> = Vec::new();
        match serde_json::from_slice::<Value>(input.bytes) {
            Ok(Value::Array(list)) => {
                for (i, v) in list.into_iter().enumerate() {
                    items.push((v, format!("/{i}"), None));
                }
            }
            Ok(doc) => items.push((doc, String::new(), None)),
            Err(_) => {
                for line in jsonrec::lines(input) {
                    match serde_json::from_slice::<Value>(line.bytes) {
                        Ok(v) => items.push((v, String::new(), Some(line.number))),
                        Err(e) => batch.problems.push(Problem::error(
                            input.origin,
                            Some(line.number),
                            format!("not a JSON record: {e}"),
                        )),
                    }
                }
            }
        }
        let mut tasks: Vec<TaskState> = Vec::new();
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (value, pointer, line) in &items {
            let Some(kind) = kind_of(value) else {
                batch.problems.push(Problem::warning(
                    input.origin,
                    *line,
                    "not an A2A task or artifact update; skipped",
                ));
                continue;
            };
            let body = unwrap(value);
            let body_pointer = if value.get("result").is_some_and(Value::is_object) {
                format!("{pointer}/result")
            } else {
                pointer.clone()
            };
            let task_id = match kind {
                "task" => jsonrec::id_at(body, "id"),
                _ => jsonrec::id_at(body, "taskId"),
            }
            .unwrap_or_else(|| "a2a-task".into());
            let index = *by_id.entry(task_id.clone()).or_insert_with(|| {
                tasks.push(TaskState::new(task_id.clone()));
                tasks.len() - 1
            });
            let Some(state) = tasks.get_mut(index) else {
                continue;
            };
            match kind {
                "task" => {
                    // The snapshot is authoritative: it replaces accumulated artifacts.
                    state.artifacts.clear();
                    state.context_id = jsonrec::id_at(body, "contextId");
                    state.state = body
                        .get("status")
                        .and_then(|s| jsonrec::str_at(s, "state"))
                        .map(str::to_owned);
                    state.time = body
                        .get("status")
                        .and_then(|s| jsonrec::str_at(s, "timestamp"))
                        .and_then(timestamp::rfc3339_nanos)
                        .unwrap_or(0);
                    for (a, artifact) in body
                        .get("artifacts")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                        .iter()
                        .enumerate()
                    {
                        state
                            .artifacts
                            .push((artifact.clone(), format!("{body_pointer}/artifacts/{a}")));
                    }
                }
                "artifact-update" => {
                    if state.context_id.is_none() {
                        state.context_id = jsonrec::id_at(body, "contextId");
                    }
                    if let Some(artifact) = body.get("artifact") {
                        state
                            .artifacts
                            .push((artifact.clone(), format!("{body_pointer}/artifact")));
                    }
                }
                _ => {}
            }
        }
        let record = if items.len() == 1 || items.iter().all(|(_, p, _)| !p.is_empty()) {
            jsonrec::whole_record(input, NAME)
        } else {
            // JSONL: pointers are relative to a line, which is not kept; payloads stay inline.
            None
        };
        let mut total_calls = 0;
        for task in &tasks {
            total_calls += task.emit(input, record.as_ref(), &mut batch);
        }
        if total_calls == 0 {
            batch
                .problems
                .push(Problem::warning(input.origin, None, "0 tool calls found"));
        }
        batch
    }

    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        jsonrec::load_pointer(record, locator)
    }
}

struct TaskState {
    id: String,
    context_id: Option<String>,
    state: Option<String>,
    time: u64,
    artifacts: Vec<(Value, String)>,
}

impl TaskState {
    fn new(id: String) -> Self {
        TaskState {
            id,
            context_id: None,
            state: None,
            time: 0,
            artifacts: Vec::new(),
        }
    }

    /// Emits the task's spans; returns its tool-call count.
    fn emit(
        &self,
        input: &Input,
        record: Option<&std::sync::Arc<crate::model::RecordRef>>,
        batch: &mut Batch,
    ) -> usize {
        let root_id = format!("a2a-task:{}", self.id);
        let mut root = Span {
            trace_id: self.id.clone().into(),
            span_id: root_id.clone().into(),
            name: "a2a task".into(),
            kind: SpanKind::Agent,
            status: SpanStatus::Ok,
            start_unix_nano: self.time,
            end_unix_nano: self.time,
            extras: crate::model::SpanExtras {
                identity: Identity {
                    invocation_id: Some(self.id.clone().into()),
                    correlation_id: self.context_id.clone().map(Into::into),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
            provenance: input.span_provenance(NAME.into()),
            ..Default::default()
        };
        if let Some(state) = &self.state {
            root.attributes.push((
                "a2a.task.state".into(),
                AttrValue::Str(state.clone().into()),
            ));
            if matches!(state.as_str(), "failed" | "rejected") {
                root.status = SpanStatus::Error;
                root.set_error(Some(ErrorInfo {
                    error_type: None,
                    message: Some(format!("task {state}").into()),
                    ..Default::default()
                }));
            }
        }
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        for (artifact, pointer) in &self.artifacts {
            for part in artifact
                .get("parts")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                if let Some(text) = jsonrec::str_at(part, "text") {
                    texts.push(text.to_owned());
                }
            }
            let Some(Value::Object(metadata)) = artifact.get("metadata") else {
                continue;
            };
            for (key, list) in metadata {
                if !key.starts_with(KEY_PREFIX) || !key.ends_with("/tool_calls") {
                    continue;
                }
                if key != &format!("{EXTENSION_URI}/tool_calls") {
                    batch.problems.push(Problem::warning(
                        input.origin,
                        None,
                        format!("task {}: tool calls under an unknown extension version {key}; read as v1", self.id),
                    ));
                }
                let declared = artifact
                    .get("extensions")
                    .and_then(Value::as_array)
                    .is_some_and(|exts| {
                        exts.iter()
                            .any(|e| e.as_str().is_some_and(|e| key.starts_with(e)))
                    });
                if !declared {
                    batch.problems.push(Problem::warning(
                        input.origin,
                        None,
                        format!("task {}: artifact carries tool calls but does not list the extension URI (arksim ignores them)", self.id),
                    ));
                }
                let key_pointer = format!("{pointer}/metadata/{}", jsonrec::pointer_token(key));
                for (k, call) in list
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                {
                    let mut call = call.clone();
                    if let Some(obj) = call.as_object_mut() {
                        obj.insert("source".into(), Value::String("a2a_protocol".into()));
                    }
                    match ToolCallRecord::from_json(&call, format!("{key_pointer}/{k}")) {
                        Some(record) => calls.push(record),
                        None => batch.problems.push(Problem::warning(
                            input.origin,
                            None,
                            format!("task {}: tool call #{k} has no string name; skipped (as arksim does)", self.id),
                        )),
                    }
                }
            }
        }
        root.set_output(if texts.is_empty() {
            crate::model::Payload::not_captured().into()
        } else {
            crate::model::Payload::inline("artifacts.parts.text", texts.join("\n")).into()
        });
        let count = calls.len();
        for (index, call) in calls.iter().enumerate() {
            let span = call.to_span(
                &CallPlacement {
                    trace_id: &self.id,
                    parent_id: &root_id,
                    fallback_id: format!("{root_id}/tool-{index}"),
                    time: self.time.saturating_add(index as u64 + 1),
                    format: NAME,
                    record,
                    label: &format!("task {}", self.id),
                },
                input,
                batch,
            );
            batch.spans.push(span);
        }
        if let Some(context) = &self.context_id {
            batch
                .invocation_names
                .push((self.id.clone(), format!("a2a task (context {context})")));
        }
        batch.spans.push(root);
        count
    }
}
