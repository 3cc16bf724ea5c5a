//! `compare A B` on a real arksim fixture and a rerun of it (fresh simulation and conversation
//! ids, one verdict flipped): every case lands in its class, the exit code gates on newly
//! failing cases, and the JSON and the text say the same.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::arksim_rerun::{ARKSIM_FIXTURE, rerun};
use crate::inspect_fixtures::{inspect_epochs_log, inspect_log};

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
    // B's turn 0 passes and turn 1 fails: turns of a scenario are not repeats of it, so
    // nothing is flaky.
    assert_eq!(json["flaky"], serde_json::json!([]));
    assert!(newly["b"].get("flaky").is_none());

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
    let traces: Vec<Trace> = ["ex-1", "ex-2", "ex-3"]
        .into_iter()
        .map(|example| Trace {
            root: vec![("dataset.example.id", example)],
            child: vec![],
            failing: failing.contains(&example),
        })
        .collect();
    otlp_traces(dir, run, &traces)
}

/// One trace of [`otlp_traces`]: its root's and its one child's attributes, and whether its
/// root fails.
struct Trace {
    root: Vec<(&'static str, &'static str)>,
    child: Vec<(&'static str, &'static str)>,
    failing: bool,
}

/// An OTLP run of `traces`, one request each in start order, fresh trace ids per run.
fn otlp_traces(dir: &Path, run: u8, traces: &[Trace]) -> std::path::PathBuf {
    let path = dir.join(format!("run-{run}.otlp.jsonl"));
    let attributes = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(key, value)| serde_json::json!({"key": key, "value": {"stringValue": value}}))
            .collect::<Vec<_>>()
    };
    let mut lines = String::new();
    for (n, trace) in traces.iter().enumerate() {
        let status = if trace.failing { 2 } else { 1 };
        let start = 1_764_496_800_000_000_000u64 + n as u64 * 1_000;
        let trace_id = format!("{run:02x}{n:030x}");
        let mut spans = vec![serde_json::json!({
            "traceId": trace_id,
            "spanId": format!("{:016x}", 1),
            "name": "invoke_agent",
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": (start + 500).to_string(),
            "attributes": attributes(&trace.root),
            "status": {"code": status}
        })];
        if !trace.child.is_empty() {
            spans.push(serde_json::json!({
                "traceId": trace_id,
                "spanId": format!("{:016x}", 2),
                "parentSpanId": format!("{:016x}", 1),
                "name": "step",
                "startTimeUnixNano": (start + 1).to_string(),
                "endTimeUnixNano": (start + 2).to_string(),
                "attributes": attributes(&trace.child),
                "status": {"code": 1}
            }));
        }
        let line = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
            "scopeSpans": [{"spans": spans}]
        }]});
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    std::fs::write(&path, lines).unwrap();
    path
}

/// OTLP runs whose traces carry `dataset.example.id` pair by it, asked for or not; the header
/// says which attribute keyed each side.
#[test]
fn otlp_runs_pair_by_their_example_attribute_with_or_without_key() {
    let dir = tempfile::tempdir().unwrap();
    let a = otlp_run(dir.path(), 1, &["ex-3"]);
    let b = otlp_run(dir.path(), 2, &["ex-2", "ex-3"]);
    for key in [&["--key", "attr:dataset.example.id"][..], &[]] {
        let output = compare(&a, &b, &[&["--json"], key].concat());
        assert_eq!(output.status.code(), Some(1), "{key:?}");
        let json = json_of(&output);
        assert_eq!(
            json["keyed_by"],
            serde_json::json!({
                "a": "attribute",
                "b": "attribute",
                "attributes": {"a": ["dataset.example.id"], "b": ["dataset.example.id"]}
            }),
            "{key:?}"
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
            ],
            "{key:?}"
        );
        assert_eq!(json["still_failing"][0]["reason_changed"], false);
        assert_eq!(json["summary"]["a"]["failing"], 1);
        assert_eq!(json["summary"]["b"]["failing"], 2);
        assert_eq!(json["flaky"], serde_json::json!([]), "one run per example");
    }
    let text = String::from_utf8(compare(&a, &b, &[]).stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "A {} (keyed by attribute dataset.example.id) → B {} (keyed by attribute dataset.example.id)\n",
            a.display(),
            b.display()
        )),
        "{text}"
    );
    let bad = compare(&a, &b, &["--key", "dataset.example.id"]);
    assert_eq!(bad.status.code(), Some(2), "a key must say attr:");
}

