//! One Inspect sample made into a run: its events as spans (scopes, model calls, tool calls)
//! written as one OTLP/JSON request and built by the OTLP code, its scorers' verdict, its case
//! and name; and the runs of a log's samples added one by one, with the log's coverage.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::super::Input;
use super::super::common::timestamp::rfc3339_nanos;
use crate::model::{Batch, Case, EvalVerdict, Problem, RecordRef, ScorerVerdict};

/// The spans of the sample in `record` (a member as the zip holds it), as the log's reading
/// made them under `trace_id`.
pub(super) fn spans_of_member(record: &[u8], trace_id: &str) -> Option<Vec<Value>> {
    let sample: Value = serde_json::from_slice(&super::eval_zip::unpack_member(record)?).ok()?;
    let run = Sample {
        trace_id,
        task: "",
        sample_id: &text_of(&sample["id"])?,
        epoch: sample["epoch"].as_u64().unwrap_or(1),
        sample: &sample,
    };
    let mut spans = Vec::new();
    run.spans(&mut spans);
    Some(spans)
}

/// Spans held before they are built into the batch: a log's samples are turned into spans a
/// group at a time, so neither every sample's document nor every span's JSON is held at once.
const SPANS_PER_BUILD: usize = 512;

/// The runs of an Inspect log's samples, one per sample and epoch, added sample by sample;
/// their spans are built by the OTLP code.
pub(super) struct SampleRuns<'a, 'i> {
    input: &'a Input<'i>,
    format: &'static str,
    eval: &'a Value,
    task: &'a str,
    eval_id: &'a str,
    /// Epochs the eval runs each sample for: a run's name says its epoch only when there
    /// are several.
    epochs: u64,
    spans: Vec<Value>,
    /// The member the next sample added was read from (see `eval_zip::record_of`).
    pub(super) record: Option<std::sync::Arc<RecordRef>>,
    /// The log's samples before the first one added here (another group's).
    pub(super) before: usize,
    total: usize,
    scored: usize,
    errored: usize,
}

impl<'a, 'i> SampleRuns<'a, 'i> {
    pub(super) fn new(input: &'a Input<'i>, format: &'static str, eval: &'a Value) -> Self {
        SampleRuns {
            input,
            format,
            eval,
            task: eval["task"].as_str().unwrap_or("task"),
            eval_id: eval["eval_id"].as_str().unwrap_or(""),
            epochs: eval["config"]["epochs"].as_u64().unwrap_or(1),
            spans: Vec::new(),
            record: None,
            before: 0,
            total: 0,
            scored: 0,
            errored: 0,
        }
    }

    /// One sample's run: its spans, verdict, case and name.
    pub(super) fn add(&mut self, sample: &Value, batch: &mut Batch) {
        let n = self.before + self.total;
        self.total += 1;
        if sample["error"].is_object() {
            self.errored += 1;
        } else if sample["scores"]
            .as_object()
            .is_some_and(|scores| !scores.is_empty())
        {
            self.scored += 1;
        }
        let Some(sample_id) = text_of(&sample["id"]) else {
            batch.problems.push(Problem::warning(
                self.input.origin,
                None,
                format!("sample #{n} has no id; skipped"),
            ));
            return;
        };
        let epoch = sample["epoch"].as_u64().unwrap_or(1);
        let trace_id = hex128(&format!("{}/{sample_id}/{epoch}", self.eval_id));
        let run = Sample {
            trace_id: &trace_id,
            task: self.task,
            sample_id: &sample_id,
            epoch,
            sample,
        };
        run.spans(&mut self.spans);
        batch.evals.push((trace_id.clone(), run.verdict()));
        batch.cases.push((
            trace_id.clone(),
            Case {
                id: sample_id.clone(),
                index: epoch,
                index_is_repeat: true,
                task: Some(self.task.to_owned()),
            },
        ));
        // Named by task and sample, as Inspect names a sample; the epoch too when the eval
        // has several (its case says it either way).
        let name = match self.epochs > 1 || epoch > 1 {
            true => format!("{} · {sample_id} · epoch {epoch}", self.task),
            false => format!("{} · {sample_id}", self.task),
        };
        batch.invocation_names.push((trace_id, name));
        // A sample whose payloads stay in its member is built on its own, with its record.
        if self.record.is_some() || self.spans.len() >= SPANS_PER_BUILD {
            self.build(batch);
        }
    }

