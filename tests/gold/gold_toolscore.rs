//! The metric engine against toolscore 1.10.0's own output for the 10 corpus cases.
//!
//! The trace parsers for these formats live on other branches, so the actual call lists are
//! built from each case's `toolscore-record.json` (toolscore's normalized record of the trace);
//! the gold is parsed from `gold.json` by our own loader. Every metric in
//! `toolscore-result.json` must then agree within 1e-9.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolcap::gold::ActualCall;
use toolcap::gold::report::{CheckOptions, DiffReport};
use toolcap::gold::source::parse_toolscore_gold;
use toolcap::redact::Reveal;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/toolscore")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases() -> Vec<PathBuf> {
    let manifest = read_json(&corpus().join("manifest.json"));
    manifest["cases"]
        .as_array()
        .expect("manifest lists cases")
        .iter()
        .map(|c| corpus().join(c["case"].as_str().expect("case name")))
        .collect()
}

fn actual_from_record(record: &Value) -> Vec<ActualCall> {
    record["calls"]["actual"]
        .as_array()
        .expect("record has calls.actual")
        .iter()
        .map(|c| ActualCall {
            name: c["tool"].as_str().expect("tool").to_string(),
            args: c["args"].as_object().cloned(),
            failed: c["is_error"].as_bool().unwrap_or(false),
            error: c["error"].as_str().map(str::to_string),
            duration_s: c["duration"].as_f64(),
            cost: c["cost"].as_f64(),
            ..ActualCall::default()
        })
        .collect()
}

fn report_for(case: &Path) -> DiffReport {
    let (gold, _) = parse_toolscore_gold(&read_json(&case.join("gold.json")), "gold.json")
        .expect("gold parses");
    let actual = actual_from_record(&read_json(&case.join("toolscore-record.json")));
    DiffReport::build("case", gold, actual, CheckOptions::default())
}

/// Every value in `expected` must be in `ours` (numbers within 1e-9); `ours` may have more.
fn assert_covers(expected: &Value, ours: &Value, path: &str, failures: &mut Vec<String>) {
    match (expected, ours) {
        (Value::Number(e), Value::Number(o)) => {
            let (e, o) = (
                e.as_f64().unwrap_or(f64::NAN),
                o.as_f64().unwrap_or(f64::NAN),
            );
            if (e - o).abs() > 1e-9 {
                failures.push(format!("{path}: toolscore {e}, ours {o}"));
            }
        }
        (Value::Object(e), Value::Object(o)) => {
            for (k, v) in e {
                match o.get(k) {
                    Some(ov) => assert_covers(v, ov, &format!("{path}.{k}"), failures),
                    None => failures.push(format!("{path}.{k}: missing from our report")),
                }
            }
        }
        (Value::Array(e), Value::Array(o)) => {
            if e.len() != o.len() {
                failures.push(format!("{path}: {} items vs our {}", e.len(), o.len()));
            }
            for (i, (ev, ov)) in e.iter().zip(o).enumerate() {
                assert_covers(ev, ov, &format!("{path}[{i}]"), failures);
            }
        }
        (e, o) if e == o => {}
        (e, o) => failures.push(format!("{path}: toolscore {e}, ours {o}")),
    }
}

#[test]
fn all_ten_cases_are_present() {
    assert_eq!(cases().len(), 10);
}

#[test]
fn every_metric_matches_toolscore_case_by_case() {
    let mut all_failures = Vec::new();
    for case in cases() {
        let expected = read_json(&case.join("toolscore-result.json"));
        let ours = report_for(&case).to_json(Reveal::Revealed);
        let mut failures = Vec::new();
        assert_covers(
            &expected["metrics"],
            &ours["metrics"],
            "metrics",
            &mut failures,
        );
        for key in [
            "gold_calls_count",
            "trace_calls_count",
            "score",
            "grade",
            "weights",
            "required_call_recall",
            "failed_calls",
            "secrets",
        ] {
            assert_covers(
                &expected["summary"][key],
                &ours["summary"][key],
                &format!("summary.{key}"),
                &mut failures,
            );
        }
        let name = case
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        all_failures.extend(failures.into_iter().map(|f| format!("{name}: {f}")));
    }
    assert!(all_failures.is_empty(), "{}", all_failures.join("\n"));
}

