//! OpenAI Agents SDK traces: JSONL of `Trace.export()` / `Span.export()` dicts, and the
//! `{"event": "span_start"|"span_end"|…, "export": {…}}` stream a live `TracingProcessor` sees.
//!
//! - One invocation per agents trace (`trace_…` id); the trace's `workflow_name` names it.
//! - A span seen only at `span_start` is provisional: its `span_end` replaces it (here, and in
//!   the store when the end arrives in a later chunk), so nothing is counted twice.
//! - Function `input` is a JSON string and `output` is `str(result)` (often a Python repr):
//!   both are kept as text. With `trace_include_sensitive_data=False` they are null, which is
//!   *not captured*, never empty. `response` spans never carry prompt or completion text.
//! - Function spans export no call id; when a Chat Completions `generation` span of the same
//!   trace requested a call with the same name and arguments, its id becomes the call id.
//! - Kinds follow docs/ARCHITECTURE.md: agent → agent; generation, response → llm; function,
//!   mcp_tools → tool; custom (incl. the 0.2x `task`/`turn` spans), handoff, guardrail → node.
//! - A trace whose metadata carries `arksim.conversation_id` / `arksim.turn_id` belongs to that
//!   arksim turn: it is aliased to the turn's invocation id and its root span hangs under the
//!   turn span that `simulation.json` produces (see [`super::arksim`]).

use std::collections::HashMap;

use serde_json::Value;

use super::arksim::calls::canonical_json;
use super::common::jsonrec::{self, Line};
use super::common::timestamp;
use super::{Format, Input, arksim};
use crate::model::interner;
use crate::model::{
    ArcStr, AttrValue, Batch, CompactId, ErrorInfo, Id, Identity, LlmFacts, Payload, PayloadSlot,
    Problem, RequestedToolCall, Span, SpanKind, SpanStatus, ToolFacts,
};

pub struct OpenAiAgents;

const NAME: &str = "openai-agents";
const EVENTS: &[&str] = &["trace_start", "trace_end", "span_start", "span_end"];

/// The export dict of one line and the processor callback it came from, if any.
fn unwrap_record(value: &Value) -> Option<(&Value, Option<&str>, &'static str)> {
    if let Some(event) = jsonrec::str_at(value, "event").filter(|e| EVENTS.contains(e)) {
        let export = value.get("export")?;
        let prefix = if export.get("object").is_some() {
            "/export"
        } else {
            return None;
        };
        return Some((export, Some(event), prefix));
    }
    value.get("object").map(|_| (value, None, ""))
}

fn is_agents_record(value: &Value) -> bool {
    let Some((export, _, _)) = unwrap_record(value) else {
        return false;
    };
    match jsonrec::str_at(export, "object") {
        Some("trace.span") => export.get("span_data").is_some_and(Value::is_object),
        Some("trace") => export.get("workflow_name").is_some() || export.get("id").is_some(),
        _ => false,
    }
}

impl Format for OpenAiAgents {
    fn name(&self) -> &'static str {
        NAME
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        if !is_agents_record(head) {
            return None;
        }
        Some(if head.get("event").is_some() {
            "first record is an openai-agents TracingProcessor event ({\"event\", \"export\"})"
                .into()
        } else {
            "first record is an openai-agents Trace/Span export (\"object\": \"trace\"/\"trace.span\" with span_data)".into()
        })
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut parser = Parser::default();
        for line in jsonrec::lines(input) {
            parser.line(input, &line);
        }
        parser.finish(input)
    }

    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        jsonrec::load_pointer(record, locator)
    }
}

#[derive(Default)]
struct TraceInfo {
    workflow_name: Option<String>,
    group_id: Option<String>,
    /// `(conversation_id, turn_id)` when the trace is an arksim turn.
    arksim_turn: Option<(String, String)>,
}

