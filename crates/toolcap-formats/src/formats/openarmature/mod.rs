//! OpenArmature typed observer events as JSONL (one `{"event_type": …, "seq": …}` record per
//! dispatched event), rebuilt into the span tree the OTel observer would have produced:
//! `openarmature.invocation` → node spans → `openarmature.{llm,embedding,rerank}.complete` /
//! `openarmature.tool.call`.
//!
//! - One LLM span per `LlmRetryAttemptEvent` (as the OTel observer does). `LlmCompletionEvent` /
//!   `LlmFailedEvent` only make a span for calls that had no attempt events; that span shares
//!   attempt 0's id, so the store keeps one either way.
//! - A provider or tool event belongs to the open node with the same namespace, attempt index,
//!   fan-out chain and branch chain; a node belongs to the innermost open node whose namespace
//!   is a prefix of its own. Subgraph, fan-out instance and branch dispatch spans are not
//!   synthesized.
//! - Events carry no wall-clock time: spans sit on a virtual clock that starts at 1 ms and
//!   advances by each provider/tool call's `latency_ms` (the only real durations).
//! - Nodes or invocations still open at the end of the input are provisional spans.

use std::collections::{HashMap, HashSet};
mod calls;

use std::sync::Arc;

use serde_json::Value;

use super::common::jsonrec::{self, Line};
use super::{Format, Input};
use crate::model::{
    ArcStr, AttrValue, Batch, ErrorInfo, Id, Identity, Problem, RecordRef, Span, SpanKind,
    SpanStatus,
};

pub struct OpenArmatureEvents;

const NAME: &str = "openarmature-events";
const INVOCATION_SPAN: &str = "invocation";
const CLOCK_START_NS: u64 = 1_000_000;
const NODE_TICK_NS: u64 = 1_000;

const EVENT_TYPES: &[&str] = &[
    "InvocationStartedEvent",
    "InvocationCompletedEvent",
    "NodeEvent",
    "MetadataAugmentationEvent",
    "FailureIsolatedEvent",
    "LlmCompletionEvent",
    "LlmFailedEvent",
    "LlmRetryAttemptEvent",
    "EmbeddingEvent",
    "EmbeddingFailedEvent",
    "RerankEvent",
    "RerankFailedEvent",
    "ToolCallEvent",
    "ToolCallFailedEvent",
];

impl Format for OpenArmatureEvents {
    fn name(&self) -> &'static str {
        NAME
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        let event_type = jsonrec::str_at(head, "event_type")?;
        (EVENT_TYPES.contains(&event_type)
            && (head.get("seq").is_some() || head.get("invocation_id").is_some()))
        .then(|| format!("first record is an OpenArmature typed observer event ({event_type})"))
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut parser = Parser {
            clock: CLOCK_START_NS,
            ..Default::default()
        };
        for line in jsonrec::lines(input) {
            match serde_json::from_slice::<Value>(line.bytes) {
                Ok(event) => parser.event(input, &line, &event),
                Err(e) => parser.problems.push(Problem::error(
                    input.origin,
                    Some(line.number),
                    format!("not a JSON record: {e}"),
                )),
            }
        }
        parser.finish(input)
    }

    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        jsonrec::load_pointer(record, locator)
    }
}

/// Identifies the scope a node runs in (the OTel observer's span-stack key).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct ScopeKey {
    namespace: Vec<String>,
    attempt: u64,
    fan_out_chain: String,
    branch_chain: String,
}

impl ScopeKey {
    fn of(event: &Value) -> Self {
        let namespace = event
            .get("namespace")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(jsonrec::text_of).collect::<Vec<_>>())
            .unwrap_or_default();
        let chain = |key: &str| event.get(key).map(Value::to_string).unwrap_or_default();
        ScopeKey {
            namespace,
            attempt: jsonrec::u64_at(event, "attempt_index").unwrap_or(0),
            fan_out_chain: chain("fan_out_index_chain"),
            branch_chain: chain("branch_name_chain"),
        }
    }
}

struct OpenNode {
    key: ScopeKey,
    span: usize,
}