/// Without `--key`, the first example attribute in tree order keys a run (here Langfuse's item
/// id on the root before Phoenix's example id on a child), runs carrying none are keyed by name,
/// and the runs of one example on one side are its repeats: flaky when they disagree.
#[test]
fn the_first_example_attribute_keys_a_run_and_its_repeats_can_be_flaky() {
    let item = |id: &'static str, failing: bool| Trace {
        root: vec![("langfuse.experiment.item.id", id)],
        child: vec![("dataset.example.id", "not-this-one")],
        failing,
    };
    let unkeyed = Trace {
        root: vec![("other.attribute", "x")],
        child: vec![],
        failing: false,
    };
    let dir = tempfile::tempdir().unwrap();
    // Each side runs item-1 twice and item-2 once; item-1's second run fails in A only. B also
    // has a run that names no example.
    let a = otlp_traces(
        dir.path(),
        1,
        &[
            item("item-1", false),
            item("item-1", true),
            item("item-2", false),
        ],
    );
    let b = otlp_traces(
        dir.path(),
        2,
        &[
            item("item-1", false),
            item("item-1", false),
            item("item-2", false),
            unkeyed,
        ],
    );
    let output = compare(&a, &b, &["--json"]);
    let json = json_of(&output);
    assert_eq!(
        json["keyed_by"],
        serde_json::json!({
            "a": "attribute",
            "b": "mixed",
            "attributes": {"a": ["langfuse.experiment.item.id"], "b": ["langfuse.experiment.item.id"]}
        })
    );
    assert_eq!(
        classes(&json),
        [
            ("newly_failing", vec![]),
            ("fixed", vec!["item-1#1".to_owned()]),
            ("still_failing", vec![]),
            (
                "still_passing",
                vec!["item-1#0".to_owned(), "item-2#0".to_owned()]
            ),
            ("only_in_a", vec![]),
            ("only_in_b", vec!["invoke_agent#0".to_owned()]),
        ]
    );
    assert_eq!(
        json["flaky"],
        serde_json::json!([{
            "id": "item-1",
            "a": {"passed": 1, "failed": 1, "strip": "✓✗"},
            "b": {"passed": 2, "failed": 0, "strip": "✓✓"}
        }])
    );
    assert_eq!(json["fixed"][0]["a"]["flaky"], true);
    assert!(json["fixed"][0]["b"].get("flaky").is_none());
    assert_eq!(json["still_passing"][0]["a"]["flaky"], true);
    assert!(json["still_passing"][1]["a"].get("flaky").is_none());
    let text = String::from_utf8(compare(&a, &b, &[]).stdout).unwrap();
    assert!(
        text.contains(
            "(keyed by attribute langfuse.experiment.item.id where set, else name and occurrence)"
        ),
        "{text}"
    );
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
    assert_eq!(
        geo_08["changed"],
        serde_json::json!(["error", "eval.label"])
    );
    // What changed names the facet: geo-04 only failed its evaluation in B, geo-03 also a tool.
    let geo_04 = &json["newly_failing"][1];
    assert_eq!(
        geo_04["changed"],
        serde_json::json!(["eval-failed", "eval.label"])
    );
    let geo_03 = &json["newly_failing"][0];
    assert_eq!(
        geo_03["changed"],
        serde_json::json!(["degraded", "eval-failed", "eval.label"])
    );
    assert!(
        json["still_failing"][0].get("changed").is_none(),
        "geo-05: the same"
    );
    assert_eq!(json["summary"]["b"]["errored"], 1);
    assert_eq!(json["summary"]["a"]["evaluated"], 8);
    assert_eq!(json["flaky"], serde_json::json!([]), "one epoch each");
}

/// The ids flaky in A and in B of the three-epoch Inspect pair, per its SOURCES.md.
const FLAKY_IN_A: [&str; 2] = ["cap-02", "cap-05"];
const FLAKY_IN_B: [&str; 3] = ["cap-03", "cap-04", "cap-05"];