#[derive(Default)]
struct Parser {
    spans: Vec<Span>,
    /// span id → index in `spans`, to merge a span's start and end records.
    by_id: HashMap<Id, usize>,
    traces: HashMap<String, TraceInfo>,
    trace_order: Vec<String>,
    problems: Vec<Problem>,
    /// Tool calls generation spans asked for: `(trace id, call id, name, canonical arguments)`,
    /// used to give function spans (which export no call id) the id of their request.
    requested: Vec<(String, String, String, String)>,
    bad_json_inputs: usize,
    null_payload_functions: usize,
}

impl Parser {
    fn line(&mut self, input: &Input, line: &Line) {
        let value: Value = match serde_json::from_slice(line.bytes) {
            Ok(v) => v,
            Err(e) => {
                self.problems.push(Problem::error(
                    input.origin,
                    Some(line.number),
                    format!("not a JSON record: {e}"),
                ));
                return;
            }
        };
        let Some((export, event, prefix)) = unwrap_record(&value) else {
            self.problems.push(Problem::warning(
                input.origin,
                Some(line.number),
                "not an openai-agents trace or span export; skipped",
            ));
            return;
        };
        match jsonrec::str_at(export, "object") {
            Some("trace") => self.trace(export),
            Some("trace.span") => {
                let record = jsonrec::record_ref(input, line.offset, line.bytes.len() as u64, NAME);
                let started_only = event == Some("span_start");
                match self.span(input, line, export, record.as_ref(), prefix, started_only) {
                    Some(span) => self.add(span),
                    None => self.problems.push(Problem::warning(
                        input.origin,
                        Some(line.number),
                        "span export without id, trace_id or span_data; skipped",
                    )),
                }
            }
            _ => self.problems.push(Problem::warning(
                input.origin,
                Some(line.number),
                "unknown export object; skipped",
            )),
        }
    }

    fn add(&mut self, span: Span) {
        match self.by_id.get(&span.span_id.id()) {
            // A start record never replaces what an end record already gave.
            Some(_) if span.is_provisional() => {}
            Some(&i) => self.spans[i] = span,
            None => {
                self.by_id.insert(span.span_id.id(), self.spans.len());
                self.spans.push(span);
            }
        }
    }

    fn trace(&mut self, export: &Value) {
        let Some(id) = jsonrec::str_at(export, "id") else {
            return;
        };
        if !self.traces.contains_key(id) {
            self.trace_order.push(id.to_owned());
        }
        let info = self.traces.entry(id.to_owned()).or_default();
        if let Some(name) = jsonrec::str_at(export, "workflow_name") {
            info.workflow_name = Some(name.to_owned());
        }
        if let Some(group) = jsonrec::str_at(export, "group_id") {
            info.group_id = Some(group.to_owned());
        }
        if let Some(turn) = export.get("metadata").and_then(arksim_turn_of) {
            info.arksim_turn = Some(turn);
        }
    }