    /// The spans held so far, built into `batch` as one OTLP/JSON request.
    pub(super) fn build(&mut self, batch: &mut Batch) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let request = json!({"resourceSpans": [{
            "resource": {"attributes": [text_attr("service.name", self.task)]},
            "scopeSpans": [{"scope": {"name": "inspect_ai"}, "spans": spans}]
        }]});
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        drop(request);
        let record = self.record.take();
        if let Err(why) = super::super::otlp::build_json_from_record(
            self.input,
            self.format,
            &bytes,
            record,
            batch,
        ) {
            batch
                .problems
                .push(Problem::error(self.input.origin, None, why.to_string()));
        }
    }

    /// Samples seen, scored and errored so far.
    pub(super) fn counts(&self) -> [usize; 3] {
        [self.total, self.scored, self.errored]
    }

    /// Counts another group's samples as this log's.
    pub(super) fn count(&mut self, [total, scored, errored]: [usize; 3]) {
        self.total += total;
        self.scored += scored;
        self.errored += errored;
    }

    /// The rest of the spans, and the log's coverage said once.
    pub(super) fn finish(mut self, in_progress: bool, batch: &mut Batch) {
        self.build(batch);
        let (total, scored, errored) = (self.total, self.scored, self.errored);
        // A finished log without samples lost them (`--no-log-samples`); a running eval has
        // written none yet, which its coverage says.
        if total == 0 && !in_progress {
            batch.problems.push(Problem::warning(
                self.input.origin,
                None,
                "the log holds no samples (written with --no-log-samples?)",
            ));
            return;
        }
        // Inspect's headline metrics leave errored samples out; here they fail, and the
        // coverage is said once per log.
        let eval = self.eval;
        let progress = if in_progress {
            let planned = eval["dataset"]["samples"]
                .as_u64()
                .map(|samples| samples * eval["config"]["epochs"].as_u64().unwrap_or(1).max(1));
            match planned {
                Some(planned) => format!(" (eval in progress: {total} of {planned} written)"),
                None => " (eval in progress)".to_owned(),
            }
        } else {
            String::new()
        };
        batch.problems.push(Problem::note(
            self.input.origin,
            None,
            format!(
                "Inspect log of {}{progress}: {total} samples, {scored} scored, {errored} errored, {} neither (errored samples count as failing)",
                self.task,
                total - scored - errored
            ),
        ));
    }
}

/// A sample id or other scalar as text (Inspect ids are strings or integers).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An Inspect scope (`span_begin` … `span_end`): a solver, a scorer, the sample's init.
struct Scope<'a> {
    parent: Option<&'a str>,
    name: &'a str,
    start: u64,
    end: Option<u64>,
}

struct Sample<'a> {
    trace_id: &'a str,
    task: &'a str,
    sample_id: &'a str,
    epoch: u64,
    sample: &'a Value,
}

impl<'a> Sample<'a> {
    fn span_id(&self, inspect_id: &str) -> String {
        format!(
            "{:016x}",
            fnv64(&format!("{}/{inspect_id}", self.trace_id), 0)
        )
    }

    fn root_id(&self) -> String {
        self.span_id("")
    }

