//! arksim runs: `simulation.json` (conversations → turns → tool calls) and the trace receiver's
//! per-turn tool-call dump. Evaluation and scenario files are in [`eval`].
//!
//! Rules (they let the files load in any order and join in the store):
//! - Each conversation turn with an assistant reply is one invocation, id
//!   `<simulation_id>/<conversation_id>/turn-<turn_id>` ([`run_turn_invocation_id`]), named
//!   `<scenario> · turn <n>`: two runs (or two copies of one simulation under new ids) never
//!   share a turn, even where their conversation ids agree. The bare
//!   `<conversation_id>/turn-<turn_id>` ([`turn_invocation_id`]), all that agent traces and the
//!   receiver know, is aliased to it. A trailing user-only message (arksim's `###STOP###`) is
//!   not a turn.
//! - The turn's root span has id [`turn_span_id`]. openai-agents traces that carry
//!   `arksim.conversation_id` / `arksim.turn_id` alias to the turn and hang their root under it.
//! - Tool calls become *provisional* tool spans under the turn span: they only stand in for
//!   real trace spans. Their span id is the arksim tool-call id, which for calls captured by
//!   `ArksimTracingProcessor` *is* the SDK function span's id, so a joined function span
//!   replaces its stand-in in the store (whatever the load order) and is never counted twice.
//!   Calls whose id is no span id (explicit `AgentResponse` copies) are dropped by the store
//!   when a joined tool span has the same name and equal arguments (or call id); otherwise
//!   their stand-in stays. Stand-ins have no timing, so they sort before timed spans.
//! - arksim's dedup is re-applied inside a turn: traced copies are dropped when an explicit copy
//!   has the same id, or the same name and canonical arguments (the explicit copy wins).
//! - A call with `error: null` whose result reads like a tool error (the explicit-capture trap)
//!   is counted as failed and reported as a warning.
//! - `scenario_id` is aliased (`arksim-scenario/<id>` → the conversation's last turn with tool
//!   calls, where arksim reports trajectory failures), so the scenario's gold lands there.

pub mod a2a;
pub mod calls;
pub mod eval;

use serde_json::Value;

use super::common::jsonrec;
use super::{Format, Input};
use crate::model::{
    AttrValue, Batch, Case, Identity, Problem, RecordRef, Span, SpanKind, SpanStatus,
};
use calls::{CallPlacement, ToolCallRecord, dedup};

pub struct ArksimSimulation;
pub struct ArksimReceiverDump;

const SIMULATION: &str = "arksim-simulation";
const RECEIVER: &str = "arksim-receiver";

/// Invocation id of one arksim turn.
pub fn turn_invocation_id(conversation_id: &str, turn_id: &str) -> String {
    format!("{conversation_id}/turn-{turn_id}")
}

/// Invocation id of one arksim turn of the simulation `simulation_id` (its evaluation names
/// the same one); [`turn_invocation_id`] when the file names no simulation.
pub fn run_turn_invocation_id(simulation_id: &str, conversation_id: &str, turn_id: &str) -> String {
    if simulation_id.is_empty() {
        turn_invocation_id(conversation_id, turn_id)
    } else {
        format!("{simulation_id}/{conversation_id}/turn-{turn_id}")
    }
}

/// Span id of the synthesized span that roots one arksim turn.
pub fn turn_span_id(conversation_id: &str, turn_id: &str) -> String {
    format!("arksim-turn:{conversation_id}/{turn_id}")
}

/// The key a scenario's gold is filed under until a simulation aliases it to a turn.
pub fn scenario_key(scenario_id: &str) -> String {
    format!("arksim-scenario/{scenario_id}")
}