    fn span(
        &mut self,
        input: &Input,
        line: &Line,
        export: &Value,
        record: Option<&std::sync::Arc<crate::model::RecordRef>>,
        prefix: &str,
        started_only: bool,
    ) -> Option<Span> {
        let span_id = jsonrec::str_at(export, "id")?.to_owned();
        let trace_id = jsonrec::str_at(export, "trace_id")?.to_owned();
        let data = export.get("span_data").filter(|d| d.is_object())?;
        let data_type = jsonrec::str_at(data, "type").unwrap_or("");
        let start = jsonrec::str_at(export, "started_at")
            .and_then(timestamp::rfc3339_nanos)
            .unwrap_or(0);
        let end = jsonrec::str_at(export, "ended_at")
            .and_then(timestamp::rfc3339_nanos)
            .unwrap_or(start);
        let pointer = |field: &str| format!("{prefix}/span_data/{field}");
        let mut span = Span {
            extras: crate::model::SpanExtras {
                identity: Identity {
                    invocation_id: Some(trace_id.clone().into()),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
            trace_id: trace_id.into(),
            span_id: span_id.into(),
            parent_span_id: jsonrec::str_at(export, "parent_id").map(CompactId::from),
            start_unix_nano: start,
            end_unix_nano: end.max(start),
            provenance: input.span_provenance(NAME.into()),
            line: crate::model::LineNumber::new(line.number),
            status: if started_only {
                SpanStatus::Unset
            } else {
                SpanStatus::Ok
            },
            ..Default::default()
        };
        span.attributes.push((
            "openai_agents.span_type".into(),
            AttrValue::Str(data_type.into()),
        ));
        let name_field = jsonrec::str_at(data, "name");
        match data_type {
            "agent" => {
                span.kind = SpanKind::Agent;
                span.name = name_field.unwrap_or("agent").into();
                for key in ["handoffs", "tools", "output_type"] {
                    if let Some(v) = data.get(key) {
                        span.attributes.push((
                            format!("openai_agents.agent.{key}").into(),
                            jsonrec::attr_of(v),
                        ));
                    }
                }
            }
            "function" => {
                span.kind = SpanKind::Tool;
                span.name = name_field.unwrap_or("function").into();
                span.set_tool(Some(Box::new(ToolFacts {
                    name: name_field.map(Into::into),
                    ..Default::default()
                })));
                let input_value = data.get("input").filter(|v| !v.is_null());
                if let Some(Value::String(text)) = input_value
                    && !text.trim().is_empty()
                    && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
                {
                    self.bad_json_inputs += 1;
                }
                if !started_only
                    && input_value.is_none()
                    && data.get("output").is_none_or(Value::is_null)
                {
                    self.null_payload_functions += 1;
                }
                span.set_input(PayloadSlot::from(jsonrec::payload_null_is_absent(
                    "input",
                    input_value,
                    record,
                    &pointer("input"),
                )));
                span.set_output(PayloadSlot::from(jsonrec::payload_null_is_absent(
                    "output",
                    data.get("output"),
                    record,
                    &pointer("output"),
                )));
                if let Some(mcp) = data.get("mcp_data").filter(|v| !v.is_null()) {
                    span.attributes
                        .push(("openai_agents.mcp_data".into(), jsonrec::attr_of(mcp)));
                }
            }
            "generation" => {
                span.kind = SpanKind::Llm;
                span.name = "generation".into();
                span.set_llm(Some(Box::new(llm_facts(data))));
                for (id, name, arguments) in requested_with_arguments(data) {
                    self.requested
                        .push((span.trace_id.to_string(), id, name, arguments));
                }
                span.set_input(PayloadSlot::from(jsonrec::payload_null_is_absent(
                    "input",
                    data.get("input"),
                    record,
                    &pointer("input"),
                )));
                span.set_output(PayloadSlot::from(jsonrec::payload_null_is_absent(
                    "output",
                    data.get("output"),
                    record,
                    &pointer("output"),
                )));
            }
            "response" => {
                span.kind = SpanKind::Llm;
                span.name = "response".into();
                span.set_llm(Some(Box::new(llm_facts(data))));
                // The SDK exports only the response id and usage: the text is never recorded.
                span.set_input(Payload::not_captured().into());
                span.set_output(Payload::not_captured().into());
                if let Some(id) = data.get("response_id") {
                    span.attributes
                        .push(("openai_agents.response_id".into(), jsonrec::attr_of(id)));
                }
            }
            "handoff" => {
                span.kind = SpanKind::Node;
                let from = jsonrec::str_at(data, "from_agent").unwrap_or("?");
                let to = jsonrec::str_at(data, "to_agent").unwrap_or("?");
                span.name = format!("handoff {from} → {to}").into();
                for key in ["from_agent", "to_agent"] {
                    if let Some(v) = data.get(key) {
                        span.attributes
                            .push((format!("openai_agents.{key}").into(), jsonrec::attr_of(v)));
                    }
                }
            }
            "guardrail" => {
                span.kind = SpanKind::Node;
                span.name = format!("guardrail {}", name_field.unwrap_or("?")).into();
                if let Some(t) = data.get("triggered") {
                    span.attributes.push((
                        "openai_agents.guardrail.triggered".into(),
                        jsonrec::attr_of(t),
                    ));
                }
            }
            "custom" => {
                span.kind = SpanKind::Node;
                span.name = name_field.unwrap_or("custom").into();
                span.set_output(PayloadSlot::from(jsonrec::payload_null_is_absent(
                    "data",
                    data.get("data"),
                    record,
                    &pointer("data"),
                )));
            }
            "mcp_tools" => {
                span.kind = SpanKind::Tool;
                let server = jsonrec::str_at(data, "server").unwrap_or("mcp");
                span.name = format!("mcp_tools {server}").into();
                span.set_tool(Some(Box::new(ToolFacts {
                    name: Some(span.name.clone()),
                    ..Default::default()
                })));
                span.set_output(PayloadSlot::from(jsonrec::payload_null_is_absent(
                    "result",
                    data.get("result"),
                    record,
                    &pointer("result"),
                )));
            }
            other => {
                span.kind = SpanKind::Other;
                span.name = name_field.map(ArcStr::from).unwrap_or_else(|| {
                    if other.is_empty() {
                        "span".into()
                    } else {
                        other.into()
                    }
                });
            }
        }
        if let Some(error) = export.get("error").filter(|e| !e.is_null()) {
            span.status = SpanStatus::Error;
            let message = jsonrec::str_at(error, "message")
                .map(str::to_owned)
                .unwrap_or_else(|| jsonrec::text_of(error));
            let error_type = error
                .get("data")
                .and_then(|d| jsonrec::str_at(d, "error"))
                .map(ArcStr::from);
            span.set_error(Some(ErrorInfo {
                error_type,
                message: Some(message.into()),
                ..Default::default()
            }));
            if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
                span.attributes
                    .push(("openai_agents.error.data".into(), jsonrec::attr_of(data)));
            }
        }
        if let Some(meta) = export.get("metadata").filter(|m| m.is_object()) {
            if let Some(turn) = arksim_turn_of(meta) {
                let info = self.traces.entry(span.trace_id.to_string()).or_default();
                if info.arksim_turn.is_none() {
                    info.arksim_turn = Some(turn);
                }
            }
            span.attributes
                .push(("openai_agents.metadata".into(), jsonrec::attr_of(meta)));
        }
        if started_only {
            jsonrec::mark_provisional(&mut span);
        }
        Some(span)
    }

    fn finish(mut self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        self.assign_call_ids();
        for span in &mut self.spans {
            let Some(info) = self.traces.get(&*span.trace_id.text()) else {
                continue;
            };
            span.identity_mut().correlation_id = info.group_id.clone().map(Into::into);
            if let Some((conversation, turn)) = &info.arksim_turn
                && span.parent_span_id.as_ref().is_none_or(CompactId::is_empty)
            {
                span.parent_span_id = Some(arksim::turn_span_id(conversation, turn).into());
            }
        }
        for trace_id in &self.trace_order {
            let Some(info) = self.traces.get(trace_id) else {
                continue;
            };
            match &info.arksim_turn {
                Some((conversation, turn)) => batch.aliases.push((
                    trace_id.clone(),
                    arksim::turn_invocation_id(conversation, turn),
                )),
                None => {
                    if let Some(name) = &info.workflow_name {
                        batch
                            .invocation_names
                            .push((trace_id.clone(), name.clone()));
                    }
                }
            }
        }
        // Traces named only by span metadata (no trace record) still join their turn.
        for (trace_id, info) in &self.traces {
            if !self.trace_order.contains(trace_id)
                && let Some((conversation, turn)) = &info.arksim_turn
            {
                batch.aliases.push((
                    trace_id.clone(),
                    arksim::turn_invocation_id(conversation, turn),
                ));
            }
        }
        let tool_spans = self
            .spans
            .iter()
            .filter(|s| s.kind == SpanKind::Tool)
            .count();
        let unfinished = self.spans.iter().filter(|s| s.is_provisional()).count();
        if !self.spans.is_empty() && tool_spans == 0 {
            batch
                .problems
                .push(Problem::warning(input.origin, None, "0 tool calls found"));
        }
        if self.bad_json_inputs > 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!(
                    "{} function span(s): arguments were not valid JSON (kept as text)",
                    self.bad_json_inputs
                ),
            ));
        }
        if self.null_payload_functions > 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!(
                    "{} function span(s) without input/output: recorded with sensitive data off (not captured)",
                    self.null_payload_functions
                ),
            ));
        }
        if unfinished > 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!("{unfinished} span(s) seen only at start (not ended yet)"),
            ));
        }
        batch.problems.extend(self.problems);
        batch.spans = self.spans;
        batch
    }
}

