//! `compare A B` on a real arksim fixture and a rerun of it (fresh simulation and conversation
//! ids, one verdict flipped): every case lands in its class, the exit code gates on newly
//! failing cases, and the JSON and the text say the same.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::arksim_rerun::{ARKSIM_FIXTURE, rerun};
use crate::inspect_fixtures::inspect_log;

fn compare(a: &Path, b: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(extra)
        .output()
        .expect("run compare")
}

/// Each class's cases as `scenario#index`.
fn classes(json: &Value) -> Vec<(&'static str, Vec<String>)> {
    [
        "newly_failing",
        "fixed",
        "still_failing",
        "still_passing",
        "only_in_a",
        "only_in_b",
    ]
    .into_iter()
    .map(|class| {
        let cases = json[class]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                format!(
                    "{}#{}",
                    entry["case"]["id"].as_str().unwrap(),
                    entry["case"]["index"]
                )
            })
            .collect();
        (class, cases)
    })
    .collect()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("compare --json prints JSON")
}

#[test]
fn a_verdict_flipped_in_a_rerun_is_newly_failing_one_way_and_fixed_the_other() {
    let rerun_dir = tempfile::tempdir().unwrap();
    rerun(rerun_dir.path(), true, "refund_two_turns");
    let (a, b) = (Path::new(ARKSIM_FIXTURE), rerun_dir.path());

    let forward = compare(a, b, &["--json"]);
    assert_eq!(
        forward.status.code(),
        Some(1),
        "a newly failing case fails the gate"
    );
    let json = json_of(&forward);
    assert_eq!(
        classes(&json),
        [
            ("newly_failing", vec!["refund_two_turns#1".to_owned()]),
            ("fixed", vec![]),
            ("still_failing", vec![]),
            ("still_passing", vec!["refund_two_turns#0".to_owned()]),
            ("only_in_a", vec![]),
            ("only_in_b", vec![]),
        ]
    );
    let newly = &json["newly_failing"][0];
    assert_eq!(newly["b"]["facets"], serde_json::json!(["eval-failed"]));
    assert_eq!(newly["b"]["eval"]["label"], "false information");
    assert_ne!(
        newly["a"]["id"], newly["b"]["id"],
        "paired across fresh ids"
    );
    assert_eq!(
        json["keyed_by"],
        serde_json::json!({"a": "case", "b": "case"})
    );

    let backward = compare(b, a, &["--json"]);
    assert_eq!(backward.status.code(), Some(0), "a fix passes the gate");
    let json = json_of(&backward);
    assert_eq!(
        classes(&json)[1],
        ("fixed", vec!["refund_two_turns#1".to_owned()])
    );
    let any = compare(b, a, &["--fail-on", "any-failing"]);
    assert_eq!(any.status.code(), Some(0), "nothing fails in B");
    let any = compare(a, b, &["--fail-on", "any-failing"]);
    assert_eq!(any.status.code(), Some(1));

    // The text says the same counts as the JSON.
    let text = String::from_utf8(compare(a, b, &[]).stdout).unwrap();
    for (class, count) in [("newly failing", 1), ("fixed", 0), ("still passing", 1)] {
        assert!(text.contains(&format!("{class}: {count}\n")), "{text}");
    }
    assert!(
        text.contains("newly failing  refund_two_turns #1  A: passing  B: eval-failed"),
        "{text}"
    );
}