/// Two Inspect runs of five samples for three epochs, some epochs disagreeing
/// (`tests/fixtures/inspect-ai/epochs/SOURCES.md`): each epoch is classified on its own, the
/// flaky ids are listed with both sides' epochs, and each entry's side says it is flaky.
#[test]
fn three_epoch_inspect_runs_list_their_flaky_cases_exactly() {
    let (a, b) = (inspect_epochs_log("A"), inspect_epochs_log("B"));
    let output = compare(&a, &b, &["--json"]);
    assert_eq!(output.status.code(), Some(1), "two epochs newly fail");
    let json = json_of(&output);
    let owned = |cases: &[&str]| cases.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    assert_eq!(
        classes(&json),
        [
            ("newly_failing", owned(&["cap-03#1", "cap-05#1"])),
            (
                "fixed",
                owned(&["cap-02#2", "cap-04#2", "cap-05#2", "cap-05#3"])
            ),
            ("still_failing", owned(&["cap-04#1", "cap-04#3"])),
            (
                "still_passing",
                owned(&[
                    "cap-01#1", "cap-01#2", "cap-01#3", "cap-02#1", "cap-02#3", "cap-03#2",
                    "cap-03#3"
                ])
            ),
            ("only_in_a", vec![]),
            ("only_in_b", vec![]),
        ]
    );
    let runs = |passed: u64, failed: u64, strip: &str| serde_json::json!({"passed": passed, "failed": failed, "strip": strip});
    assert_eq!(
        json["flaky"],
        serde_json::json!([
            {"id": "cap-02", "a": runs(2, 1, "✓✗✓"), "b": runs(3, 0, "✓✓✓")},
            {"id": "cap-03", "a": runs(3, 0, "✓✓✓"), "b": runs(2, 1, "✗✓✓")},
            {"id": "cap-04", "a": runs(0, 3, "✗✗✗"), "b": runs(1, 2, "✗✓✗")},
            {"id": "cap-05", "a": runs(1, 2, "✓✗✗"), "b": runs(2, 1, "✗✓✓")},
        ])
    );
    let mut marked = 0;
    for (class, _) in classes(&json) {
        for entry in json[class].as_array().unwrap() {
            let id = entry["case"]["id"].as_str().unwrap();
            for (side, flaky) in [("a", &FLAKY_IN_A[..]), ("b", &FLAKY_IN_B[..])] {
                let want = if flaky.contains(&id) {
                    marked += 1;
                    Value::Bool(true)
                } else {
                    Value::Null
                };
                assert_eq!(entry[side]["flaky"], want, "{class} {id} {side}");
            }
        }
    }
    assert_eq!(marked, 3 * (FLAKY_IN_A.len() + FLAKY_IN_B.len()));

    let md = String::from_utf8(compare(&a, &b, &["--md"]).stdout).unwrap();
    let start = md.find("\n## Flaky cases\n").expect("a flaky section");
    let end = md[start + 1..]
        .find("\n## ")
        .map_or(md.len(), |at| start + 1 + at);
    assert_eq!(
        &md[start..end],
        "\n## Flaky cases\n\n\
         Runs of one case (epochs, repeats) that disagree within a run; ✓ passing, ✗ failing, in index order.\n\n\
         | case | A | B |\n\
         | --- | --- | --- |\n\
         | `cap-02` | ✓✗✓ (2 of 3 pass) | ✓✓✓ (3 of 3 pass) |\n\
         | `cap-03` | ✓✓✓ (3 of 3 pass) | ✗✓✓ (2 of 3 pass) |\n\
         | `cap-04` | ✗✗✗ (0 of 3 pass) | ✗✓✗ (1 of 3 pass) |\n\
         | `cap-05` | ✓✗✗ (1 of 3 pass) | ✗✓✓ (2 of 3 pass) |\n"
    );
    assert!(md.contains("| newly failing | 2 |"), "{md}");

    let text = String::from_utf8(compare(&a, &b, &[]).stdout).unwrap();
    assert!(
        text.contains(
            "flaky cases: 4 (runs of one case disagree; ✓ pass, ✗ fail, in index order)\n\
             \x20 flaky  cap-02  A: ✓✗✓ (2 of 3 pass)  B: ✓✓✓ (3 of 3 pass)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  flaky  cap-05  A: ✓✗✗ (1 of 3 pass)  B: ✗✓✓ (2 of 3 pass)\n"),
        "{text}"
    );
}