impl Parser {
    /// Chat Completions `generation` spans list the calls they request with ids and arguments;
    /// a function span of the same trace with the same name and arguments is that call.
    fn assign_call_ids(&mut self) {
        if self.requested.is_empty() {
            return;
        }
        let mut order: Vec<usize> = (0..self.spans.len())
            .filter(|&i| self.spans[i].kind == SpanKind::Tool)
            .collect();
        order.sort_by_key(|&i| self.spans[i].start_unix_nano);
        for i in order {
            let span = &self.spans[i];
            let Some(tool) = span.tool().filter(|t| t.call_id.is_none()) else {
                continue;
            };
            let arguments = span
                .input_slot()
                .as_set()
                .inline_text()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .map(|v| canonical_json(&v));
            let found = self.requested.iter().position(|(trace, _, name, args)| {
                *trace == *span.trace_id.text()
                    && Some(name.as_str()) == tool.name
                    && Some(args) == arguments.as_ref()
            });
            if let Some(found) = found {
                let (_, id, _, _) = self.requested.remove(found);
                if let Some(tool) = self.spans[i].tool_mut() {
                    tool.call_id = Some(id.into());
                }
            }
        }
    }
}

/// `(call id, name, canonical arguments)` of the tool calls a generation span's output asks for.
fn requested_with_arguments(data: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let Some(Value::Array(messages)) = data.get("output") else {
        return out;
    };
    for message in messages {
        let Some(Value::Array(calls)) = message.get("tool_calls") else {
            continue;
        };
        for call in calls {
            let function = call.get("function");
            let name = function.and_then(|f| jsonrec::str_at(f, "name"));
            let id = jsonrec::str_at(call, "id");
            let arguments = function
                .and_then(|f| jsonrec::str_at(f, "arguments"))
                .and_then(|a| serde_json::from_str::<Value>(a).ok());
            if let (Some(name), Some(id), Some(arguments)) = (name, id, arguments) {
                out.push((id.to_owned(), name.to_owned(), canonical_json(&arguments)));
            }
        }
    }
    out
}

