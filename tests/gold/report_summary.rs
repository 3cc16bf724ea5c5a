//! The report's failure summary on a held-out arksim run (issue 43): the tables give the exact
//! count per evaluator label and per failed tool, counted here independently from the run's own
//! `evaluation.json` and `simulation.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const RUN: &str = "tests/fixtures/corpus/arksim/run-direct";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read_json(rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(rel)).unwrap()).unwrap()
}

fn report(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("report")
        .args(args)
        .arg(fixture(RUN))
        .output()
        .expect("run the binary");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    out
}

/// Failing turns per evaluator label, from `evaluation.json`: arksim's labels for a turn that
/// passed are `no failure` and `skipped_good_performance` (or none).
fn failing_turns_by_label() -> BTreeMap<String, usize> {
    let evaluation = read_json(&format!("{RUN}/evaluation.json"));
    let mut counts = BTreeMap::new();
    for conversation in evaluation["conversations"].as_array().unwrap() {
        for turn in conversation["turn_scores"].as_array().unwrap() {
            let label = turn["turn_behavior_failure"].as_str().unwrap_or("");
            let normalized = label.trim().to_lowercase();
            if !["", "no failure", "skipped_good_performance"].contains(&normalized.as_str()) {
                *counts.entry(label.to_owned()).or_default() += 1;
            }
        }
    }
    counts
}

/// A turn: its conversation id and turn index.
type Turn = (String, u64);

/// Per tool: (calls, failed calls, turns with a failed call), from `simulation.json`.
fn calls_by_tool() -> BTreeMap<String, (usize, usize, usize)> {
    let simulation = read_json(&format!("{RUN}/simulation.json"));
    let mut counts: BTreeMap<String, (usize, usize, BTreeSet<Turn>)> = BTreeMap::new();
    for conversation in simulation["conversations"].as_array().unwrap() {
        let id = conversation["conversation_id"].as_str().unwrap().to_owned();
        for message in conversation["conversation_history"].as_array().unwrap() {
            let turn = message["turn_id"].as_u64().unwrap();
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let entry = counts
                    .entry(call["name"].as_str().unwrap().to_owned())
                    .or_default();
                entry.0 += 1;
                if !call["error"].is_null() {
                    entry.1 += 1;
                    entry.2.insert((id.clone(), turn));
                }
            }
        }
    }
    counts
        .into_iter()
        .map(|(tool, (calls, failed, turns))| (tool, (calls, failed, turns.len())))
        .collect()
}

#[test]
fn the_report_tables_give_exact_counts_per_evaluator_label_and_failed_tool() {
    let labels = failing_turns_by_label();
    let tools = calls_by_tool();
    assert!(!labels.is_empty() && tools.values().any(|t| t.1 > 0));

    let json: Value = serde_json::from_slice(&report(&["--json"]).stdout).expect("report --json");
    let tables = &json["summary"]["tables"];
    let by_label: BTreeMap<String, usize> = tables["evaluator_labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let label = row["label"].as_str().unwrap().to_owned();
            (label, row["runs"].as_u64().unwrap() as usize)
        })
        .collect();
    assert_eq!(by_label, labels);
    let by_tool: BTreeMap<String, (usize, usize, usize)> = tables["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let count = |key: &str| row[key].as_u64().unwrap() as usize;
            (
                row["label"].as_str().unwrap().to_owned(),
                (count("calls"), count("failed_calls"), count("runs")),
            )
        })
        .collect();
    assert_eq!(by_tool, tools);

    let markdown = String::from_utf8(report(&[]).stdout).unwrap();
    let summary_end = markdown.find("\n## `").expect("per-run sections follow");
    let summary = &markdown[..summary_end];
    assert!(
        summary.contains("a run may count in several rows"),
        "{summary}"
    );
    assert!(
        summary.contains("### Failures by evaluator label"),
        "{summary}"
    );
    for (label, runs) in &labels {
        let row = format!("| `{label}` | {runs} |");
        assert!(summary.contains(&row), "{row}\n{summary}");
    }
    assert!(summary.contains("### Failures by tool"), "{summary}");
    for (tool, (calls, failed, runs)) in &tools {
        let row = format!("| `{tool}` | {calls} | {failed} | {runs} |");
        assert!(summary.contains(&row), "{row}\n{summary}");
    }
}

#[test]
fn a_secret_planted_in_an_evaluator_reason_and_label_is_masked_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture("tests/fixtures/arksim-two-turn");
    for name in ["evaluation.json", "scenarios.json", "simulation.json"] {
        std::fs::copy(source.join(name), dir.path().join(name)).unwrap();
    }
    let secret = "sk-PLANTEDREASONabcdef0123456789";
    let email = "planted.judge@example.com";
    let path = dir.path().join("evaluation.json");
    let mut evaluation: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let turn = &mut evaluation["conversations"][0]["turn_scores"][0];
    turn["turn_behavior_failure"] = format!("REASONMARK label {email}").into();
    turn["turn_behavior_failure_reason"] =
        format!("REASONMARK the key {secret} was sent to {email}\nsecond line").into();
    std::fs::write(&path, serde_json::to_string(&evaluation).unwrap()).unwrap();

    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
            .arg("report")
            .args(args)
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let markdown = run(&[]);
    let summary = &markdown[..markdown.find("\n## `").expect("a failing run")];
    assert!(summary.contains("REASONMARK the key"), "shown: {summary}");
    let json = run(&["--json"]);
    let parsed: Value = serde_json::from_str(&json).unwrap();
    let reasons = &parsed["summary"]["tables"]["reasons"];
    assert!(
        reasons[0]["label"].as_str().unwrap().contains("REASONMARK"),
        "{reasons}"
    );
    assert!(reasons[0]["query"].is_null(), "a query would carry it");
    assert!(parsed["summary"]["tables"]["evaluator_labels"][0]["query"].is_null());
    for planted in [secret, email] {
        assert!(!summary.contains(planted), "{planted} in {summary}");
        assert!(!json.contains(planted), "{planted} in the JSON");
    }
}