#[test]
fn cases_of_another_scenario_are_only_in_one_run() {
    let renamed = tempfile::tempdir().unwrap();
    rerun(renamed.path(), false, "refund_renamed");
    let output = compare(Path::new(ARKSIM_FIXTURE), renamed.path(), &["--json"]);
    assert_eq!(output.status.code(), Some(0), "nothing fails in B");
    let json = json_of(&output);
    let classes = classes(&json);
    assert_eq!(classes[4].1, ["refund_two_turns#0", "refund_two_turns#1"]);
    assert_eq!(classes[5].1, ["refund_renamed#0", "refund_renamed#1"]);

    // A case run in B only that fails is new in B: the default gate fails on it.
    let failing = tempfile::tempdir().unwrap();
    rerun(failing.path(), true, "refund_renamed");
    let output = compare(Path::new(ARKSIM_FIXTURE), failing.path(), &[]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn runs_without_a_case_pair_by_name_and_occurrence() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/corpus/otel-genai/genai-latest.spans.otlp.jsonl"
    );
    let output = compare(Path::new(file), Path::new(file), &["--json"]);
    let json = json_of(&output);
    assert_eq!(
        json["keyed_by"],
        serde_json::json!({"a": "name_and_occurrence", "b": "name_and_occurrence"})
    );
    let classes = classes(&json);
    let paired = classes[2].1.len() + classes[3].1.len();
    assert!(paired > 0, "{json}");
    assert!(classes[0].1.is_empty() && classes[1].1.is_empty());
    assert!(classes[4].1.is_empty() && classes[5].1.is_empty());
    assert_eq!(
        output.status.code(),
        Some(0),
        "the same run has nothing newly failing"
    );
}

#[test]
fn a_missing_side_is_an_error() {
    let output = compare(
        Path::new(ARKSIM_FIXTURE),
        Path::new("/nonexistent/run-b"),
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("nothing could be loaded from B"),
        "{stderr}"
    );
}

/// An OTLP run whose traces carry `dataset.example.id`, fresh trace ids per run; `failing`
/// names the examples whose root span fails.
fn otlp_run(dir: &Path, run: u8, failing: &[&str]) -> std::path::PathBuf {
    let path = dir.join(format!("run-{run}.otlp.jsonl"));
    let mut lines = String::new();
    for (n, example) in ["ex-1", "ex-2", "ex-3"].into_iter().enumerate() {
        let status = if failing.contains(&example) { 2 } else { 1 };
        let line = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
            "scopeSpans": [{"spans": [{
                "traceId": format!("{run:02x}{n:030x}"),
                "spanId": format!("{:016x}", n + 1),
                "name": "invoke_agent",
                "startTimeUnixNano": format!("{}", 1_764_496_800_000_000_000u64 + n as u64),
                "endTimeUnixNano": format!("{}", 1_764_496_801_000_000_000u64 + n as u64),
                "attributes": [{"key": "dataset.example.id", "value": {"stringValue": example}}],
                "status": {"code": status}
            }]}]
        }]});
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    std::fs::write(&path, lines).unwrap();
    path
}

#[test]
fn otlp_runs_pair_by_the_attribute_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let a = otlp_run(dir.path(), 1, &["ex-3"]);
    let b = otlp_run(dir.path(), 2, &["ex-2", "ex-3"]);
    let output = compare(&a, &b, &["--json", "--key", "attr:dataset.example.id"]);
    assert_eq!(output.status.code(), Some(1));
    let json = json_of(&output);
    assert_eq!(
        json["keyed_by"],
        serde_json::json!({"a": "case", "b": "case"})
    );
    assert_eq!(
        classes(&json),
        [
            ("newly_failing", vec!["ex-2#0".to_owned()]),
            ("fixed", vec![]),
            ("still_failing", vec!["ex-3#0".to_owned()]),
            ("still_passing", vec!["ex-1#0".to_owned()]),
            ("only_in_a", vec![]),
            ("only_in_b", vec![]),
        ]
    );
    assert_eq!(json["still_failing"][0]["reason_changed"], false);
    assert_eq!(json["summary"]["a"]["failing"], 1);
    assert_eq!(json["summary"]["b"]["failing"], 2);
    let bad = compare(&a, &b, &["--key", "dataset.example.id"]);
    assert_eq!(bad.status.code(), Some(2), "a key must say attr:");
}

