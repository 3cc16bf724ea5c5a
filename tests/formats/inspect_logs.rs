//! Inspect AI logs, JSON and `.eval` (`tests/fixtures/inspect-ai`, written by inspect-ai 0.3.285;
//! see its SOURCES.md): every sample is a run keyed by sample id and epoch, with the scorers'
//! verdict, the tool calls and their errors, and the model calls' tokens as the log has them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::inspect_fixtures::{inspect_epochs_log, inspect_log};

fn log(run: &str) -> PathBuf {
    inspect_log(run, "json")
}

/// `dump --json --reveal` of `path` by the binary under test.
pub(crate) fn dump(path: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json", "--reveal"])
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `dump --json` of `path` as written without `--reveal`.
fn dump_redacted(path: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn run<'a>(document: &'a Value, sample: &str) -> &'a Value {
    document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["case"]["id"] == sample)
        .unwrap_or_else(|| panic!("no run for {sample}"))
}

fn tool_spans(run: &Value) -> Vec<&Value> {
    run["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|span| span["kind"] == "tool")
        .collect()
}

/// Samples the scorers (or a sample error) failed, per SOURCES.md's table.
const FAILED_IN_A: [&str; 4] = ["geo-02", "geo-05", "geo-07", "geo-08"];
const FAILED_IN_B: [&str; 5] = ["geo-03", "geo-04", "geo-05", "geo-06", "geo-08"];

#[test]
fn every_sample_loads_with_the_verdict_inspect_gives() {
    for (name, failed) in [("A", &FAILED_IN_A[..]), ("B", &FAILED_IN_B[..])] {
        let path = log(name);
        let document = dump(&path);
        // One note, the log's coverage; nothing else.
        let problems = document["problems"].as_array().unwrap();
        assert_eq!(problems.len(), 1, "{name}: {problems:?}");
        assert_eq!(problems[0]["severity"], "note");
        let (scored, errored) = if name == "A" { (8, 0) } else { (7, 1) };
        assert!(
            problems[0]["message"].as_str().unwrap().ends_with(&format!(
                "8 samples, {scored} scored, {errored} errored, 0 neither (errored samples count as failing)"
            )),
            "{name}: {problems:?}"
        );
        let runs = document["invocations"].as_array().unwrap();
        assert_eq!(runs.len(), 8, "{name}: one run per sample");
        let source: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for sample in source["samples"].as_array().unwrap() {
            let id = sample["id"].as_str().unwrap();
            let run = run(&document, id);
            assert_eq!(run["case"]["index"], sample["epoch"], "{name} {id}");
            assert_eq!(run["format"], "inspect-json");
            let passed = run["eval"]["passed"].as_bool().unwrap();
            assert_eq!(
                passed,
                !failed.contains(&id),
                "{name} {id}: {}",
                run["eval"]
            );
            // Tokens are the model events' usage, summed.
            let events = sample["events"].as_array().unwrap();
            let input: u64 = events
                .iter()
                .filter(|e| e["event"] == "model")
                .filter_map(|e| e["output"]["usage"]["input_tokens"].as_u64())
                .sum();
            assert_eq!(run["tokens"]["input"], input, "{name} {id}");
            // One tool span per tool event, failed exactly when the event has an error or failed.
            let tools: Vec<&Value> = events.iter().filter(|e| e["event"] == "tool").collect();
            let spans = tool_spans(run);
            assert_eq!(spans.len(), tools.len(), "{name} {id}");
            for event in tools {
                let span = spans
                    .iter()
                    .find(|s| s["tool_call_id"] == event["id"])
                    .unwrap_or_else(|| panic!("{name} {id}: no span for {}", event["id"]));
                let failed = event["error"].is_object() || event["failed"] == true;
                assert_eq!(
                    span["status"] == "error",
                    failed,
                    "{name} {id} {}",
                    event["id"]
                );
                if let Some(kind) = event["error"]["type"].as_str() {
                    assert_eq!(span["error_type"], kind);
                }
            }
            assert!(
                run["duration_ms"].as_f64().unwrap() > 0.0,
                "{name} {id}: timed"
            );
        }
    }
}

#[test]
fn tool_errors_and_a_sample_error_say_what_happened() {
    let a = dump(&log("A"));
    let atlantis = tool_spans(run(&a, "geo-05"))[0];
    assert_eq!(atlantis["error_type"], "unknown");
    assert!(
        atlantis["error_message"]
            .as_str()
            .unwrap()
            .contains("Unknown country")
    );
    let lagos = tool_spans(run(&a, "geo-07"))[0];
    assert_eq!(lagos["error_type"], "parsing");
    let label = run(&a, "geo-02")["eval"]["label"].as_str().unwrap();
    assert_eq!(label, "expected_tools=I includes=I");

    let b = dump(&log("B"));
    let errored = run(&b, "geo-08");
    assert_eq!(errored["eval"]["label"], "sample error");
    assert!(
        errored["eval"]["reason"]
            .as_str()
            .unwrap()
            .contains("HTTP 503")
    );
    assert!(
        errored["facets"]
            .as_array()
            .unwrap()
            .contains(&"error".into())
    );
    assert_eq!(errored["status"], "error");
    // The sample's own span failed with the exception's type, read from Inspect's repr.
    let root = &errored["spans"][0];
    assert_eq!(root["error_type"], "RuntimeError");
    assert!(
        root["error_message"]
            .as_str()
            .unwrap()
            .starts_with("RuntimeError(\"population service returned HTTP 503")
    );
    let population = tool_spans(errored)
        .into_iter()
        .find(|s| s["tool_name"] == "population")
        .unwrap();
    assert_eq!(
        population["status"], "error",
        "a failed call without an error object"
    );
    // A result over 100 characters is an attachment in the events: shown resolved.
    let tokyo = tool_spans(run(&a, "geo-03"))[0];
    assert!(
        tokyo["output"]["value"]
            .as_str()
            .unwrap()
            .starts_with("37.4 million")
    );
}

#[test]
fn a_cut_log_is_an_error_with_its_file_and_nothing_else_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(log("A")).unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(&cut)
        .output()
        .unwrap();
    // Cut in half, the document is no longer JSON, so no format claims it.
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cut.json"), "{stderr}");
}