#[derive(Default)]
pub(super) struct Parser {
    pub(super) spans: Vec<Span>,
    problems: Vec<Problem>,
    clock: u64,
    /// Open node spans per invocation, innermost last.
    open: HashMap<String, Vec<OpenNode>>,
    /// Invocation id → index of its root span.
    roots: HashMap<String, usize>,
    /// Last failure category seen per invocation (the invocation span's error description).
    failure_category: HashMap<String, String>,
    pub(super) llm_calls_with_attempts: HashSet<String>,
    last_invocation: Option<String>,
    pub(super) tool_calls: usize,
}

impl Parser {
    fn tick(&mut self, nanos: u64) -> (u64, u64) {
        let start = self.clock;
        self.clock = self.clock.saturating_add(nanos.max(1));
        (start, self.clock)
    }

    fn invocation_of(&self, event: &Value) -> Option<String> {
        jsonrec::str_at(event, "invocation_id")
            .or_else(|| {
                event
                    .get("_recorder_ctx")
                    .and_then(|c| jsonrec::str_at(c, "current_invocation_id"))
            })
            .map(str::to_owned)
            .or_else(|| self.last_invocation.clone())
    }

    fn base_span(&self, input: &Input, line: &Line, invocation: &str) -> Span {
        Span {
            trace_id: invocation.to_owned().into(),
            extras: crate::model::SpanExtras {
                identity: Identity {
                    invocation_id: Some(invocation.into()),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
            provenance: input.span_provenance(NAME.into()),
            line: crate::model::LineNumber::new(line.number),
            ..Default::default()
        }
    }

    fn event(&mut self, input: &Input, line: &Line, event: &Value) {
        let Some(event_type) = jsonrec::str_at(event, "event_type") else {
            self.problems.push(Problem::warning(
                input.origin,
                Some(line.number),
                "record has no event_type; skipped",
            ));
            return;
        };
        let Some(invocation) = self.invocation_of(event) else {
            self.problems.push(Problem::warning(
                input.origin,
                Some(line.number),
                format!("{event_type} without an invocation id; skipped"),
            ));
            return;
        };
        let record = jsonrec::record_ref(input, line.offset, line.bytes.len() as u64, NAME);
        match event_type {
            "InvocationStartedEvent" => self.invocation_started(input, line, event, &invocation),
            "InvocationCompletedEvent" => self.invocation_completed(event, &invocation),
            "NodeEvent" => self.node(input, line, event, &invocation, record.as_ref()),
            "MetadataAugmentationEvent" => {
                if let (Some(&root), Some(Value::Object(entries))) =
                    (self.roots.get(&invocation), event.get("entries"))
                    && let Some(span) = self.spans.get_mut(root)
                {
                    for (k, v) in entries {
                        span.attributes
                            .push((format!("openarmature.user.{k}").into(), jsonrec::attr_of(v)));
                    }
                }
            }
            "LlmRetryAttemptEvent" | "LlmCompletionEvent" | "LlmFailedEvent" => {
                self.llm(input, line, event, event_type, &invocation, record.as_ref())
            }
            "EmbeddingEvent"
            | "EmbeddingFailedEvent"
            | "RerankEvent"
            | "RerankFailedEvent"
            | "ToolCallEvent"
            | "ToolCallFailedEvent" => {
                self.call(input, line, event, event_type, &invocation, record.as_ref())
            }
            "FailureIsolatedEvent" => {
                // The OTel observer records it as a zero-duration OK span under the caller.
                let mut span = self.base_span(input, line, &invocation);
                span.span_id = format!("failure_isolated:{}", line.number).into();
                span.parent_span_id = Some(self.caller_of(event, &invocation).into());
                span.name = "openarmature.failure_isolated".into();
                span.status = SpanStatus::Ok;
                span.start_unix_nano = self.clock;
                span.end_unix_nano = self.clock;
                self.spans.push(span);
            }
            _ => {}
        }
    }

    fn invocation_started(&mut self, input: &Input, line: &Line, event: &Value, invocation: &str) {
        self.last_invocation = Some(invocation.to_owned());
        if self.roots.contains_key(invocation) {
            return;
        }
        let mut span = self.base_span(input, line, invocation);
        span.span_id = INVOCATION_SPAN.into();
        span.name = "openarmature.invocation".into();
        span.kind = SpanKind::Other;
        let (start, _) = self.tick(NODE_TICK_NS);
        span.start_unix_nano = start;
        span.end_unix_nano = start;
        span.identity_mut().correlation_id =
            jsonrec::str_at(event, "correlation_id").map(Into::into);
        span.attributes.push((
            "openarmature.invocation_id".into(),
            AttrValue::Str(invocation.into()),
        ));
        if let Some(entry) = event.get("entry_node") {
            span.attributes.push((
                "openarmature.graph.entry_node".into(),
                jsonrec::attr_of(entry),
            ));
        }
        jsonrec::mark_provisional(&mut span);
        self.roots.insert(invocation.to_owned(), self.spans.len());
        self.spans.push(span);
    }

    fn invocation_completed(&mut self, event: &Value, invocation: &str) {
        let Some(&root) = self.roots.get(invocation) else {
            return;
        };
        let category = self.failure_category.get(invocation).cloned();
        let now = self.clock;
        let Some(span) = self.spans.get_mut(root) else {
            return;
        };
        span.end_unix_nano = now;
        span.attributes
            .retain(|(k, _)| &**k != crate::model::PROVISIONAL_ATTR);
        // Like the OTel observer: a successful invocation stays UNSET.
        if jsonrec::str_at(event, "status") == Some("failed") {
            span.status = SpanStatus::Error;
            span.set_error(Some(ErrorInfo {
                error_type: None,
                message: Some(
                    category
                        .unwrap_or_else(|| "invocation failed".into())
                        .into(),
                ),
                ..Default::default()
            }));
        }
    }

    fn node(
        &mut self,
        input: &Input,
        line: &Line,
        event: &Value,
        invocation: &str,
        record: Option<&Arc<RecordRef>>,
    ) {
        let key = ScopeKey::of(event);
        let phase = jsonrec::str_at(event, "phase").unwrap_or("");
        match phase {
            "started" => {
                let stack = self.open.entry(invocation.to_owned()).or_default();
                let parent = stack
                    .iter()
                    .rev()
                    .find(|n| {
                        n.key.namespace.len() < key.namespace.len()
                            && key.namespace.starts_with(&n.key.namespace)
                    })
                    .and_then(|n| self.spans.get(n.span))
                    .map(|s| s.span_id.clone())
                    .unwrap_or_else(|| INVOCATION_SPAN.into());
                let mut span = self.base_span(input, line, invocation);
                let step = jsonrec::u64_at(event, "step").unwrap_or(0);
                span.span_id = format!(
                    "node:{}:s{step}:a{}:{}:{}",
                    key.namespace.join("/"),
                    key.attempt,
                    key.fan_out_chain,
                    key.branch_chain
                )
                .into();
                span.parent_span_id = Some(parent);
                span.name = jsonrec::str_at(event, "node_name")
                    .map(str::to_owned)
                    .or_else(|| key.namespace.last().cloned())
                    .unwrap_or_else(|| "node".into())
                    .into();
                span.kind = SpanKind::Node;
                span.identity_mut().node.node_name = Some(span.name.clone());
                span.identity_mut().node.namespace = Some(key.namespace.join("/").into());
                span.identity_mut().node.fan_out_index =
                    jsonrec::u64_at(event, "fan_out_index").and_then(|i| u32::try_from(i).ok());
                span.identity_mut().node.branch_name =
                    jsonrec::str_at(event, "branch_name").map(Into::into);
                span.attributes.push((
                    "openarmature.node.attempt_index".into(),
                    AttrValue::Int(key.attempt as i64),
                ));
                span.attributes
                    .push(("openarmature.node.step".into(), AttrValue::Int(step as i64)));
                span.set_input(
                    jsonrec::payload_null_is_absent(
                        "pre_state",
                        event.get("pre_state"),
                        record,
                        "/pre_state",
                    )
                    .into(),
                );
                let (start, _) = self.tick(NODE_TICK_NS);
                span.start_unix_nano = start;
                span.end_unix_nano = start;
                jsonrec::mark_provisional(&mut span);
                let index = self.spans.len();
                self.spans.push(span);
                self.open
                    .entry(invocation.to_owned())
                    .or_default()
                    .push(OpenNode { key, span: index });
            }
            "completed" => {
                let stack = self.open.entry(invocation.to_owned()).or_default();
                let Some(position) = stack.iter().rposition(|n| n.key == key) else {
                    self.problems.push(Problem::warning(
                        input.origin,
                        Some(line.number),
                        "node completed without a matching start; skipped",
                    ));
                    return;
                };
                let open = stack.remove(position);
                let (_, now) = self.tick(NODE_TICK_NS);
                let Some(span) = self.spans.get_mut(open.span) else {
                    return;
                };
                span.end_unix_nano = now;
                span.attributes
                    .retain(|(k, _)| &**k != crate::model::PROVISIONAL_ATTR);
                span.set_output(
                    jsonrec::payload_null_is_absent(
                        "post_state",
                        event.get("post_state"),
                        record,
                        "/post_state",
                    )
                    .into(),
                );
                span.line = crate::model::LineNumber::new(line.number);
                match event.get("error").filter(|e| !e.is_null()) {
                    Some(error) => {
                        let category = jsonrec::str_at(error, "category").map(str::to_owned);
                        span.status = SpanStatus::Error;
                        span.set_error(Some(ErrorInfo {
                            error_type: jsonrec::str_at(error, "exception_type").map(ArcStr::from),
                            message: jsonrec::str_at(error, "message")
                                .map(ArcStr::from)
                                .or_else(|| category.as_deref().map(ArcStr::from)),
                            ..Default::default()
                        }));
                        if let Some(category) = category {
                            span.attributes.push((
                                "openarmature.error.category".into(),
                                AttrValue::Str(category.clone().into()),
                            ));
                            self.failure_category
                                .insert(invocation.to_owned(), category);
                        }
                    }
                    None => span.status = SpanStatus::Ok,
                }
            }
            // Checkpoint phases are not spans unless checkpoint spans are opted into.
            _ => {}
        }
    }

    /// The open node a provider or tool event ran in, else the invocation span.
    fn caller_of(&self, event: &Value, invocation: &str) -> Id {
        let key = ScopeKey::of(event);
        self.open
            .get(invocation)
            .and_then(|stack| stack.iter().rev().find(|n| n.key == key))
            .and_then(|n| self.spans.get(n.span))
            .map(|s| s.span_id.id())
            .unwrap_or_else(|| INVOCATION_SPAN.into())
    }

    pub(super) fn timed_span(
        &mut self,
        input: &Input,
        line: &Line,
        event: &Value,
        invocation: &str,
    ) -> Span {
        let mut span = self.base_span(input, line, invocation);
        span.parent_span_id = Some(self.caller_of(event, invocation).into());
        span.identity_mut().correlation_id =
            jsonrec::str_at(event, "correlation_id").map(Into::into);
        span.identity_mut().node.node_name = jsonrec::str_at(event, "node_name").map(Into::into);
        let latency_ns = event
            .get("latency_ms")
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| (ms * 1e6) as u64)
            .unwrap_or(0);
        let (start, end) = self.tick(latency_ns);
        span.start_unix_nano = start;
        span.end_unix_nano = end;
        span.status = SpanStatus::Ok;
        if let Some(Value::Object(meta)) = event.get("caller_invocation_metadata") {
            for (k, v) in meta {
                span.attributes
                    .push((format!("openarmature.user.{k}").into(), jsonrec::attr_of(v)));
            }
        }
        if let Some(message) = jsonrec::str_at(event, "error_message")
            .or_else(|| jsonrec::str_at(event, "error_category"))
            .or_else(|| jsonrec::str_at(event, "error_type"))
        {
            span.status = SpanStatus::Error;
            span.set_error(Some(ErrorInfo {
                error_type: jsonrec::str_at(event, "error_type").map(ArcStr::from),
                message: Some(message.into()),
                ..Default::default()
            }));
            if let Some(category) = event.get("error_category").filter(|c| !c.is_null()) {
                span.attributes.push((
                    "openarmature.error.category".into(),
                    jsonrec::attr_of(category),
                ));
            }
        }
        span
    }

    fn finish(self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let unfinished = self.spans.iter().filter(|s| s.is_provisional()).count();
        if unfinished > 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!("{unfinished} node or invocation span(s) never completed"),
            ));
        }
        if !self.spans.is_empty() && self.tool_calls == 0 {
            batch
                .problems
                .push(Problem::warning(input.origin, None, "0 tool calls found"));
        }
        batch.problems.extend(self.problems);
        batch.spans = self.spans;
        batch
    }
}