#[test]
fn headline_numbers_agree_with_the_manifest() {
    let manifest = read_json(&corpus().join("manifest.json"));
    for entry in manifest["cases"].as_array().expect("cases") {
        let case = corpus().join(entry["case"].as_str().expect("case"));
        let m = report_for(&case).metrics;
        let h = &entry["headline"];
        let close = |a: f64, key: &str| {
            let e = h[key].as_f64().unwrap_or(f64::NAN);
            assert!((a - e).abs() < 1e-9, "{}: {key} {a} vs {e}", case.display());
        };
        close(m.score, "score");
        close(m.arguments.f1, "argument_f1");
        close(m.sequence.sequence_accuracy, "sequence_accuracy");
        close(m.trajectory.trajectory_accuracy, "trajectory_accuracy");
        assert_eq!(
            m.grade,
            h["grade"].as_str().unwrap_or(""),
            "{}",
            case.display()
        );
    }
}

#[test]
fn weight_override_renormalizes_like_toolscore() {
    // toolscore doc: --weight required_call_recall=0.3 gives .3077/.2308/.1538/.0769/.2308.
    let w = toolcap::gold::metrics::Weights::from_overrides(&["required_call_recall=0.3".into()])
        .expect("valid");
    let expected = [0.4 / 1.3, 0.3 / 1.3, 0.2 / 1.3, 0.1 / 1.3, 0.3 / 1.3];
    for (got, want) in w.0.iter().zip(expected) {
        assert!((got - want).abs() < 1e-12);
    }
    for bad in [
        "nope=1",
        "selection_accuracy=-1",
        "selection_accuracy=inf",
        "x",
    ] {
        assert!(
            toolcap::gold::metrics::Weights::from_overrides(&[bad.into()]).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn display_rounds_float_noise() {
    // v01 scores 0.9999999999999999 in toolscore; the text shows 1.00.
    let report = report_for(&corpus().join("v01_custom_exact_with_timing"));
    assert!(report.metrics.score < 1.0);
    let text = report.to_text(Reveal::Revealed);
    assert!(text.contains("score 1.00 (A)"), "{text}");
    assert!(!text.contains("0.9999"), "{text}");
}

#[test]
fn a_failed_call_with_right_arguments_is_not_a_match() {
    // v06: export_notes failed with the gold's arguments; toolscore's own table shows ✓.
    let report = report_for(&corpus().join("v06_mcp_recorded_session"));
    let row = report
        .rows
        .iter()
        .find(|r| r.gold == Some(1))
        .expect("row for export_notes");
    assert_eq!(row.kind, toolcap::gold::align::RowKind::Failed);
    assert!(!report.passed());
    let text = report.to_text(Reveal::Revealed);
    assert!(
        text.contains("export failed: storage backend not configured"),
        "{text}"
    );
}

#[test]
fn whitespace_and_number_coercions_are_explained() {
    let report = report_for(&corpus().join("v09_numeric_and_string_coercion"));
    let text = report.to_text(Reveal::Revealed);
    assert!(
        text.contains("city: \"NYC\" ≈ \" NYC \"  equal after coercion (surrounding whitespace)"),
        "{text}"
    );
    assert!(
        text.contains("flag: 1 ≈ true  equal after coercion (bool↔number)"),
        "{text}"
    );
    assert!(
        text.contains("a: 1 ≈ 1.0  equal after coercion (int↔float)"),
        "{text}"
    );
    assert!(text.contains("n: 5 → \"5\"  differs"), "{text}");
    assert!(
        text.contains("mode: \"Fast\" → \"fast\"  differs (differs only in letter case)"),
        "{text}"
    );
}

#[test]
fn reordered_calls_show_as_a_move() {
    let report = report_for(&corpus().join("v02_openai_reordered"));
    let kinds: Vec<_> = report.rows.iter().map(|r| r.kind).collect();
    use toolcap::gold::align::RowKind;
    assert_eq!(kinds, vec![RowKind::Moved, RowKind::Match]);
}

#[test]
fn check_json_through_the_binary_reproduces_toolscore() {
    let mut checked = 0;
    for case in cases() {
        checked += 1;
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
            .args(["check", "--json", "--reveal", "--gold"])
            .arg(case.join("gold.json"))
            .arg(case.join("trace.json"))
            .output()
            .expect("binary runs");
        let doc: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let ours = &doc["invocations"][0];
        let expected = read_json(&case.join("toolscore-result.json"));
        let mut failures = Vec::new();
        assert_covers(
            &expected["metrics"],
            &ours["metrics"],
            "metrics",
            &mut failures,
        );
        assert!(
            failures.is_empty(),
            "{}: {}",
            case.display(),
            failures.join("\n")
        );
        let all_match = ours["passed"].as_bool().unwrap_or(false);
        assert_eq!(output.status.code(), Some(if all_match { 0 } else { 1 }));
    }
    assert_eq!(
        checked, 10,
        "every toolscore case, the empty one (v10) included"
    );
}