fn eval_log(run: &str) -> PathBuf {
    inspect_log(run, "eval")
}

/// What a run says, without what differs between two executions (ids, times).
fn verdicts(document: &Value) -> Vec<Value> {
    let mut runs: Vec<Value> = document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let calls: Vec<Value> = run["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|call| serde_json::json!([call["name"], call["status"]]))
                .collect();
            serde_json::json!({
                "case": run["case"], "eval": run["eval"], "facets": run["facets"],
                "counts": run["counts"], "tokens": run["tokens"], "calls": calls,
                "name": run["name"],
            })
        })
        .collect();
    runs.sort_by_key(|run| run["case"].to_string());
    runs
}

/// The `.eval` and the `.json` of one run (two executions of the same script: see SOURCES.md)
/// load as the same runs, verdicts, tool calls and tokens.
#[test]
fn the_zip_and_the_json_form_of_a_run_read_the_same() {
    for run in ["A", "B"] {
        let zip = dump(&eval_log(run));
        let json = dump(&log(run));
        assert_eq!(
            zip["problems"][0]["message"],
            json["problems"][0]["message"]
        );
        assert_eq!(
            zip["problems"].as_array().unwrap().len(),
            1,
            "{run}: only the coverage note"
        );
        assert_eq!(zip["invocations"].as_array().unwrap().len(), 8);
        assert_eq!(verdicts(&zip), verdicts(&json), "{run}");
        assert!(
            zip["invocations"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["format"] == "inspect-eval")
        );
    }
}

/// A damaged member is reported by name; the other samples still load.
#[test]
fn a_broken_sample_member_is_reported_and_the_others_load() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.eval");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let sample = serde_json::json!({
        "id": 7, "epoch": 2, "events": [],
        "started_at": "2026-12-05T23:41:58.000000+00:00",
        "completed_at": "2026-12-05T23:41:59.000000+00:00",
        "scores": {"match": {"value": 1, "explanation": "ok"}}
    });
    for (name, body) in [
        (
            "header.json",
            r#"{"version": 2, "eval": {"task": "t", "eval_id": "e"}}"#.to_owned(),
        ),
        ("samples/7_epoch_2.json", sample.to_string()),
        ("samples/8_epoch_1.json", "{not json".to_owned()),
    ] {
        zip.start_file(name, stored).unwrap();
        zip.write_all(body.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    let document = dump(&path);
    let runs = document["invocations"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0]["case"],
        serde_json::json!({"id": "7", "index": 2, "task": "t"})
    );
    assert_eq!(runs[0]["eval"]["passed"], true);
    let problems = document["problems"].to_string();
    assert!(
        problems.contains("samples/8_epoch_1.json") && problems.contains("not JSON"),
        "{problems}"
    );
}

fn filtered(path: &Path, query: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json", "--filter", query])
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{query}: {output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut cases: Vec<String> = document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            format!(
                "{}#{}",
                run["case"]["id"].as_str().unwrap(),
                run["case"]["index"]
            )
        })
        .collect();
    cases.sort();
    cases
}

/// `case:` finds runs by their case id's start (any case), `epoch:` by the case's index.
#[test]
fn runs_are_found_by_case_and_epoch() {
    let a = log("A");
    assert_eq!(filtered(&a, "case:GEO-03"), ["geo-03#1"]);
    assert_eq!(filtered(&a, "case:geo-0 epoch:1").len(), 8);
    assert!(filtered(&a, "epoch:2").is_empty());
    // The task, whole and in any case: every sample of the log, and none of another task.
    assert_eq!(filtered(&a, "task:GEO_TOOLS").len(), 8);
    assert!(filtered(&a, "task:geo").is_empty());
    assert_eq!(
        filtered(&a, "is:eval-failed epoch:1"),
        ["geo-02#1", "geo-05#1", "geo-07#1", "geo-08#1"]
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--filter", "epoch:one"])
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("whole number"));
}