impl Format for ArksimSimulation {
    fn name(&self) -> &'static str {
        SIMULATION
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        let first = head.get("conversations")?.as_array()?.first();
        // evaluation.json also has `simulation_id`: only an empty list may rely on it.
        let is_simulation = match first {
            Some(conversation) => conversation.get("conversation_history").is_some(),
            None => {
                head.get("simulation_id").is_some()
                    && head.get("evaluation_id").is_none()
                    && head.get("unique_errors").is_none()
            }
        };
        is_simulation.then(|| {
            "arksim simulation: \"conversations\" with \"conversation_history\"".to_owned()
        })
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let Some(doc) = read_json_document(input, &mut batch) else {
            return batch;
        };
        let record = jsonrec::whole_record(input, SIMULATION);
        // Turns carry no timing: their spans sit at time 0 ("unknown") and only keep their
        // order, so a joined trace's real times decide the invocation's start and duration.
        let unknown_time = 0;
        let simulation_id = jsonrec::str_at(&doc, "simulation_id").unwrap_or("");
        let Some(conversations) = doc.get("conversations").and_then(Value::as_array) else {
            batch.problems.push(Problem::error(
                input.origin,
                None,
                "\"conversations\" is not a list",
            ));
            return batch;
        };
        let mut scenarios_seen: Vec<String> = Vec::new();
        let mut tool_calls = 0;
        for (c, conversation) in conversations.iter().enumerate() {
            let Some(conversation_id) = jsonrec::id_at(conversation, "conversation_id") else {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!("conversation #{c} has no conversation_id; skipped"),
                ));
                continue;
            };
            let scenario = jsonrec::str_at(conversation, "scenario_id").unwrap_or("");
            let context = TurnContext {
                conversation_id: &conversation_id,
                scenario_id: scenario,
                simulation_id,
                time: unknown_time,
                record: record.as_ref(),
                pointer: format!("/conversations/{c}/conversation_history"),
            };
            let turns = turns_of(conversation);
            let mut last_tool_turn = None;
            let mut last_turn = None;
            for turn in &turns {
                let calls = context.emit_turn(input, turn, &mut batch);
                tool_calls += calls;
                last_turn = Some(turn.turn_id.clone());
                if calls > 0 {
                    last_tool_turn = Some(turn.turn_id.clone());
                }
            }
            if !scenario.is_empty()
                && let Some(turn) = last_tool_turn.or(last_turn)
            {
                if scenarios_seen.iter().any(|s| s == scenario) {
                    batch.problems.push(Problem::warning(
                        input.origin,
                        None,
                        format!(
                            "scenario {scenario} has several conversations; its assertions attach to the first only"
                        ),
                    ));
                } else {
                    scenarios_seen.push(scenario.to_owned());
                    batch.aliases.push((
                        scenario_key(scenario),
                        run_turn_invocation_id(simulation_id, &conversation_id, &turn),
                    ));
                }
            }
        }
        if tool_calls == 0 {
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

/// The whole input as one JSON value; when it is not one, the parse error is the batch's
/// problem and `None` is returned.
pub(crate) fn read_json_document(input: &Input, batch: &mut Batch) -> Option<Value> {
    match serde_json::from_slice::<Value>(input.bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            batch.problems.push(Problem::error(
                input.origin,
                Some(input.base_line + e.line() as u64),
                format!("not a JSON document: {e}"),
            ));
            None
        }
    }
}

