//! Inspect AI's own reading of its logs, for the test families that hold toolcap-tui against it:
//! `.venv`'s inspect-ai 0.3.285 (which `.ci/run` installs) runs `tests/python/inspect_truth.py`
//! (`read_eval_log`), and [`check_against_inspect`] compares a `dump --json` document with it.
//!
//! Without `.venv` the tests using this fail: a skipped test would pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn venv_python() -> PathBuf {
    let python = root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: create it with `python3 -m venv .venv && .venv/bin/pip install \
         inspect-ai==0.3.285` (as .ci/run does)",
        python.display()
    );
    python
}

/// What Inspect reads from `logs`, one entry per log.
pub fn inspect_truth(logs: &[PathBuf]) -> Vec<Value> {
    let output = Command::new(venv_python())
        .arg(root().join("tests/python/inspect_truth.py"))
        .args(logs)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// A scorer's value that fails a sample, as the project's truth table (SOURCES.md) has it.
fn fails(value: &Value) -> bool {
    value == "I" || value.as_f64() == Some(0.0) || value == false
}

/// Checks `document` (`dump --json` of one log) against Inspect's reading of it, sample by
/// sample, and returns the number of samples checked.
pub fn check_against_inspect(document: &Value, truth: &Value) -> usize {
    let runs: BTreeMap<(String, u64), &Value> = document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let case = &run["case"];
            let key = (
                case["id"].as_str().unwrap().to_owned(),
                case["index"].as_u64().unwrap(),
            );
            (key, run)
        })
        .collect();
    let samples = truth["samples"].as_array().unwrap();
    assert_eq!(runs.len(), samples.len(), "one run per sample and epoch");
    for sample in samples {
        let id = sample["id"].as_str().unwrap();
        let epoch = sample["epoch"].as_u64().unwrap();
        let run = runs[&(id.to_owned(), epoch)];
        let what = format!("{} {id}/{epoch}", truth["file"]);
        // The verdict: failing when the sample errored or a scorer gave I.
        let scores = sample["scores"].as_object().unwrap();
        let errored = !sample["error"].is_null();
        let failed = errored || scores.values().any(fails);
        assert_eq!(run["eval"]["passed"], !failed, "{what}: {}", run["eval"]);
        // A failed tool call also fails the run (a span facet) when the scorers passed it.
        let tool_failed = sample["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|call| !call["error_type"].is_null() || call["failed"] == true);
        assert_eq!(run["failing"], failed || tool_failed, "{what}");
        if errored {
            assert_eq!(run["eval"]["label"], "sample error", "{what}");
            let first = sample["error"].as_str().unwrap().lines().next().unwrap();
            assert_eq!(run["eval"]["reason"], first, "{what}");
            assert_eq!(run["status"], "error", "{what}");
        } else {
            for (scorer, value) in scores {
                let shown = format!(
                    "{scorer}={}",
                    value.as_str().map_or(value.to_string(), str::to_owned)
                );
                let label = run["eval"]["label"].as_str().unwrap();
                assert!(
                    label.split(' ').any(|part| part == shown),
                    "{what}: {label} lacks {shown}"
                );
            }
        }
        // What the sample expected: Inspect's target, several right answers one a line.
        let target = match &sample["target"] {
            Value::Array(answers) => answers
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.as_str().unwrap().to_owned(),
        };
        match target.trim() {
            "" => assert!(run["eval"].get("target").is_none(), "{what}"),
            _ => assert_eq!(run["eval"]["target"], target.as_str(), "{what}"),
        }
        // A limit that stopped the sample is said in Inspect's words.
        match sample["limit_reason"].as_str() {
            Some(reason) => assert_eq!(run["eval"]["limit"], reason, "{what}"),
            None => assert_eq!(
                run["eval"].get("limit").is_some(),
                !sample["limit"].is_null(),
                "{what}"
            ),
        }
        assert_eq!(run["tokens"]["input"], sample["input_tokens"], "{what}");
        // The sample's own span is timed by started_at and completed_at.
        let spans = run["spans"].as_array().unwrap();
        let root = spans.iter().find(|s| s["depth"] == 0).unwrap();
        let started_us = sample["started_us"].as_u64().unwrap();
        let completed_us = sample["completed_us"].as_u64().unwrap();
        assert_eq!(
            root["start_unix_nano"].as_u64().unwrap() / 1000,
            started_us,
            "{what}"
        );
        let root_us = (root["duration_ms"].as_f64().unwrap() * 1000.0).round() as u64;
        assert_eq!(root_us, completed_us - started_us, "{what}");
        // It holds the sample's input and its final completion.
        if let Some(input) = sample["input"].as_str() {
            assert_eq!(root["input"]["value"][0]["role"], "user", "{what}");
            assert_eq!(
                root["input"]["value"][0]["parts"][0]["content"], input,
                "{what}"
            );
        }
        let completion = sample["completion"].as_str().unwrap();
        if !completion.is_empty() {
            let said: String = root["output"]["value"][0]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|part| part["type"] == "text")
                .map(|part| part["content"].as_str().unwrap())
                .collect();
            assert_eq!(said, completion, "{what}");
        }
        let llm = spans.iter().filter(|s| s["kind"] == "llm").count();
        assert_eq!(
            llm as u64,
            sample["model_calls"].as_u64().unwrap(),
            "{what}"
        );
        // Every tool call: its span by call id, failed exactly as Inspect says, timed by the
        // event's timestamp and completed.
        let tools = sample["tools"].as_array().unwrap();
        let tool_spans: Vec<&Value> = spans.iter().filter(|s| s["kind"] == "tool").collect();
        assert_eq!(tool_spans.len(), tools.len(), "{what}");
        for call in tools {
            let span = tool_spans
                .iter()
                .find(|s| s["tool_call_id"] == call["id"])
                .unwrap_or_else(|| panic!("{what}: no span for call {}", call["id"]));
            assert_eq!(span["tool_name"], call["function"], "{what}");
            let call_failed = !call["error_type"].is_null() || call["failed"] == true;
            assert_eq!(
                span["status"] == "error",
                call_failed,
                "{what} {}",
                call["id"]
            );
            if let Some(kind) = call["error_type"].as_str() {
                assert_eq!(span["error_type"], kind, "{what}");
            }
            let start_us = call["start_us"].as_u64().unwrap();
            assert_eq!(
                span["start_unix_nano"].as_u64().unwrap() / 1000,
                start_us,
                "{what}"
            );
            if let Some(end_us) = call["end_us"].as_u64() {
                let span_us = (span["duration_ms"].as_f64().unwrap() * 1000.0).round() as u64;
                assert_eq!(span_us, end_us - start_us, "{what} {}", call["id"]);
            }
        }
    }
    samples.len()
}