/// The samples of run B failing when only `scorers` decide (`--scorer`), and which ones a
/// `dump --filter` query lists.
fn failing_in_b(extra: &[&str]) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .args(extra)
        .arg(log("B"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut ids: Vec<String> = document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| extra.contains(&"--filter") || run["eval"]["passed"] == false)
        .map(|run| run["case"]["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn the_scorers_that_decide_are_a_choice_and_a_sample_error_fails_anyway() {
    // Every scorer decides by default (SOURCES.md's truth table).
    assert_eq!(failing_in_b(&[]), FAILED_IN_B);
    // includes alone: geo-04 answered right without its tool.
    let includes = ["geo-03", "geo-05", "geo-06", "geo-08"];
    assert_eq!(failing_in_b(&["--scorer", "includes"]), includes);
    assert_eq!(failing_in_b(&["--scorer", "includes>=1"]), includes);
    assert_eq!(failing_in_b(&["--scorer", "includes>=0"]), ["geo-08"]);
    assert_eq!(
        failing_in_b(&["--scorer", "expected_tools"]),
        ["geo-03", "geo-04", "geo-08"]
    );
    // A scorer the log does not have cannot pass a sample.
    assert_eq!(failing_in_b(&["--scorer", "nope"]).len(), 8);
    let refused = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--scorer", ">=1"])
        .arg(log("B"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("NAME>=NUMBER"));
}

#[test]
fn each_scorer_is_in_the_json_and_scorer_queries_find_its_verdicts() {
    let document = dump(&log("B"));
    let scorers = &run(&document, "geo-04")["eval"]["scorers"];
    assert_eq!(scorers[0]["name"], "expected_tools");
    assert_eq!(scorers[0]["value"], "I");
    assert_eq!(scorers[0]["failing"], true);
    assert_eq!(scorers[0]["answer"], "(no tool calls)");
    // Redacted, what quotes the completion shows its length only, like the completion itself.
    let redacted = dump_redacted(&log("B"));
    let includes = &run(&redacted, "geo-04")["eval"]["scorers"][1];
    assert_eq!(includes["answer"], "text (14 chars)", "17 * 23 = 391.");
    assert_eq!(includes["explanation"], "text (14 chars)");
    assert!(
        scorers[0]["explanation"]
            .as_str()
            .unwrap()
            .contains("missing ['calculator']")
    );
    assert_eq!(scorers[1]["name"], "includes");
    assert_eq!(scorers[1]["failing"], false);
    assert!(
        run(&document, "geo-08")["eval"].get("scorers").is_none(),
        "the error decides"
    );

    let filtered = |query: &str| failing_in_b(&["--filter", query]);
    assert_eq!(filtered("scorer:expected_tools"), ["geo-03", "geo-04"]);
    assert_eq!(
        filtered("scorer:includes=C"),
        ["geo-01", "geo-02", "geo-04", "geo-07"]
    );
    assert_eq!(
        filtered("scorer:includes=I epoch:1"),
        ["geo-03", "geo-05", "geo-06"]
    );
}

/// What a sample expected is its target, shown as the answers are: its length until revealed.
/// Several right answers are one a line; an empty target says nothing.
#[test]
fn the_verdict_says_what_the_sample_expected() {
    let revealed = dump(&log("A"));
    assert_eq!(run(&revealed, "geo-02")["eval"]["target"], "Canberra");
    let redacted = dump_redacted(&log("A"));
    assert_eq!(run(&redacted, "geo-02")["eval"]["target"], "text (8 chars)");

    let mut document: Value = serde_json::from_slice(&std::fs::read(log("A")).unwrap()).unwrap();
    let samples = document["samples"].as_array_mut().unwrap();
    samples[0]["target"] = serde_json::json!(["Paris", "paris, France"]);
    samples[1]["target"] = serde_json::json!("");
    samples[2]["target"] = serde_json::json!([]);
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_vec(&document).unwrap()).unwrap();
    let edited = dump(&edited);
    assert_eq!(
        run(&edited, "geo-01")["eval"]["target"],
        "Paris\nparis, France"
    );
    for said_nothing in ["geo-02", "geo-03"] {
        assert!(
            run(&edited, said_nothing)["eval"].get("target").is_none(),
            "{said_nothing}"
        );
    }
    assert_eq!(run(&edited, "geo-04")["eval"]["target"], "391");
}

/// A sample stopped by its limit says so in Inspect's words, in `dump` and `dump --json`; a
/// sample that ran to its end says nothing of limits.
#[test]
fn a_sample_stopped_by_its_limit_says_which_limit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inspect-ai/limit");
    let reason = "Message limit exceeded. count: 5; limit: 4";
    assert_eq!(dump(&dir)["invocations"][0]["eval"]["limit"], reason);
    assert_eq!(
        dump_redacted(&dir)["invocations"][0]["eval"]["limit"],
        reason
    );
    let text = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("dump")
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(&format!("\n  limit: {reason}\n")), "{text}");
    for run in dump(&log("A"))["invocations"].as_array().unwrap() {
        assert!(run["eval"].get("limit").is_none(), "{run}");
    }
    // `is:limited` lists it alone among both logs' nine runs, and `-is:limited` the others.
    for (query, listed) in [("is:limited", 1), ("-is:limited", 8)] {
        let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
            .args(["dump", "--json", "--filter", query])
            .arg(&dir)
            .arg(log("A"))
            .output()
            .unwrap();
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        let runs = document["invocations"].as_array().unwrap();
        assert_eq!(runs.len(), listed, "{query}");
        assert_eq!(
            runs.iter().any(|run| run["eval"]["limit"] == reason),
            query == "is:limited",
            "{query}"
        );
    }
}

