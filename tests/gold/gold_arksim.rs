//! arksim assertions: our verdict per scenario must agree with the `[Trajectory]` labels arksim
//! wrote into evaluation.json, and the diff must show the missing/extra calls it dropped.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolcap::gold::ActualCall;
use toolcap::gold::align::RowKind;
use toolcap::gold::report::{CheckOptions, DiffReport};
use toolcap::gold::source::parse_arksim_scenarios;
use toolcap::redact::Reveal;

fn run_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/arksim/run-direct")
}

fn read_json(name: &str) -> Value {
    let path = run_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// All tool calls of a conversation, turns concatenated, as arksim's matcher sees them.
fn conversation_calls(conversation: &Value) -> Vec<ActualCall> {
    conversation["conversation_history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| ActualCall {
            name: c["name"].as_str().expect("name").to_string(),
            args: c["arguments"].as_object().cloned(),
            failed: !c["error"].is_null(),
            error: c["error"].as_str().map(str::to_string),
            ..ActualCall::default()
        })
        .collect()
}

/// `(label, reason)` of arksim's `[Trajectory]` finding for a conversation, if any.
fn trajectory_finding(evaluation: &Value, conversation_id: &str) -> Option<(String, String)> {
    let conversation = evaluation["conversations"]
        .as_array()
        .expect("conversations")
        .iter()
        .find(|c| c["conversation_id"] == conversation_id)
        .expect("conversation evaluated");
    conversation["turn_scores"]
        .as_array()
        .expect("turn scores")
        .iter()
        .flat_map(|t| t["qual_scores"].as_array().cloned().unwrap_or_default())
        .find_map(|q| {
            let reason = q["reason"].as_str()?.strip_prefix("[Trajectory] ")?;
            Some((q["value"].as_str()?.to_string(), reason.to_string()))
        })
}

/// (scenario id, our report, arksim's `[Trajectory]` finding).
type Case = (String, DiffReport, Option<(String, String)>);

fn reports() -> Vec<Case> {
    let (golds, problems) = parse_arksim_scenarios(&read_json("scenarios.json"), "scenarios.json");
    assert!(problems.is_empty(), "{problems:?}");
    let simulation = read_json("simulation.json");
    let evaluation = read_json("evaluation.json");
    simulation["conversations"]
        .as_array()
        .expect("conversations")
        .iter()
        .map(|conversation| {
            let scenario = conversation["scenario_id"]
                .as_str()
                .expect("scenario")
                .to_string();
            let id = conversation["conversation_id"].as_str().expect("id");
            let gold = golds
                .iter()
                .find(|(s, _)| *s == scenario)
                .map(|(_, g)| g.clone())
                .expect("scenario has an assertion");
            let report = DiffReport::build(
                id,
                gold,
                conversation_calls(conversation),
                CheckOptions::default(),
            );
            (scenario, report, trajectory_finding(&evaluation, id))
        })
        .collect()
}

#[test]
fn every_scenario_has_a_conversation() {
    let scenarios: Vec<String> = reports().into_iter().map(|(s, _, _)| s).collect();
    assert_eq!(scenarios.len(), 4);
    for expected in ["weather_ok", "order_missing", "cancel_order", "kb_only"] {
        assert!(scenarios.iter().any(|s| s == expected), "{expected}");
    }
}

#[test]
fn verdicts_agree_with_arksim_trajectory_labels() {
    for (scenario, report, finding) in reports() {
        let verdict = report.arksim.as_ref().expect("arksim verdict");
        match finding {
            None => assert!(
                verdict.matched,
                "{scenario}: arksim found no trajectory issue, we said {verdict:?}"
            ),
            Some((label, reason)) => {
                assert!(!verdict.matched, "{scenario}");
                assert_eq!(verdict.failure_label, Some(label.as_str()), "{scenario}");
                assert_eq!(verdict.reason, reason, "{scenario}");
            }
        }
        assert_eq!(report.passed(), verdict.matched, "{scenario}");
    }
}

#[test]
fn the_diff_shows_the_extra_calls_arksim_dropped() {
    for (scenario, report, _) in reports() {
        let extras: Vec<&str> = report
            .rows
            .iter()
            .filter(|r| r.kind == RowKind::Extra)
            .filter_map(|r| r.actual.map(|a| report.actual[a].name.as_str()))
            .collect();
        let verdict = report.arksim.as_ref().expect("verdict");
        match scenario.as_str() {
            "cancel_order" | "kb_only" => {
                assert_eq!(extras, vec!["get_weather"], "{scenario}");
                assert_eq!(verdict.extra_calls, vec!["get_weather".to_string()]);
                let text = report.to_text(Reveal::Redacted);
                assert!(text.contains("+ extra"), "{text}");
                assert!(text.contains("extra [get_weather]"), "{text}");
            }
            _ => assert!(verdict.extra_calls.is_empty(), "{scenario}"),
        }
    }
}

#[test]
fn a_failing_call_still_satisfies_contains_but_is_shown_failed() {
    let (_, report, _) = reports()
        .into_iter()
        .find(|(s, _, _)| s == "order_missing")
        .expect("order_missing");
    assert!(report.arksim.as_ref().is_some_and(|v| v.matched));
    assert!(
        report.rows.iter().any(|r| r.failed),
        "the failed lookup is visible"
    );
    assert!(
        report
            .rows
            .iter()
            .all(|r| r.kind != RowKind::Match || !r.failed)
    );
}
