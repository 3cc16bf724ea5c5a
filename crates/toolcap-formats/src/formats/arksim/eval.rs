//! arksim `evaluation.json` (per-turn verdicts) and scenario files (`scenarios.json` and the
//! `focus/*.json` rerun subsets, whose `tool_calls` assertions are golds).
//!
//! - Each evaluated turn gets an [`EvalVerdict`] keyed by the same invocation id
//!   `simulation.json` uses, plus an `arksim evaluation` span under the turn span that keeps
//!   everything else the file says about the turn: every score, the qualitative results, the
//!   conversation's status and scores, and the unique errors the turn is an occurrence of.
//! - A turn fails when `turn_behavior_failure` is anything but `no failure` /
//!   `skipped_good_performance`; the score is `turn_score` (-1, "not computed", is no score).
//! - A scenario's first `tool_calls` assertion becomes a [`GoldSpec`] keyed
//!   `arksim-scenario/<scenario_id>`; `simulation.json` aliases that key to the conversation's
//!   last turn with tool calls. arksim matches the assertion against all the conversation's
//!   turns concatenated (invocations `<conversation_id>/turn-*`). Without a loaded simulation
//!   the gold stays on a span-less invocation of that key, i.e. "gold, but no run".

use serde_json::Value;

use crate::formats::arksim::{self, read_json_document};
use crate::formats::common::jsonrec;
use crate::formats::{Format, Input};
use crate::model::{
    AttrValue, Batch, EVALUATOR_ATTR, ErrorInfo, EvalVerdict, GoldCall, GoldSpec, Problem, Span,
    SpanKind, SpanStatus,
};

pub struct ArksimEvaluation;
pub struct ArksimScenarios;

const EVALUATION: &str = "arksim-evaluation";
const SCENARIOS: &str = "arksim-scenarios";

/// Labels that mean the turn passed.
const PASSING_LABELS: &[&str] = &["no failure", "skipped_good_performance"];

impl Format for ArksimEvaluation {
    fn name(&self) -> &'static str {
        EVALUATION
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        let conversations = head.get("conversations")?.as_array()?;
        let is_evaluation = head.get("evaluation_id").is_some()
            || head.get("unique_errors").is_some()
            || conversations
                .first()
                .is_some_and(|c| c.get("turn_scores").is_some());
        is_evaluation
            .then(|| "arksim evaluation: \"conversations\" with \"turn_scores\"".to_owned())
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let Some(doc) = read_json_document(input, &mut batch) else {
            return batch;
        };
        let record = jsonrec::whole_record(input, EVALUATION);
        // The file's `generated_at` is when the evaluation ran, not when the turn did.
        let time = 0;
        let unique_errors = doc
            .get("unique_errors")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let conversations = doc
            .get("conversations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let simulation_id = jsonrec::str_at(&doc, "simulation_id").unwrap_or("");
        // Two evaluations of one simulation each keep their own span in the turn's tree.
        let evaluation_id = jsonrec::str_at(&doc, "evaluation_id").unwrap_or("");
        let mut turns = 0;
        for (c, conversation) in conversations.iter().enumerate() {
            let Some(conversation_id) = jsonrec::id_at(conversation, "conversation_id") else {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!("conversation #{c} has no conversation_id; skipped"),
                ));
                continue;
            };
            let turn_scores = conversation
                .get("turn_scores")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (t, turn) in turn_scores.iter().enumerate() {
                let Some(turn_id) = jsonrec::id_at(turn, "turn_id") else {
                    continue;
                };
                turns += 1;
                // The turn of the simulation this evaluation judged, not a rerun's.
                let invocation =
                    arksim::run_turn_invocation_id(simulation_id, &conversation_id, &turn_id);
                batch.aliases.push((
                    arksim::turn_invocation_id(&conversation_id, &turn_id),
                    invocation.clone(),
                ));
                let verdict = verdict_of(turn);
                let mut span = Span {
                    trace_id: invocation.clone().into(),
                    span_id: match evaluation_id {
                        "" => format!("arksim-eval:{conversation_id}/{turn_id}"),
                        id => format!("arksim-eval:{id}:{conversation_id}/{turn_id}"),
                    }
                    .into(),
                    parent_span_id: Some(arksim::turn_span_id(&conversation_id, &turn_id).into()),
                    name: "arksim evaluation".into(),
                    kind: SpanKind::Other,
                    start_unix_nano: time,
                    end_unix_nano: time,
                    provenance: input.span_provenance(EVALUATION.into()),
                    extras: crate::model::SpanExtras {
                        output: jsonrec::payload(
                            "turn_scores",
                            Some(turn),
                            record.as_ref(),
                            &format!("/conversations/{c}/turn_scores/{t}"),
                        )
                        .into(),
                        ..Default::default()
                    }
                    .into(),
                    ..Default::default()
                };
                // The span carries the verdict's status, so a failed evaluation never reads ✓ ok.
                if !verdict.passed {
                    span.status = SpanStatus::Error;
                    span.set_error(Some(ErrorInfo {
                        error_type: Some("evaluation failed".into()),
                        message: Some(verdict.label.as_str().into()),
                        ..Default::default()
                    }));
                }
                batch.evals.push((invocation.clone(), verdict));
                span.identity_mut().invocation_id = Some(invocation.into());
                span.identity_mut().correlation_id = Some(conversation_id.clone().into());
                let mut attributes =
                    turn_attributes(conversation, turn, &conversation_id, unique_errors);
                attributes.push((EVALUATOR_ATTR.to_owned(), AttrValue::Bool(true)));
                span.attributes = crate::model::shared_keys(attributes);
                batch.spans.push(span);
            }
        }
        if turns == 0 {
            batch.problems.push(Problem::warning(
                input.origin,
                None,
                "0 evaluated turns found",
            ));
        }
        batch
    }

    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        jsonrec::load_pointer(record, locator)
    }
}