/// A side that did not all load says so in every form of the comparison, beside its pass rate:
/// lines lost there are runs no count holds.
#[test]
fn problems_loading_a_side_are_counted_beside_its_pass_rate() {
    let dir = tempfile::tempdir().unwrap();
    let a = otlp_run(dir.path(), 1, &["ex-2"]);
    let b = otlp_run(dir.path(), 2, &["ex-2"]);
    let mut text = std::fs::read_to_string(&b).unwrap();
    text.push_str("{\"resourceSpans\": 7}\nnot json\n");
    std::fs::write(&b, text).unwrap();

    let json = json_of(&compare(&a, &b, &["--json"]));
    assert_eq!(
        json["summary"]["a"]["problems"],
        serde_json::json!({"errors": 0, "warnings": 0})
    );
    assert_eq!(
        json["summary"]["b"]["problems"],
        serde_json::json!({"errors": 2, "warnings": 0})
    );
    let text = String::from_utf8(compare(&a, &b, &["--text"]).stdout).unwrap();
    assert_eq!(
        text.lines().nth(2),
        Some("problems while loading: none → 2 errors, 0 warnings (`dump` a side to list them)"),
        "{text}"
    );
    let markdown = String::from_utf8(compare(&a, &b, &["--md"]).stdout).unwrap();
    assert!(
        markdown.contains("| problems while loading | none | 2 errors, 0 warnings |"),
        "{markdown}"
    );

    // Both sides whole: nothing said.
    let text = String::from_utf8(compare(&a, &a, &["--text"]).stdout).unwrap();
    assert!(!text.contains("problems while loading"), "{text}");
}

/// Two Inspect tasks whose sample ids are the same (as Inspect's own 1, 2, … are): each case is
/// its task's, so runs pair within their task and no two tasks' runs read as repeats of one case.
#[test]
fn cases_of_two_inspect_tasks_pair_within_their_task() {
    let dir = tempfile::tempdir().unwrap();
    let log = |run: &str, task: &str| -> Value {
        let mut log: Value =
            serde_json::from_slice(&std::fs::read(inspect_log(run, "json")).unwrap()).unwrap();
        log["eval"]["task"] = Value::from(task);
        log
    };
    // Side A: task `geo_tools` is run A, task `geo_other` run B; side B the other way round.
    let side = |name: &str, [first, second]: [&str; 2]| {
        let side = dir.path().join(name);
        std::fs::create_dir(&side).unwrap();
        for (run, task) in [(first, "geo_tools"), (second, "geo_other")] {
            let path = side.join(format!("{task}.json"));
            std::fs::write(&path, log(run, task).to_string()).unwrap();
        }
        side
    };
    let (a, b) = (side("a", ["A", "B"]), side("b", ["B", "A"]));
    let json = json_of(&compare(&a, &b, &["--json"]));
    // Within geo_tools, A → B; within geo_other, B → A: what one fixes the other breaks.
    let plain = json_of(&compare(
        &inspect_log("A", "json"),
        &inspect_log("B", "json"),
        &["--json"],
    ));
    let ids = |json: &Value, class: &str, task: Option<&str>| -> Vec<String> {
        let mut ids: Vec<String> = json[class]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["case"]["id"].as_str().unwrap().to_owned())
            .map(|id| task.map_or(id.clone(), |task| format!("{task} · {id}")))
            .collect();
        ids.sort();
        ids
    };
    let mut newly_failing = ids(&plain, "newly_failing", Some("geo_tools"));
    newly_failing.extend(ids(&plain, "fixed", Some("geo_other")));
    newly_failing.sort();
    assert!(!newly_failing.is_empty());
    assert_eq!(ids(&json, "newly_failing", None), newly_failing);
    let mut fixed = ids(&plain, "fixed", Some("geo_tools"));
    fixed.extend(ids(&plain, "newly_failing", Some("geo_other")));
    fixed.sort();
    assert_eq!(ids(&json, "fixed", None), fixed);
    assert_eq!(json["only_in_a"], serde_json::json!([]));
    assert_eq!(
        json["flaky"],
        serde_json::json!([]),
        "no task's run is another's repeat"
    );
}