    /// Every span of the sample, the root first.
    fn spans(&self, out: &mut Vec<Value>) {
        let sample = self.sample;
        let events = sample["events"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let started = time(&sample["started_at"])
            .or_else(|| events.first().and_then(|e| time(&e["timestamp"])))
            .unwrap_or(0);
        let ended = time(&sample["completed_at"]).unwrap_or(started);
        let error = sample["error"]["message"].as_str();
        let mut attributes = vec![
            text_attr("gen_ai.operation.name", "invoke_agent"),
            text_attr("gen_ai.agent.name", self.task),
            text_attr("inspect.sample.id", self.sample_id),
            attr("inspect.epoch", json!({"intValue": self.epoch.to_string()})),
        ];
        // The sample's own input (a prompt, or messages) and its final output.
        let prompt;
        let input: Vec<&Value> = match &sample["input"] {
            Value::String(text) => {
                prompt = json!({"role": "user", "content": text});
                vec![&prompt]
            }
            Value::Array(messages) => messages.iter().collect(),
            _ => Vec::new(),
        };
        self.push_messages(&mut attributes, &input, &sample["output"], false);
        let mut root = self.span(
            &self.root_id(),
            None,
            &format!("{} · {}", self.task, self.sample_id),
            (started, ended),
            attributes,
        );
        // What the sample logged (Inspect's `logger` events), then its error.
        let mut root_events: Vec<Value> = events
            .iter()
            .filter(|event| event["event"] == "logger")
            .map(log_event)
            .collect();
        if let Some(message) = error {
            root["status"] = json!({"code": 2, "message": message});
            root_events.push(sample_exception(&sample["error"], message, ended));
        }
        if !root_events.is_empty() {
            root["events"] = Value::Array(root_events);
        }
        if let Some(limit) = sample["limit"]["type"].as_str() {
            push_attr(&mut root, text_attr("inspect.limit", limit));
        }
        out.push(root);

        // Scopes by id, in id order. A tool's own scope is left out and stands for its parent.
        let mut scopes: BTreeMap<&'a str, Scope<'a>> = BTreeMap::new();
        let mut stand_in: HashMap<&'a str, Option<&'a str>> = HashMap::new();
        for event in events {
            let Some(id) = event["id"].as_str() else {
                continue;
            };
            match event["event"].as_str() {
                Some("span_begin") if event["type"] == "tool" => {
                    stand_in.insert(id, event["parent_id"].as_str());
                }
                Some("span_begin") => {
                    scopes.insert(
                        id,
                        Scope {
                            parent: event["parent_id"].as_str(),
                            name: event["name"].as_str().unwrap_or("span"),
                            start: time(&event["timestamp"]).unwrap_or(started),
                            end: None,
                        },
                    );
                }
                Some("span_end") => {
                    if let Some(scope) = scopes.get_mut(id) {
                        scope.end = time(&event["timestamp"]);
                    }
                }
                _ => {}
            }
        }
        // The span a scope id stands for: a kept scope, or through a chain of tool scopes
        // (bounded: a hostile log may loop) the kept scope around them, else the root.
        let parent_of = |first: Option<&'a str>| {
            let mut id = first;
            for _ in 0..64 {
                match id {
                    Some(scope) if scopes.contains_key(scope) => return self.span_id(scope),
                    Some(scope) => id = stand_in.get(scope).copied().flatten(),
                    None => break,
                }
            }
            self.root_id()
        };
        for (id, scope) in &scopes {
            out.push(self.span(
                &self.span_id(id),
                Some(parent_of(scope.parent)),
                scope.name,
                (scope.start, scope.end.unwrap_or(scope.start)),
                Vec::new(),
            ));
        }
        for (n, event) in events.iter().enumerate() {
            let parent = parent_of(event["span_id"].as_str());
            match event["event"].as_str() {
                Some("model") => out.push(self.model_span(n, event, parent)),
                Some("tool") => out.push(self.tool_span(n, event, parent)),
                _ => {}
            }
        }
    }