/// One user + assistant exchange, with the indices of its messages in the history.
struct Turn<'a> {
    turn_id: String,
    /// Its `turn_id` as a number, or its place among the conversation's turns when that is not
    /// one: the index of its case (see [`Case`]).
    index: u64,
    user: Option<(usize, &'a Value)>,
    assistant: Vec<(usize, &'a Value)>,
}

fn turns_of(conversation: &Value) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn> = Vec::new();
    let Some(history) = conversation
        .get("conversation_history")
        .and_then(Value::as_array)
    else {
        return turns;
    };
    for (i, message) in history.iter().enumerate() {
        let turn_id = jsonrec::id_at(message, "turn_id").unwrap_or_else(|| "0".into());
        let position = match turns.iter().position(|t| t.turn_id == turn_id) {
            Some(p) => p,
            None => {
                turns.push(Turn {
                    index: turn_id.parse().unwrap_or(turns.len() as u64),
                    turn_id,
                    user: None,
                    assistant: Vec::new(),
                });
                turns.len() - 1
            }
        };
        let Some(turn) = turns.get_mut(position) else {
            continue;
        };
        match jsonrec::str_at(message, "role") {
            Some("assistant") => turn.assistant.push((i, message)),
            _ => {
                if turn.user.is_none() {
                    turn.user = Some((i, message));
                }
            }
        }
    }
    turns.retain(|t| !t.assistant.is_empty());
    turns
}

struct TurnContext<'a> {
    conversation_id: &'a str,
    scenario_id: &'a str,
    simulation_id: &'a str,
    time: u64,
    record: Option<&'a std::sync::Arc<RecordRef>>,
    /// JSON pointer of the conversation's history list.
    pointer: String,
}

impl TurnContext<'_> {
    /// Emits the turn's spans, name and scenario link; returns its tool-call count.
    fn emit_turn(&self, input: &Input, turn: &Turn, batch: &mut Batch) -> usize {
        let invocation =
            run_turn_invocation_id(self.simulation_id, self.conversation_id, &turn.turn_id);
        // Agent traces and the receiver know the turn by conversation and turn only.
        batch.aliases.push((
            turn_invocation_id(self.conversation_id, &turn.turn_id),
            invocation.clone(),
        ));
        if !self.scenario_id.is_empty() {
            batch.cases.push((
                invocation.clone(),
                Case {
                    id: self.scenario_id.to_owned(),
                    index: turn.index,
                    index_is_repeat: false,
                    task: None,
                },
            ));
        }
        let root_id = turn_span_id(self.conversation_id, &turn.turn_id);
        let mut root = turn_root_span(
            &invocation,
            self.conversation_id,
            &turn.turn_id,
            self.time,
            input,
            SIMULATION.into(),
        );
        if let Some((i, user)) = turn.user {
            root.set_input(
                jsonrec::payload(
                    "content",
                    user.get("content"),
                    self.record,
                    &format!("{}/{i}/content", self.pointer),
                )
                .into(),
            );
        }
        if let Some((i, assistant)) = turn.assistant.last() {
            root.set_output(
                jsonrec::payload(
                    "content",
                    assistant.get("content"),
                    self.record,
                    &format!("{}/{i}/content", self.pointer),
                )
                .into(),
            );
        }
        for (key, value) in [
            ("arksim.scenario_id", self.scenario_id),
            ("arksim.simulation_id", self.simulation_id),
        ] {
            if !value.is_empty() {
                root.attributes
                    .push((key.into(), AttrValue::Str(value.into())));
            }
        }
        let mut calls = Vec::new();
        for (i, message) in &turn.assistant {
            if let Some(Value::Array(list)) = message.get("tool_calls") {
                for (k, call) in list.iter().enumerate() {
                    let pointer = format!("{}/{i}/tool_calls/{k}", self.pointer);
                    match ToolCallRecord::from_json(call, pointer) {
                        Some(record) => calls.push(record),
                        None => batch.problems.push(Problem::warning(
                            input.origin,
                            None,
                            format!("{invocation}: tool call #{k} has no name; skipped"),
                        )),
                    }
                }
            }
        }
        let (calls, dropped) = dedup(calls);
        if dropped > 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                format!("{invocation}: {dropped} duplicate tool call(s) dropped (arksim dedup: by id, then name + arguments; the explicit copy wins)"),
            ));
        }
        let count = calls.len();
        for (index, call) in calls.iter().enumerate() {
            let span = call.to_span(
                &CallPlacement {
                    trace_id: &invocation,
                    parent_id: &root_id,
                    fallback_id: format!("{root_id}/tool-{index}"),
                    time: self.time.saturating_add(index as u64),
                    format: SIMULATION,
                    record: self.record,
                    label: &invocation,
                },
                input,
                batch,
            );
            batch.spans.push(span);
        }
        if !self.scenario_id.is_empty() {
            batch.invocation_names.push((
                invocation.clone(),
                format!("{} · turn {}", self.scenario_id, turn.turn_id),
            ));
        }
        batch.spans.push(root);
        count
    }
}