fn verdict_of(turn: &Value) -> EvalVerdict {
    let label = jsonrec::str_at(turn, "turn_behavior_failure")
        .unwrap_or("")
        .to_owned();
    let normalized = label.trim().to_lowercase();
    EvalVerdict {
        passed: normalized.is_empty() || PASSING_LABELS.contains(&normalized.as_str()),
        score: turn
            .get("turn_score")
            .and_then(Value::as_f64)
            .filter(|s| *s >= 0.0),
        threshold: None,
        label,
        reason: jsonrec::str_at(turn, "turn_behavior_failure_reason")
            .unwrap_or("")
            .to_owned(),
        // The evaluator's own words about the turn, not a copy of the model's answer.
        reason_quotes_output: false,
        scorers: Vec::new(),
        target: None,
        limit: None,
    }
}

fn turn_attributes(
    conversation: &Value,
    turn: &Value,
    conversation_id: &str,
    unique_errors: &[Value],
) -> Vec<(String, AttrValue)> {
    let mut attrs = vec![(
        "arksim.conversation_id".to_owned(),
        AttrValue::Str(conversation_id.into()),
    )];
    for key in [
        "turn_id",
        "turn_score",
        "turn_behavior_failure",
        "turn_behavior_failure_reason",
    ] {
        if let Some(v) = turn.get(key) {
            attrs.push((format!("arksim.{key}"), jsonrec::attr_of(v)));
        }
    }
    for score in turn
        .get("scores")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        if let (Some(name), Some(value)) = (jsonrec::str_at(score, "name"), score.get("value")) {
            attrs.push((format!("arksim.score.{name}"), jsonrec::attr_of(value)));
        }
    }
    for (q, qual) in turn
        .get("qual_scores")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let name = jsonrec::str_at(qual, "name").unwrap_or("qual");
        let value = jsonrec::str_at(qual, "value").unwrap_or("");
        let reason = jsonrec::str_at(qual, "reason").unwrap_or("");
        attrs.push((
            format!("arksim.qual.{q}.{name}"),
            AttrValue::Str(format!("{value}: {reason}").into()),
        ));
    }
    for key in [
        "evaluation_status",
        "overall_agent_score",
        "goal_completion_score",
        "goal_completion_reason",
        "turn_success_ratio",
    ] {
        if let Some(v) = conversation.get(key) {
            attrs.push((format!("arksim.conversation.{key}"), jsonrec::attr_of(v)));
        }
    }
    let turn_id = jsonrec::id_at(turn, "turn_id");
    for error in unique_errors {
        let occurs_here = error
            .get("occurrences")
            .and_then(Value::as_array)
            .is_some_and(|list| {
                list.iter().any(|o| {
                    jsonrec::id_at(o, "conversation_id").as_deref() == Some(conversation_id)
                        && jsonrec::id_at(o, "turn_id") == turn_id
                })
            });
        if occurs_here {
            let id = jsonrec::str_at(error, "unique_error_id").unwrap_or("?");
            let text = format!(
                "[{}] {}: {}",
                jsonrec::str_at(error, "severity").unwrap_or("?"),
                jsonrec::str_at(error, "behavior_failure_category").unwrap_or("?"),
                jsonrec::str_at(error, "unique_error_description").unwrap_or("")
            );
            attrs.push((
                format!("arksim.unique_error.{id}"),
                AttrValue::Str(text.into()),
            ));
        }
    }
    attrs
}