/// A sample's own span holds its input and final completion. A tool call the final output asks
/// for stays its model call's request: a call has one requester.
#[test]
fn a_samples_span_holds_its_input_and_completion_and_requests_no_call() {
    let mut document: Value = serde_json::from_slice(&std::fs::read(log("A")).unwrap()).unwrap();
    let sample = &mut document["samples"][0];
    let call = serde_json::json!({"id": "call_last", "function": "population", "arguments": {}});
    sample["output"]["choices"][0]["message"]["tool_calls"] = serde_json::json!([call.clone()]);
    let events = sample["events"].as_array_mut().unwrap();
    let last_model = events
        .iter_mut()
        .rev()
        .find(|e| e["event"] == "model")
        .unwrap();
    last_model["output"]["choices"][0]["message"]["tool_calls"] = serde_json::json!([call]);
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_vec(&document).unwrap()).unwrap();

    let runs = dump(&edited);
    let spans = run(&runs, "geo-01")["spans"].as_array().unwrap();
    let root = &spans[0];
    assert_eq!(root["kind"], "agent");
    assert_eq!(
        root["input"]["value"][0]["parts"][0]["content"],
        "What is the capital of France?"
    );
    let said = &root["output"]["value"][0]["parts"];
    assert_eq!(said.as_array().unwrap().len(), 1, "{said}");
    assert_eq!(said[0]["content"], "The capital of France is Paris.");
    assert!(root["requested_tool_calls"].is_null(), "{root}");
    let requesters: Vec<&Value> = spans
        .iter()
        .filter(|span| {
            span["requested_tool_calls"]
                .as_array()
                .is_some_and(|calls| calls.iter().any(|c| c["id"] == "call_last"))
        })
        .collect();
    assert_eq!(requesters.len(), 1);
    assert_eq!(requesters[0]["kind"], "llm");
}

/// Each epoch of a sample run for three epochs is a run of its own, keyed by the sample and the
/// epoch, with that epoch's verdict (`tests/fixtures/inspect-ai/epochs/SOURCES.md`).
#[test]
fn every_epoch_of_a_three_epoch_log_is_a_run_with_its_own_verdict() {
    for (name, verdicts) in [
        (
            "A",
            [
                ("cap-01", "✓✓✓"),
                ("cap-02", "✓✗✓"),
                ("cap-03", "✓✓✓"),
                ("cap-04", "✗✗✗"),
                ("cap-05", "✓✗✗"),
            ],
        ),
        (
            "B",
            [
                ("cap-01", "✓✓✓"),
                ("cap-02", "✓✓✓"),
                ("cap-03", "✗✓✓"),
                ("cap-04", "✗✓✗"),
                ("cap-05", "✗✓✓"),
            ],
        ),
    ] {
        let document = dump(&inspect_epochs_log(name));
        let mut runs: Vec<(String, u64, bool)> = document["invocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| {
                (
                    run["case"]["id"].as_str().unwrap().to_owned(),
                    run["case"]["index"].as_u64().unwrap(),
                    run["eval"]["passed"].as_bool().unwrap(),
                )
            })
            .collect();
        runs.sort();
        let expected: Vec<(String, u64, bool)> = verdicts
            .iter()
            .flat_map(|(id, strip)| {
                strip
                    .chars()
                    .zip(1..)
                    .map(|(glyph, epoch)| (id.to_string(), epoch, glyph == '✓'))
            })
            .collect();
        assert_eq!(runs, expected, "{name}");
    }
}

/// The spans' payload texts (input and output, revealed), by case and span name.
fn payload_texts(document: &Value) -> Vec<(String, String, Value, Value)> {
    let mut texts = Vec::new();
    for run in document["invocations"].as_array().unwrap() {
        for span in run["spans"].as_array().unwrap() {
            texts.push((
                run["case"]["id"].as_str().unwrap().to_owned(),
                span["name"].as_str().unwrap().to_owned(),
                span["input"]["value"].clone(),
                span["output"]["value"].clone(),
            ));
        }
    }
    texts.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    texts
}

/// A `.eval` log's payloads stay in their sample's member, compressed, and are read again when
/// shown: the texts are those of the JSON form, whatever method compressed the member.
#[test]
fn payloads_stay_in_their_member_and_read_back_as_the_json_form_has_them() {
    use std::io::Write;
    use std::sync::Arc;
    use toolcap::model::{Origin, PayloadBody};

    let zip_path = eval_log("A");
    let bytes = std::fs::read(&zip_path).unwrap();
    let loaded = toolcap::formats::load_bytes(Origin::File(Arc::new(zip_path.clone())), &bytes);
    let payloads: Vec<_> = loaded
        .batch
        .spans
        .iter()
        .flat_map(|span| [span.input().into_owned(), span.output().into_owned()])
        .filter(|payload| !matches!(payload.body, PayloadBody::Absent))
        .collect();
    assert!(!payloads.is_empty());
    let kept_in_member = payloads
        .iter()
        .filter(|p| matches!(p.body, PayloadBody::InRecord { .. }))
        .count();
    assert!(
        kept_in_member * 2 > payloads.len(),
        "{kept_in_member} of {} payloads in their member",
        payloads.len()
    );

    // The same samples rewritten with deflate and stored members.
    let json_form: Value = serde_json::from_slice(&std::fs::read(log("A")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rewritten = dir.path().join("rewritten.eval");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&rewritten).unwrap());
    let method = |n: usize| {
        zip::write::SimpleFileOptions::default().compression_method(if n.is_multiple_of(2) {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        })
    };
    let mut header = json_form.clone();
    header.as_object_mut().unwrap().remove("samples");
    zip.start_file("header.json", method(0)).unwrap();
    zip.write_all(header.to_string().as_bytes()).unwrap();
    for (n, sample) in json_form["samples"].as_array().unwrap().iter().enumerate() {
        let name = format!(
            "samples/{}_epoch_{}.json",
            sample["id"].as_str().unwrap(),
            1
        );
        zip.start_file(name, method(n)).unwrap();
        zip.write_all(sample.to_string().as_bytes()).unwrap();
    }
    zip.finish().unwrap();

    let from_json = payload_texts(&dump(&log("A")));
    assert!(from_json.iter().any(|(_, _, input, _)| input.is_array()));
    for path in [zip_path, rewritten] {
        assert_eq!(payload_texts(&dump(&path)), from_json, "{}", path.display());
    }
}