    fn span(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        (start, end): (u64, u64),
        attributes: Vec<Value>,
    ) -> Value {
        let mut span = json!({
            "traceId": self.trace_id,
            "spanId": id,
            "name": name,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": end.max(start).to_string(),
            "attributes": attributes,
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    }

    /// The span of event `n`, timed by its `timestamp` and `completed`.
    fn event_span(
        &self,
        n: usize,
        event: &Value,
        parent: String,
        name: &str,
        attributes: Vec<Value>,
    ) -> Value {
        let start = time(&event["timestamp"]).unwrap_or(0);
        let end = time(&event["completed"]).unwrap_or(start);
        self.span(
            &self.span_id(&format!("event-{n}")),
            Some(parent),
            name,
            (start, end),
            attributes,
        )
    }

    fn model_span(&self, n: usize, event: &Value, parent: String) -> Value {
        let model = event["model"].as_str().unwrap_or("model");
        let mut attributes = vec![
            text_attr("gen_ai.operation.name", "chat"),
            text_attr("gen_ai.request.model", model),
        ];
        let usage = &event["output"]["usage"];
        for (key, field) in [
            ("gen_ai.usage.input_tokens", "input_tokens"),
            ("gen_ai.usage.output_tokens", "output_tokens"),
        ] {
            if let Some(tokens) = usage[field].as_u64() {
                attributes.push(attr(key, json!({"intValue": tokens.to_string()})));
            }
        }
        let input = self.model_input(event);
        self.push_messages(&mut attributes, &input, &event["output"], true);
        let mut span = self.event_span(n, event, parent, &format!("chat {model}"), attributes);
        if let Some(error) = event["error"].as_str() {
            span["status"] = json!({"code": 2, "message": error});
        }
        span
    }

    fn tool_span(&self, n: usize, event: &Value, parent: String) -> Value {
        let function = event["function"].as_str().unwrap_or("tool");
        let mut attributes = vec![
            text_attr("gen_ai.operation.name", "execute_tool"),
            text_attr("gen_ai.tool.name", function),
        ];
        if let Some(call_id) = event["id"].as_str() {
            attributes.push(text_attr("gen_ai.tool.call.id", call_id));
        }
        if !event["arguments"].is_null() {
            attributes.push(text_attr(
                "gen_ai.tool.call.arguments",
                &event["arguments"].to_string(),
            ));
        }
        if let Some(result) = text_or_json(&event["result"]).map(|text| self.resolved(text)) {
            attributes.push(text_attr("gen_ai.tool.call.result", &result));
        }
        let name = format!("execute_tool {function}");
        let mut span = self.event_span(n, event, parent, &name, attributes);
        let error = &event["error"];
        if error.is_object() {
            let kind = error["type"].as_str().unwrap_or("unknown");
            let message = self.resolved(error["message"].as_str().unwrap_or("").to_owned());
            push_attr(&mut span, text_attr("error.type", kind));
            span["status"] = json!({"code": 2, "message": message});
        } else if event["failed"].as_bool() == Some(true) {
            push_attr(&mut span, text_attr("error.type", "failed"));
            span["status"] =
                json!({"code": 2, "message": "the tool call failed (the sample errored)"});
        }
        span
    }

    /// `gen_ai.input.messages` from `input` and `gen_ai.output.messages` from the choices of
    /// `output` (a model output: a model event's, or the sample's final one), each when any.
    /// The tool calls an output asks for are kept only when `requests`: the sample's final
    /// output repeats its last model call's, and a call has one requester.
    fn push_messages(
        &self,
        attributes: &mut Vec<Value>,
        input: &[&Value],
        output: &Value,
        requests: bool,
    ) {
        if !input.is_empty() {
            let messages: Vec<Value> = input.iter().map(|m| self.genai_message(m)).collect();
            attributes.push(text_attr(
                "gen_ai.input.messages",
                &Value::Array(messages).to_string(),
            ));
        }
        let choices = output["choices"].as_array();
        let output: Vec<Value> = choices
            .into_iter()
            .flatten()
            .filter_map(|choice| {
                let mut message = self.genai_message(&choice["message"]);
                if !requests && let Some(parts) = message["parts"].as_array_mut() {
                    parts.retain(|part| part["type"] != "tool_call");
                    // A message that only asked for calls says nothing here.
                    if parts.is_empty() {
                        return None;
                    }
                }
                if let Some(reason) = choice["stop_reason"].as_str() {
                    message["finish_reason"] = json!(reason);
                }
                Some(message)
            })
            .collect();
        if !output.is_empty() {
            attributes.push(text_attr(
                "gen_ai.output.messages",
                &Value::Array(output).to_string(),
            ));
        }
    }

    /// The messages a model event was given: its `input`, else its `input_refs` ranges
    /// (`[start, end)`) into the sample's `events_data.messages`.
    fn model_input(&self, event: &'a Value) -> Vec<&'a Value> {
        if let Some(input) = event["input"].as_array().filter(|input| !input.is_empty()) {
            return input.iter().collect();
        }
        let pool = self.sample["events_data"]["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let ranges = event["input_refs"].as_array().map(Vec::as_slice);
        let mut messages = Vec::new();
        for range in ranges.unwrap_or(&[]) {
            let (Some(start), Some(end)) = (range[0].as_u64(), range[1].as_u64()) else {
                continue;
            };
            let (start, end) = (start as usize, (end as usize).min(pool.len()));
            if start < end {
                messages.extend(&pool[start..end]);
            }
        }
        messages
    }

    /// An Inspect chat message as a GenAI semantic-conventions message: `role` and `parts`
    /// (text, reasoning, tool calls, a tool's response), attachment references resolved.
    fn genai_message(&self, message: &Value) -> Value {
        let role = message["role"].as_str().unwrap_or("user");
        let mut parts = Vec::new();
        let text_part =
            |text: &str| json!({"type": "text", "content": self.resolved(text.to_owned())});
        let content = match &message["content"] {
            Value::String(text) if text.is_empty() => Vec::new(),
            Value::String(text) => vec![text_part(text)],
            Value::Array(items) => items
                .iter()
                .map(|item| match item["type"].as_str() {
                    Some("text") => text_part(item["text"].as_str().unwrap_or("")),
                    Some("reasoning") => json!({
                        "type": "reasoning",
                        "content": self.resolved(item["reasoning"].as_str().unwrap_or("").to_owned()),
                    }),
                    _ => item.clone(),
                })
                .collect(),
            _ => Vec::new(),
        };
        if role == "tool" {
            let response = match (&message["error"], content.as_slice()) {
                (Value::Object(error), _) => {
                    let text = self.resolved(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    );
                    json!({"error": {"type": error.get("type").cloned().unwrap_or(Value::Null), "message": text}})
                }
                (_, [only]) if only["type"] == "text" => only["content"].clone(),
                (_, parts) => Value::Array(parts.to_vec()),
            };
            parts.push(json!({
                "type": "tool_call_response",
                "id": message["tool_call_id"],
                "response": response,
            }));
        } else {
            parts.extend(content);
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            parts.push(json!({
                "type": "tool_call",
                "id": call["id"],
                "name": call["function"],
                "arguments": call["arguments"],
            }));
        }
        json!({"role": role, "parts": parts})
    }

    /// `text` with an `attachment://HASH` reference replaced by the attachment's text (events
    /// hold text over 100 characters that way); other text as it is.
    fn resolved(&self, text: String) -> String {
        match text.strip_prefix("attachment://") {
            Some(hash) => match self.sample["attachments"][hash].as_str() {
                Some(attached) => attached.to_owned(),
                None => text,
            },
            None => text,
        }
    }

    /// The scorers' verdicts as one evaluation, every scorer deciding (a [`ScorerRule`] may
    /// choose others later); a sample error fails it whatever they say.
    ///
    /// [`ScorerRule`]: crate::model::ScorerRule
    fn verdict(&self) -> EvalVerdict {
        let scores = self.sample["scores"].as_object();
        let scorers: Vec<ScorerVerdict> = scores
            .into_iter()
            .flatten()
            .map(|(name, score)| ScorerVerdict {
                name: name.clone(),
                value: score["value"].clone(),
                answer: text_or_json(&score["answer"]),
                explanation: text_or_json(&score["explanation"]),
            })
            .collect();
        let target = target_text(&self.sample["target"]);
        let limit = limit_text(&self.sample["limit"]);
        if let Some(message) = self.sample["error"]["message"].as_str() {
            return EvalVerdict {
                passed: false,
                label: "sample error".into(),
                reason: message.lines().next().unwrap_or(message).to_owned(),
                target,
                limit,
                // The error decides, whatever any scorer said: no rule may choose otherwise.
                ..EvalVerdict::default()
            };
        }
        let failing: Vec<&ScorerVerdict> =
            scorers.iter().filter(|s| s.fails_by_default()).collect();
        let reasons: Vec<String> = failing
            .iter()
            .filter_map(|s| Some(format!("{}: {}", s.name, s.explanation.as_deref()?)))
            .collect();
        let labels: Vec<String> = scorers.iter().map(ScorerVerdict::label).collect();
        EvalVerdict {
            passed: failing.is_empty(),
            label: labels.join(" "),
            // The explanations repeat the completion, as the scorers' own do.
            reason_quotes_output: !reasons.is_empty(),
            reason: reasons.join("; "),
            scorers,
            target,
            limit,
            ..EvalVerdict::default()
        }
    }
}

/// A sample's `limit` as Inspect says it (its `reason`), else its kind and size: "message
/// limit 4". `None` when the sample ran to its end.
fn limit_text(limit: &Value) -> Option<String> {
    let kind = limit["type"].as_str()?;
    if let Some(reason) = limit["reason"].as_str().filter(|r| !r.trim().is_empty()) {
        return Some(reason.to_owned());
    }
    Some(match limit["limit"].as_f64() {
        Some(size) if size.fract() == 0.0 && size.abs() < 1e15 => {
            format!("{kind} limit {}", size as i64)
        }
        Some(size) => format!("{kind} limit {size}"),
        None => format!("{kind} limit"),
    })
}

/// An Inspect `logger` event (a log record the sample's code wrote) as a span event `log`: its
/// level, message and where it was written.
fn log_event(event: &Value) -> Value {
    let record = &event["message"];
    let mut attributes = Vec::new();
    for (key, field) in [
        ("log.level", "level"),
        ("log.message", "message"),
        ("code.filepath", "filename"),
    ] {
        if let Some(text) = record[field].as_str() {
            attributes.push(text_attr(key, text));
        }
    }
    if let Some(line) = record["lineno"].as_u64() {
        attributes.push(attr("code.lineno", json!({"intValue": line.to_string()})));
    }
    let at = time(&event["timestamp"]).unwrap_or(0);
    json!({"timeUnixNano": at.to_string(), "name": "log", "attributes": attributes})
}

/// A sample error as an OpenTelemetry `exception` event: its type (Inspect writes the error as
/// its exception's repr, `RuntimeError("…")`), its message and Inspect's traceback.
fn sample_exception(error: &Value, message: &str, at: u64) -> Value {
    let mut attributes = Vec::new();
    if let Some((kind, _)) = message.split_once('(')
        && !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        attributes.push(text_attr("exception.type", kind));
    }
    attributes.push(text_attr("exception.message", message));
    if let Some(traceback) = error["traceback"].as_str().filter(|t| !t.is_empty()) {
        attributes.push(text_attr("exception.stacktrace", traceback));
    }
    json!({"timeUnixNano": at.to_string(), "name": "exception", "attributes": attributes})
}

/// A sample's `target` as text: Inspect writes one string, or a list of them when several
/// answers are right (one a line); an empty target says nothing.
fn target_text(value: &Value) -> Option<String> {
    let text = match value {
        Value::Array(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        other => text_or_json(other)?,
    };
    (!text.trim().is_empty()).then_some(text)
}

fn text_or_json(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn time(value: &Value) -> Option<u64> {
    rfc3339_nanos(value.as_str()?)
}

/// A text attribute.
fn text_attr(key: &str, text: &str) -> Value {
    attr(key, json!({"stringValue": text}))
}

fn attr(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

fn push_attr(span: &mut Value, attribute: Value) {
    if let Some(attributes) = span["attributes"].as_array_mut() {
        attributes.push(attribute);
    }
}

/// FNV-1a, 64 bits, from `seed`: ids made from Inspect's own (spans and traces need hex ids
/// of a fixed length; the same log gives the same ids).
fn fnv64(text: &str, seed: u64) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn hex128(text: &str) -> String {
    format!(
        "{:016x}{:016x}",
        fnv64(text, 0),
        fnv64(text, 0x9e37_79b9_7f4a_7c15)
    )
}