impl Format for ArksimScenarios {
    fn name(&self) -> &'static str {
        SCENARIOS
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        let first = head.get("scenarios")?.as_array()?.first()?;
        first
            .get("scenario_id")
            .is_some()
            .then(|| "arksim scenarios: \"scenarios\" with \"scenario_id\"".to_owned())
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let Some(doc) = read_json_document(input, &mut batch) else {
            return batch;
        };
        let scenarios = doc
            .get("scenarios")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (n, scenario) in scenarios.iter().enumerate() {
            let Some(scenario_id) = jsonrec::id_at(scenario, "scenario_id") else {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!("scenario #{n} has no usable scenario_id; skipped"),
                ));
                continue;
            };
            let assertions: Vec<&Value> = scenario
                .get("assertions")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter(|a| jsonrec::str_at(a, "type") == Some("tool_calls"))
                        .collect()
                })
                .unwrap_or_default();
            let Some(assertion) = assertions.first() else {
                continue;
            };
            if assertions.len() > 1 {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!(
                        "scenario {scenario_id}: {} tool_calls assertions; only the first is kept",
                        assertions.len()
                    ),
                ));
            }
            let (gold, mixed) = gold_of(
                assertion,
                &format!("{} scenario {scenario_id}", input.origin),
            );
            if mixed {
                batch.problems.push(Problem::warning(
                    input.origin,
                    None,
                    format!("scenario {scenario_id}: expected calls mix exact and partial arg_match_mode; kept as exact"),
                ));
            }
            batch.golds.push((arksim::scenario_key(&scenario_id), gold));
        }
        batch
    }
}

/// The gold of one `tool_calls` assertion, and whether its calls mixed `exact` and `partial`.
fn gold_of(assertion: &Value, source: &str) -> (GoldSpec, bool) {
    let mut modes: Vec<&str> = Vec::new();
    let calls = assertion
        .get("expected")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|expected| {
            let tool = jsonrec::str_at(expected, "name")?.to_owned();
            // arksim's default is `ignore`: arguments are then not checked at all.
            let mode = jsonrec::str_at(expected, "arg_match_mode").unwrap_or("ignore");
            let args = match mode {
                "exact" | "partial" => {
                    modes.push(mode);
                    Some(
                        expected
                            .get("arguments")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                    )
                }
                _ => None,
            };
            Some(GoldCall {
                tool,
                args,
                // Per call: an `ignore` call beside an `exact` one must stay unchecked.
                arg_match_mode: Some(mode.to_owned()),
                ..Default::default()
            })
        })
        .collect();
    let mixed = modes.contains(&"exact") && modes.contains(&"partial");
    let arg_mode = if modes.contains(&"exact") {
        "exact"
    } else if modes.contains(&"partial") {
        "partial"
    } else {
        "ignore"
    };
    let gold = GoldSpec {
        calls,
        match_mode: Some(
            jsonrec::str_at(assertion, "match_mode")
                .unwrap_or("unordered")
                .to_owned(),
        ),
        arg_match_mode: Some(arg_mode.to_owned()),
        source: source.to_owned(),
    };
    (gold, mixed)
}