#[test]
fn the_markdown_and_the_json_agree_and_out_writes_an_owner_only_file() {
    let rerun_dir = tempfile::tempdir().unwrap();
    rerun(rerun_dir.path(), true, "refund_two_turns");
    let (a, b) = (Path::new(ARKSIM_FIXTURE), rerun_dir.path());
    let json = json_of(&compare(a, b, &["--json"]));
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("comparison.md");
    // A planted link is replaced, its target untouched.
    let target = out_dir.path().join("target.txt");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, &out).unwrap();
    let written = compare(a, b, &["--md", "--out", out.to_str().unwrap()]);
    assert_eq!(
        written.status.code(),
        Some(1),
        "the gate holds whatever the output"
    );
    assert!(written.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(&out).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let md = std::fs::read_to_string(&out).unwrap();
    for (class, label) in [
        ("newly_failing", "newly failing"),
        ("fixed", "fixed"),
        ("still_failing", "still failing"),
        ("still_passing", "still passing"),
        ("only_in_a", "only in A"),
        ("only_in_b", "only in B"),
    ] {
        let count = json[class].as_array().unwrap().len();
        assert!(
            md.contains(&format!("| {label} | {count} |")),
            "{label}: {md}"
        );
    }
    assert!(md.contains("| pass rate | 100.0% | 50.0% |"), "{md}");
    assert!(
        md.contains("| `refund_two_turns` | 1 | passing | eval-failed `false information`: `made up a refund policy` |"),
        "{md}"
    );
}

#[test]
fn a_score_drop_beyond_the_threshold_fails_the_gate_and_cases_are_counted_by_id() {
    let rerun_dir = tempfile::tempdir().unwrap();
    rerun(rerun_dir.path(), true, "refund_two_turns");
    let (a, b) = (Path::new(ARKSIM_FIXTURE), rerun_dir.path());
    // Turn scores 5 and 5 in A, 5 and 1 in B: the mean falls by 2.
    let json = json_of(&compare(a, b, &["--json"]));
    assert_eq!(json["summary"]["a"]["mean_score"], 5.0);
    assert_eq!(json["summary"]["b"]["mean_score"], 3.0);
    assert_eq!(
        json["summary"]["b"]["by_case"]["refund_two_turns"],
        serde_json::json!({"runs": 2, "failing": 1})
    );
    let gate = |threshold: &str| {
        compare(a, b, &["--fail-on", &format!("score-drop={threshold}")])
            .status
            .code()
    };
    assert_eq!(gate("1.5"), Some(1));
    assert_eq!(gate("2.5"), Some(0));
    assert_eq!(gate("much"), Some(2), "a threshold must be a number");
    assert_eq!(
        compare(b, a, &["--fail-on", "score-drop=0"]).status.code(),
        Some(0),
        "a rise is no drop"
    );
}

/// The two Inspect runs of the fixture corpus, classified as its SOURCES.md says: a tool error
/// the agent recovered from (geo-06 in A) leaves the verdict to the scorers.
#[test]
fn two_inspect_runs_classify_as_their_truth_table_says() {
    for extension in ["json", "eval"] {
        two_inspect_logs_classify_as_their_truth_table_says(extension);
    }
}

fn two_inspect_logs_classify_as_their_truth_table_says(extension: &str) {
    let output = compare(
        &inspect_log("A", extension),
        &inspect_log("B", extension),
        &["--json"],
    );
    assert_eq!(output.status.code(), Some(1));
    let json = json_of(&output);
    let ids = |cases: &[String]| {
        cases
            .iter()
            .map(|case| case.trim_end_matches("#1").to_owned())
            .collect::<Vec<_>>()
    };
    let classes = classes(&json);
    let expected: [(&str, &[&str]); 6] = [
        ("newly_failing", &["geo-03", "geo-04", "geo-06"]),
        ("fixed", &["geo-02", "geo-07"]),
        ("still_failing", &["geo-05", "geo-08"]),
        ("still_passing", &["geo-01"]),
        ("only_in_a", &[]),
        ("only_in_b", &[]),
    ];
    for ((class, cases), (want_class, want)) in classes.iter().zip(expected) {
        assert_eq!(*class, want_class);
        assert_eq!(ids(cases), want, "{class}");
    }
    assert!(
        classes[2].1.iter().all(|case| case.ends_with("#1")),
        "epoch 1"
    );
    let geo_08 = &json["still_failing"][1];
    assert_eq!(geo_08["b"]["eval"]["label"], "sample error");
    assert_eq!(geo_08["reason_changed"], true);
    assert_eq!(json["summary"]["b"]["errored"], 1);
    assert_eq!(json["summary"]["a"]["evaluated"], 8);
}