/// What a load gave, in a form two loads can be compared by: every span's identity and what
/// it shows, the problems, verdicts, cases and names.
fn load_outline(loaded: &toolcap::formats::Loaded) -> Value {
    let batch = &loaded.batch;
    let spans: Vec<Value> = batch
        .spans
        .iter()
        .map(|span| {
            serde_json::json!([
                span.trace_id.to_string(),
                span.span_id.to_string(),
                span.name.as_str(),
                span.status.as_str(),
                span.start_unix_nano,
                span.end_unix_nano,
                span.attributes.iter().count(),
                format!("{:?}", span.input().body),
            ])
        })
        .collect();
    let problems: Vec<String> = batch
        .problems
        .iter()
        .map(|p| p.message.to_string())
        .collect();
    serde_json::json!({
        "format": loaded.detection.format,
        "reason": loaded.detection.reason,
        "spans": spans,
        "problems": problems,
        "evals": format!("{:?}", batch.evals),
        "cases": format!("{:?}", batch.cases),
        "names": batch.invocation_names,
    })
}

/// The pieces a file read in place gives, and how the load went.
fn in_place(path: &Path) -> (Vec<toolcap::formats::Piece>, toolcap::formats::InPlace) {
    use std::sync::Arc;
    let origin = toolcap::model::Origin::File(Arc::new(path.to_path_buf()));
    let mut pieces = Vec::new();
    let went =
        toolcap::formats::load_in_place(toolcap::formats::REGISTRY, &origin, path, |piece| {
            pieces.push(piece);
            Ok::<(), std::convert::Infallible>(())
        });
    let Ok(went) = went;
    (pieces, went)
}