/// The synthesized root of one turn (shared by every arksim file that knows the turn).
pub(crate) fn turn_root_span(
    invocation: &str,
    conversation_id: &str,
    turn_id: &str,
    time: u64,
    input: &Input,
    format: crate::model::FormatName,
) -> Span {
    Span {
        trace_id: invocation.to_owned().into(),
        span_id: turn_span_id(conversation_id, turn_id).into(),
        name: format!("arksim turn {turn_id}").into(),
        kind: SpanKind::Agent,
        status: SpanStatus::Unset,
        start_unix_nano: time,
        end_unix_nano: time,
        extras: crate::model::SpanExtras {
            identity: Identity {
                invocation_id: Some(invocation.into()),
                correlation_id: Some(conversation_id.into()),
                ..Default::default()
            },
            ..Default::default()
        }
        .into(),
        attributes: vec![
            (
                "arksim.conversation_id".into(),
                AttrValue::Str(conversation_id.into()),
            ),
            ("arksim.turn_id".into(), AttrValue::Str(turn_id.into())),
            (crate::model::UNTIMED_ATTR.into(), AttrValue::Bool(true)),
        ]
        .into(),
        provenance: input.span_provenance(format),
        ..Default::default()
    }
}

impl Format for ArksimReceiverDump {
    fn name(&self) -> &'static str {
        RECEIVER
    }

    fn detect(&self, input: &Input) -> Option<String> {
        input
            .head_json()?
            .get("tool_calls_by_conversation_turn")?
            .as_object()
            .map(|_| "arksim TraceReceiver dump: \"tool_calls_by_conversation_turn\"".to_owned())
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let Some(doc) = read_json_document(input, &mut batch) else {
            return batch;
        };
        let record = jsonrec::whole_record(input, RECEIVER);
        let Some(turns) = doc
            .get("tool_calls_by_conversation_turn")
            .and_then(Value::as_object)
        else {
            return batch;
        };
        let mut total = 0;
        for (key, calls) in turns {
            // Keys are `<conversation_id>#turn<n>`, as the receiver files them.
            let Some((conversation, turn)) = key
                .rsplit_once("#turn")
                .filter(|(c, t)| !c.is_empty() && !t.is_empty())
            else {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!("key {key:?} is not <conversation>#turn<n>; skipped"),
                ));
                continue;
            };
            let invocation = turn_invocation_id(conversation, turn);
            let root_id = turn_span_id(conversation, turn);
            let root = turn_root_span(&invocation, conversation, turn, 0, input, RECEIVER.into());
            batch.spans.push(root);
            let list = calls.as_array().map(Vec::as_slice).unwrap_or_default();
            let pointer = format!(
                "/tool_calls_by_conversation_turn/{}",
                jsonrec::pointer_token(key)
            );
            for (k, call) in list.iter().enumerate() {
                let Some(call) = ToolCallRecord::from_json(call, format!("{pointer}/{k}")) else {
                    continue;
                };
                total += 1;
                let span = call.to_span(
                    &CallPlacement {
                        trace_id: &invocation,
                        parent_id: &root_id,
                        fallback_id: format!("{root_id}/tool-{k}"),
                        time: k as u64,
                        format: RECEIVER,
                        record: record.as_ref(),
                        label: &invocation,
                    },
                    input,
                    &mut batch,
                );
                batch.spans.push(span);
            }
        }
        if total == 0 {
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