fn llm_facts(data: &Value) -> LlmFacts {
    let usage = data.get("usage").filter(|u| u.is_object());
    let details = usage.and_then(|u| u.get("input_tokens_details"));
    let mut facts = LlmFacts {
        provider: Some("openai".into()),
        model: jsonrec::str_at(data, "model").map(Into::into),
        input_tokens: jsonrec::tokens_at(usage, &["input_tokens", "prompt_tokens"]),
        output_tokens: jsonrec::tokens_at(usage, &["output_tokens", "completion_tokens"]),
        cache_read_tokens: jsonrec::tokens_at(details, &["cached_tokens"]),
        ..Default::default()
    };
    if let Some(Value::Array(messages)) = data.get("output") {
        for message in messages {
            if let Some(Value::Array(calls)) = message.get("tool_calls") {
                for call in calls {
                    let name = call
                        .get("function")
                        .and_then(|f| jsonrec::str_at(f, "name"))
                        .or_else(|| jsonrec::str_at(call, "name"));
                    if let Some(name) = name {
                        facts.requested_tool_calls.push(RequestedToolCall {
                            id: jsonrec::str_at(call, "id").map(ArcStr::from),
                            name: interner::value(name),
                        });
                    }
                }
            }
        }
    }
    facts
}

/// `(conversation_id, turn_id)` from trace or span metadata written for arksim.
fn arksim_turn_of(metadata: &Value) -> Option<(String, String)> {
    let conversation = jsonrec::id_at(metadata, "arksim.conversation_id")?;
    let turn = jsonrec::id_at(metadata, "arksim.turn_id")?;
    Some((conversation, turn))
}