/// The first half of the log at `path`, written into `dir`, reads as incomplete and gives
/// nothing: a log still being written.
fn cut_in_half_is_incomplete(dir: &Path, path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let cut = dir.join(format!(
        "cut-{}",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (pieces, went) = in_place(&cut);
    assert!(
        matches!(went, toolcap::formats::InPlace::Incomplete(_)),
        "{}",
        cut.display()
    );
    assert!(pieces.is_empty());
}

/// A `.eval` file is read where its members lie, never held whole, its runs handed over a group
/// of samples at a time, and all of them together are what its bytes read whole give; a zip
/// whose directory is not written yet is told apart, and anything else is left to the whole
/// read.
#[test]
fn a_log_file_is_read_in_place_and_gives_what_its_bytes_give() {
    use std::io::Write;
    use std::sync::Arc;
    use toolcap::formats::{InPlace, Loaded, load_bytes};
    use toolcap::model::{Batch, Origin};

    let dir = tempfile::tempdir().unwrap();
    // Run A's samples written 10 times over with new ids: 80 samples, more than one group.
    let many = dir.path().join("many.eval");
    crate::inspect_many::many_samples_log(&log("A"), &many, 10);

    for path in [eval_log("A"), eval_log("B"), many.clone()] {
        let (pieces, went) = in_place(&path);
        let InPlace::Loaded(detection) = went else {
            panic!("{}: not read in place", path.display());
        };
        let more: Vec<bool> = pieces.iter().map(|piece| piece.more).collect();
        assert_eq!(more.iter().filter(|more| !**more).count(), 1);
        assert_eq!(more.last(), Some(&false));
        if path == many {
            // The header's piece (empty), three groups of samples, the coverage; how far the
            // reading is grows to the whole file's members.
            assert_eq!(pieces.len(), 5);
            assert!(
                pieces[1..4]
                    .iter()
                    .all(|piece| !piece.batch.spans.is_empty())
            );
            let progress: Vec<(u64, u64)> = pieces.iter().map(|p| p.progress.unwrap()).collect();
            let total = progress[0].1;
            assert!(total > 0);
            assert!(progress.iter().all(|(_, of)| *of == total));
            // Each group reads further; the last one may reach the end itself.
            assert!(progress[..4].windows(2).all(|pair| pair[0].0 < pair[1].0));
            assert_eq!(progress[0].0, 0);
            assert_eq!(progress[4].0, total);
        } else {
            // One group: nothing to say about progress.
            assert!(pieces.iter().all(|piece| piece.progress.is_none()));
        }
        let mut batch = Batch::default();
        pieces
            .into_iter()
            .for_each(|piece| batch.extend(piece.batch));
        let origin = Origin::File(Arc::new(path.clone()));
        let joined = Loaded {
            origin: origin.clone(),
            detection,
            batch,
        };
        let whole = load_bytes(origin, &std::fs::read(&path).unwrap());
        assert!(!whole.batch.spans.is_empty());
        assert_eq!(
            load_outline(&joined),
            load_outline(&whole),
            "{}",
            path.display()
        );
    }

    // Cut before its directory, as while Inspect writes it.
    cut_in_half_is_incomplete(dir.path(), &eval_log("A"));
    // A zip that is not an Inspect log.
    let other_zip = dir.path().join("other.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&other_zip).unwrap());
    zip.start_file("notes.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    zip.write_all(b"hello").unwrap();
    zip.finish().unwrap();
    let (pieces, went) = in_place(&other_zip);
    assert!(matches!(went, InPlace::Whole));
    assert!(pieces.is_empty());
}

/// The pieces a read of a file as it changes gives, after what `so_far` remembers of its last.
fn followed(
    path: &Path,
    so_far: &mut Option<toolcap::formats::EvalSoFar>,
) -> (toolcap::model::Batch, Vec<bool>) {
    use std::sync::Arc;
    let origin = toolcap::model::Origin::File(Arc::new(path.to_path_buf()));
    let mut batch = toolcap::model::Batch::default();
    let mut adds = Vec::new();
    let went = toolcap::formats::follow_in_place(
        toolcap::formats::REGISTRY,
        &origin,
        path,
        so_far,
        |piece| {
            adds.push(piece.adds);
            batch.extend(piece.batch);
            Ok::<(), std::convert::Infallible>(())
        },
    );
    let Ok(toolcap::formats::InPlace::Loaded(_)) = went else {
        panic!("{}: not read in place", path.display());
    };
    (batch, adds)
}

/// A running eval's log read again takes only the samples added since (Inspect appends each
/// flush's samples to the zip and writes its directory anew); with the first read's runs they
/// are what the whole file gives, the coverage said anew. A log whose members moved or changed,
/// or that is finished, is read whole again.
#[test]
fn a_running_logs_added_samples_are_read_alone_and_join_what_was_read() {
    use std::io::Write;
    use std::sync::Arc;
    use toolcap::formats::load_bytes;
    use toolcap::model::{Batch, Origin};

    let dir = tempfile::tempdir().unwrap();
    let json_form: Value = serde_json::from_slice(&std::fs::read(log("A")).unwrap()).unwrap();
    let samples = json_form["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 8);
    let mut start = json_form.clone();
    start.as_object_mut().unwrap().remove("samples");
    start["status"] = Value::from("started");
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let add = |zip: &mut zip::ZipWriter<std::fs::File>, samples: &[Value]| {
        for sample in samples {
            let name = format!("samples/{}_epoch_1.json", sample["id"].as_str().unwrap());
            zip.start_file(name, options).unwrap();
            zip.write_all(sample.to_string().as_bytes()).unwrap();
        }
    };
    let running = dir.path().join("running.eval");
    let written_anew = |samples: &[Value]| {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&running).unwrap());
        zip.start_file("_journal/start.json", options).unwrap();
        zip.write_all(start.to_string().as_bytes()).unwrap();
        add(&mut zip, samples);
        zip.finish().unwrap();
    };
    // Samples appended, then the finished header if given, as Inspect's recorder does.
    let appended = |samples: &[Value], header: Option<&Value>| {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&running)
            .unwrap();
        let mut zip = zip::ZipWriter::new_append(file).unwrap();
        add(&mut zip, samples);
        if let Some(header) = header {
            zip.start_file("header.json", options).unwrap();
            zip.write_all(header.to_string().as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    };
    written_anew(&[]);
    let whole = || {
        load_bytes(
            Origin::File(Arc::new(running.clone())),
            &std::fs::read(&running).unwrap(),
        )
    };
    // Payload bodies aside: a log read in place keeps them in the file.
    let outline = |batch: Batch| {
        let whole = whole();
        outline_without_bodies(&toolcap::formats::Loaded { batch, ..whole })
    };
    let ids = |batch: &Batch| -> Vec<String> {
        batch
            .cases
            .iter()
            .map(|(_, case)| case.id.clone())
            .collect()
    };
    let coverage = |batch: &Batch| -> Vec<String> {
        batch.problems.iter().map(|p| p.message.clone()).collect()
    };

    // Started, no sample written yet: its coverage says so, as a note.
    let mut so_far = None;
    let (started, adds) = followed(&running, &mut so_far);
    assert!(adds.iter().all(|adds| !adds));
    assert!(so_far.is_some(), "a running eval's read is remembered");
    assert_eq!(
        coverage(&started),
        [
            "Inspect log of geo_tools (eval in progress: 0 of 8 written): 0 samples, 0 scored, 0 errored, 0 neither (errored samples count as failing)"
        ]
    );
    assert!(started.problems.iter().all(|p| !p.is_counted()));

    appended(&samples[..3], None);
    let (first, adds) = followed(&running, &mut so_far);
    assert!(adds.iter().all(|adds| *adds));
    assert_eq!(ids(&first).len(), 3);

    appended(&samples[3..6], None);
    let (second, adds) = followed(&running, &mut so_far);
    assert!(adds.iter().all(|adds| *adds), "{adds:?}");
    let new_ids: Vec<String> = samples[3..6]
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids(&second), new_ids, "only the added samples");
    assert_eq!(
        coverage(&second),
        [
            "Inspect log of geo_tools (eval in progress: 6 of 8 written): 6 samples, 6 scored, 0 errored, 0 neither (errored samples count as failing)"
        ]
    );
    let mut joined = first;
    joined.extend(Batch {
        renews_notes: Some(running.clone()),
        ..second
    });
    assert_eq!(outline(joined), outline_without_bodies(&whole()));

    // Finished: the last samples and the header are written after the others, which stay in
    // place, so the finish adds its samples and says the coverage without "in progress".
    let mut header = start.clone();
    header["status"] = Value::from("success");
    appended(&samples[6..], Some(&header));
    let (last, adds) = followed(&running, &mut so_far);
    assert!(adds.iter().all(|adds| *adds));
    assert!(so_far.is_none(), "a finished log is not followed");
    assert_eq!(ids(&last).len(), 2);
    assert_eq!(
        coverage(&last),
        [
            "Inspect log of geo_tools: 8 samples, 8 scored, 0 errored, 0 neither (errored samples count as failing)"
        ]
    );
    // Read whole, as anything without a read before it is.
    let (whole_read, adds) = followed(&running, &mut None);
    assert!(adds.iter().all(|adds| !adds));
    assert_eq!(ids(&whole_read).len(), 8);

    // Written anew, then again with one sample ahead of the others: they moved, so the log is
    // read whole.
    written_anew(&samples[1..3]);
    followed(&running, &mut so_far);
    assert!(so_far.is_some());
    written_anew(&samples[..3]);
    let (moved, adds) = followed(&running, &mut so_far);
    assert!(adds.iter().all(|adds| !adds), "members moved: read whole");
    assert_eq!(ids(&moved).len(), 3);
}

/// [`load_outline`] without the payloads' bodies: a log read from its file keeps them there,
/// one read from bytes in memory holds them.
fn outline_without_bodies(loaded: &toolcap::formats::Loaded) -> Value {
    let mut outline = load_outline(loaded);
    for span in outline["spans"].as_array_mut().unwrap() {
        span.as_array_mut().unwrap().pop();
    }
    outline
}

/// `log` written as Inspect writes it, its keys in Inspect's order (`version` first), indented.
fn in_inspect_order(log: &Value) -> Vec<u8> {
    const ORDER: [&str; 11] = [
        "version",
        "status",
        "eval",
        "plan",
        "results",
        "stats",
        "error",
        "invalidated",
        "tags",
        "metadata",
        "samples",
    ];
    let object = log.as_object().unwrap();
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort_by_key(|key| ORDER.iter().position(|k| k == key).unwrap_or(ORDER.len()));
    let members: Vec<String> = keys
        .iter()
        .map(|key| {
            let value = serde_json::to_string_pretty(&object[key.as_str()]).unwrap();
            format!(
                "  {}: {}",
                Value::from(key.as_str()),
                value.replace('\n', "\n  ")
            )
        })
        .collect();
    format!("{{\n{}\n}}\n", members.join(",\n")).into_bytes()
}

/// A JSON log is read from its file as a stream, a group of samples at a time, never held
/// whole, and gives what its bytes read whole give, payloads included (they stay in the file,
/// each sample's text their record); a log that breaks off keeps the samples before the
/// break; one not finished yet is told apart; other documents are left to the whole read.
#[test]
fn a_json_log_file_is_read_as_a_stream_and_gives_what_its_bytes_give() {
    use std::io::Write;
    use std::sync::Arc;
    use toolcap::formats::{InPlace, Loaded, load_bytes};
    use toolcap::model::{Batch, Origin, PayloadBody};

    let dir = tempfile::tempdir().unwrap();
    // Run A's samples written 10 times over with new ids: 80 samples, three groups.
    let mut json_form: Value = serde_json::from_slice(&std::fs::read(log("A")).unwrap()).unwrap();
    let samples = json_form["samples"].as_array().unwrap().clone();
    let mut many_samples = Vec::new();
    for copy in 0..10 {
        for sample in &samples {
            let mut sample = sample.clone();
            sample["id"] = Value::from(format!("{}-{copy}", sample["id"].as_str().unwrap()));
            many_samples.push(sample);
        }
    }
    json_form["samples"] = Value::from(many_samples);
    let many = dir.path().join("many.json");
    std::fs::write(&many, in_inspect_order(&json_form)).unwrap();

    for path in [log("A"), log("B"), many.clone()] {
        let (pieces, went) = in_place(&path);
        let InPlace::Loaded(detection) = went else {
            panic!("{}: not read in place", path.display());
        };
        assert_eq!(detection.format, Some("inspect-json"));
        let more: Vec<bool> = pieces.iter().map(|piece| piece.more).collect();
        assert_eq!(more.iter().filter(|more| !**more).count(), 1);
        assert_eq!(more.last(), Some(&false));
        let len = std::fs::metadata(&path).unwrap().len();
        let progress: Vec<(u64, u64)> = pieces.iter().map(|p| p.progress.unwrap()).collect();
        assert!(progress.iter().all(|(_, of)| *of == len));
        assert!(progress.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert_eq!(progress.last(), Some(&(len, len)));
        if path == many {
            // Three groups of samples, then the coverage.
            assert_eq!(pieces.len(), 4);
            assert!(
                pieces[..3]
                    .iter()
                    .all(|piece| !piece.batch.spans.is_empty())
            );
        }
        let mut batch = Batch::default();
        pieces
            .into_iter()
            .for_each(|piece| batch.extend(piece.batch));
        // Every payload lies in its sample's text: the record is exactly one sample.
        let bytes = std::fs::read(&path).unwrap();
        let mut records = 0;
        for span in &batch.spans {
            if let PayloadBody::InRecord { record, .. } = &span.input().body {
                let text = &bytes[record.offset as usize..(record.offset + record.len) as usize];
                let sample: Value = serde_json::from_slice(text).unwrap();
                assert!(sample["id"].is_string() && sample["events"].is_array());
                records += 1;
            }
        }
        assert!(records > 0, "{}", path.display());
        let origin = Origin::File(Arc::new(path.clone()));
        let joined = Loaded {
            origin: origin.clone(),
            detection,
            batch,
        };
        let whole = load_bytes(origin, &bytes);
        assert!(!whole.batch.spans.is_empty());
        assert_eq!(
            outline_without_bodies(&joined),
            outline_without_bodies(&whole),
            "{}",
            path.display()
        );
    }
    // The payloads read back from the file are those a read of the bytes holds (a gzip file
    // is read whole).
    let gzipped = dir.path().join("many.json.gz");
    let mut gzip = flate2::write::GzEncoder::new(
        std::fs::File::create(&gzipped).unwrap(),
        flate2::Compression::fast(),
    );
    gzip.write_all(&std::fs::read(&many).unwrap()).unwrap();
    gzip.finish().unwrap();
    let from_file = payload_texts(&dump(&many));
    assert!(from_file.iter().any(|(_, _, input, _)| input.is_array()));
    assert_eq!(from_file, payload_texts(&dump(&gzipped)));

    // Broken off in its samples, yet ending in a brace (as a log being rewritten may read):
    // told apart, with the runs before the break and where it broke.
    let bytes = std::fs::read(&many).unwrap();
    let broken = dir.path().join("broken.json");
    let mut cut = bytes[..bytes.len() * 3 / 4].to_vec();
    cut.extend_from_slice(b"\n}\n");
    std::fs::write(&broken, &cut).unwrap();
    let (pieces, went) = in_place(&broken);
    let InPlace::Incomplete(why) = went else {
        panic!("a broken log reads as complete");
    };
    let runs: usize = pieces.iter().map(|piece| piece.batch.cases.len()).sum();
    assert!((32..80).contains(&runs), "{runs} runs");
    assert!(
        why.contains(&format!("the log breaks off after {runs} samples")) && why.contains("line"),
        "{why}"
    );
    assert!(pieces.iter().all(|piece| piece.more));

    // Not finished yet: told apart, nothing read.
    cut_in_half_is_incomplete(dir.path(), &many);

    // A document that is not a log, and a log whose keys are sorted (`eval` before `version`):
    // both left to the whole read, which still reads the log.
    let not_a_log = dir.path().join("versioned.json");
    std::fs::write(&not_a_log, br#"{"version": 1, "resourceSpans": []}"#).unwrap();
    let sorted = dir.path().join("sorted.json");
    let sorted_form: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(log("A")).unwrap()).unwrap();
    let sorted_form: BTreeMap<String, Value> = sorted_form.into_iter().collect();
    std::fs::write(&sorted, serde_json::to_vec(&sorted_form).unwrap()).unwrap();
    for path in [&not_a_log, &sorted] {
        let (pieces, went) = in_place(path);
        assert!(matches!(went, InPlace::Whole), "{}", path.display());
        assert!(pieces.is_empty());
    }
    assert_eq!(verdicts(&dump(&sorted)), verdicts(&dump(&log("A"))),);

    // A taker that stops after the first piece stops the reading.
    let origin = Origin::File(Arc::new(many.clone()));
    let mut taken = 0;
    let stopped =
        toolcap::formats::load_in_place(toolcap::formats::REGISTRY, &origin, &many, |_| {
            taken += 1;
            Err("enough")
        });
    assert!(matches!(stopped, Err("enough")));
    assert_eq!(taken, 1);
}

/// The run's reason, made of the failing scorers' explanations, quotes the completion as they
/// do: redacted, it shows its length only, in every output (text, JSON, the report and its
/// summary table) and in search; a sample error's reason is free text, masked as such.
#[test]
fn a_reason_made_of_explanations_shows_its_length_until_revealed() {
    let revealed = dump(&log("B"));
    let reason = run(&revealed, "geo-05")["eval"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(reason, "includes: Atlantis's capital is Atlantis City.");
    let length = format!("text ({} chars)", reason.chars().count());

    let redacted = dump_redacted(&log("B"));
    assert_eq!(run(&redacted, "geo-05")["eval"]["reason"], length.as_str());
    // Every scored failing run's reason is hidden so; the sample error's is not.
    for id in ["geo-03", "geo-04", "geo-06"] {
        let shown = run(&redacted, id)["eval"]["reason"].as_str().unwrap();
        assert!(shown.starts_with("text ("), "{id}: {shown}");
    }
    let error = run(&redacted, "geo-08")["eval"]["reason"].as_str().unwrap();
    assert!(
        error.contains("population service returned HTTP 503"),
        "{error}"
    );

    let output = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
            .args(args)
            .arg(log("B"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    for args in [&["dump"][..], &["report"], &["report", "--json"]] {
        let text = output(args);
        assert!(!text.contains("Atlantis City"), "{args:?}: {text}");
        assert!(!text.contains("100 / (5 - 5)"), "{args:?}");
    }
    assert!(output(&["report"]).contains(&length));
    assert!(output(&["report", "--reveal"]).contains("Atlantis City"));

    // Search sees what is shown: the quoted words only once revealed.
    let found = |extra: &[&str]| {
        let mut args = vec!["--filter", "\"atlantis city\""];
        args.extend_from_slice(extra);
        failing_in_b(&args)
    };
    assert!(found(&[]).is_empty());
    assert_eq!(found(&["--reveal"]), ["geo-05"]);

    // The summary's reasons table: quoted reasons show their length and offer no filter.
    let report: Value = serde_json::from_str(&output(&["report", "--json"])).unwrap();
    let reasons = report["summary"]["tables"]["reasons"].as_array().unwrap();
    let quoted: Vec<&Value> = reasons
        .iter()
        .filter(|row| row["label"].as_str().unwrap().starts_with("text ("))
        .collect();
    assert_eq!(quoted.len(), 4, "{reasons:?}");
    assert!(quoted.iter().all(|row| row["query"].is_null()));
    assert!(
        reasons
            .iter()
            .any(|row| row["label"].as_str().unwrap().contains("HTTP 503")
                && row["query"].is_string())
    );
}
