//! Hostile and broken inputs: problems with file and line, never a panic, good lines load.
//! The fixtures in tests/fixtures/otlp-negative/ were written by a small Python script:
//! every good line holds one span (trace 1111…, span 1111… `good-before`; trace 3333…,
//! span 3333… `good-after`) and the bad record sits on line 2.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolcap::formats::{self, Loaded};
use toolcap::model::{Origin, Severity};
use toolcap::sources::files::load_file;

const DIR: &str = "tests/fixtures/otlp-negative";

fn fixture(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn names(loaded: &Loaded) -> Vec<&str> {
    loaded.batch.spans.iter().map(|s| s.name.as_str()).collect()
}

fn error_lines(loaded: &Loaded) -> Vec<Option<u64>> {
    loaded
        .batch
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| p.line)
        .collect()
}

/// The line each loaded span came from.
fn span_lines(loaded: &Loaded) -> Vec<Option<u64>> {
    let spans = loaded.batch.spans.iter();
    spans.map(|s| s.line.map(u64::from)).collect()
}

#[test]
fn a_bad_line_between_good_lines_is_reported_and_the_rest_loads() {
    for name in ["bad-line-between.jsonl", "invalid-utf8.jsonl"] {
        let loaded = load_file(&fixture(name));
        assert_eq!(loaded.detection.format, Some("otlp-json"), "{name}");
        assert_eq!(names(&loaded), ["good-before", "good-after"], "{name}");
        assert_eq!(error_lines(&loaded), [Some(2)], "{name}");
        let problem = &loaded.batch.problems[0];
        assert_eq!(problem.source, fixture(name).display().to_string());
        // Good lines keep their own line numbers.
        assert_eq!(span_lines(&loaded), [Some(1), Some(3)], "{name}");
    }
}

/// Spans are built as a line is read; a line found bad after some of its spans were built
/// loads none of them, and says why as a line read whole would.
#[test]
fn a_line_that_fails_after_its_first_spans_loads_none_of_them() {
    let good = std::fs::read_to_string(fixture("bad-line-between.jsonl")).unwrap();
    let good: Vec<&str> = good.lines().collect();
    let request: serde_json::Value = serde_json::from_str(good[0]).unwrap();
    let spans = &request["resourceSpans"][0]["scopeSpans"][0]["spans"];
    // Under a resource read first (so they are built at once), a good span and one whose id
    // is refused (a problem), then a scope the model refuses.
    let mut refused = spans[0].clone();
    refused["spanId"] = "not hex".into();
    let bad = format!(
        r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":[{good},{refused}],"scope":5}}]}}]}}"#,
        good = spans[0]
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("late-failure.jsonl");
    std::fs::write(&path, format!("{}\n{bad}\n{}\n", good[0], good[2])).unwrap();
    let loaded = load_file(&path);
    assert_eq!(names(&loaded), ["good-before", "good-after"]);
    assert_eq!(span_lines(&loaded), [Some(1), Some(3)]);
    assert_eq!(error_lines(&loaded), [Some(2)]);
    let message = &loaded.batch.problems[0].message;
    assert!(
        message.starts_with("not an OTLP/JSON request: invalid type: integer `5`"),
        "{message}"
    );

    // A leniency the dropped line needed (an enum written as its name) is not taken as said:
    // the next line that needs it is the one warned about.
    let mut lenient = spans[0].clone();
    lenient["kind"] = "SPAN_KIND_CLIENT".into();
    let request = |spans: &str, tail: &str| {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":[{spans}]{tail}}}]}}]}}"#
        )
    };
    let path = tmp.path().join("late-failure-lenient.jsonl");
    let lines = [
        good[0].to_string(),
        request(&lenient.to_string(), r#","scope":5"#),
        request(&lenient.to_string(), ""),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let loaded = load_file(&path);
    assert_eq!(span_lines(&loaded), [Some(1), Some(3)]);
    let warned: Vec<Option<u64>> = loaded
        .batch
        .problems
        .iter()
        .filter(|p| p.message.contains("SPAN_KIND_CLIENT"))
        .map(|p| p.line)
        .collect();
    assert_eq!(warned, [Some(3)]);
}

/// A line the direct reader leaves to serde (snake_case keys, as protobuf's canonical JSON may
/// write them, with base64 ids and enum names) loads through the whole-request fallback with
/// its leniency warnings at its own line, between good lines and before a malformed one.
#[test]
fn a_line_only_serde_reads_loads_with_its_leniency_warnings() {
    let good = std::fs::read_to_string(fixture("bad-line-between.jsonl")).unwrap();
    let good: Vec<&str> = good.lines().collect();
    // Trace 2222…, span 2222…, as base64.
    let snake = r#"{"resource_spans":[{"resource":{"attributes":[{"key":"service.name","value":{"string_value":"snake-service"}}]},"scope_spans":[{"spans":[{"trace_id":"IiIiIiIiIiIiIiIiIiIiIg==","span_id":"IiIiIiIiIiI=","name":"snake-case","kind":"SPAN_KIND_CLIENT","start_time_unix_nano":"1700000000500000000","end_time_unix_nano":"1700000000600000000","status":{"code":"STATUS_CODE_ERROR","message":"failed"}}]}]}]}"#;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("snake-case.jsonl");
    let lines = [good[0], snake, good[1], good[2]];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let loaded = load_file(&path);
    assert_eq!(names(&loaded), ["good-before", "snake-case", "good-after"]);
    assert_eq!(span_lines(&loaded), [Some(1), Some(2), Some(4)]);
    assert_eq!(error_lines(&loaded), [Some(3)]);
    let snake_span = &loaded.batch.spans[1];
    assert_eq!(
        snake_span.trace_id.to_string(),
        "22222222222222222222222222222222"
    );
    assert_eq!(snake_span.span_id.to_string(), "2222222222222222");
    assert_eq!(snake_span.status, toolcap::model::SpanStatus::Error);
    assert_eq!(
        snake_span.service().map(|s| s.as_str()),
        Some("snake-service")
    );
    let warnings: Vec<(Option<u64>, &str)> = loaded
        .batch
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .map(|p| (p.line, p.message.as_str()))
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().all(|(line, _)| *line == Some(2)));
    assert!(warnings[0].1.contains("ids are base64"), "{warnings:?}");
    assert!(warnings[1].1.contains("SPAN_KIND_CLIENT"), "{warnings:?}");
}

#[test]
fn ten_thousand_deep_values_are_refused_without_overflowing() {
    // Line 2 nests 10,000 arrays where a string belongs; line 3 nests 10,000 arrayValues.
    let loaded = load_file(&fixture("deep-nesting.jsonl"));
    assert_eq!(names(&loaded), ["good-before", "good-after"]);
    assert_eq!(error_lines(&loaded), [Some(2), Some(3)]);
    assert!(
        loaded.batch.problems[1]
            .message
            .contains("recursion limit exceeded"),
        "{:?}",
        loaded.batch.problems
    );
    assert_eq!(span_lines(&loaded), [Some(1), Some(4)]);
}

#[test]
fn truncated_documents_and_garbage_are_problems() {
    let truncated = load_file(&fixture("truncated.json"));
    assert!(truncated.batch.spans.is_empty());
    assert_eq!(truncated.batch.problems.len(), 1);
    assert!(truncated.batch.problems[0].message.contains("EOF"));

    let garbage = load_file(&fixture("garbage.bin"));
    assert_eq!(garbage.detection.format, None);
    assert!(garbage.batch.spans.is_empty());
    assert_eq!(garbage.batch.problems.len(), 1);

    // A protobuf file cut in half: recognised by its extension, reported, nothing invented.
    let dir = tempfile::tempdir().unwrap();
    let bytes =
        std::fs::read("tests/fixtures/corpus/otlp-python-sdk/grpc/0003-grpc_traces.pb").unwrap();
    let cut = dir.path().join("cut.pb");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let loaded = load_file(&cut);
    assert_eq!(loaded.detection.format, Some("otlp-protobuf"));
    assert!(loaded.batch.spans.is_empty());
    assert_eq!(error_lines(&loaded), [None]);

    // Every prefix of a JSON line and of a protobuf body is handled without a panic.
    let json = std::fs::read(fixture("self-parent.json")).unwrap();
    for end in 0..json.len() {
        formats::load_bytes(
            Origin::File(std::sync::Arc::new("prefix.json".into())),
            &json[..end],
        );
    }
    for end in (0..bytes.len()).step_by(7) {
        formats::load_bytes(
            Origin::File(std::sync::Arc::new("prefix.pb".into())),
            &bytes[..end],
        );
    }
}

#[test]
fn a_span_that_is_its_own_parent_is_kept_with_a_warning() {
    let loaded = load_file(&fixture("self-parent.json"));
    assert_eq!(names(&loaded), ["loop", "root"]);
    let warnings: Vec<_> = loaded
        .batch
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .collect();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].message.contains("aaaaaaaaaaaaaaaa"));
    let mut store = toolcap::store::Store::new();
    store.ingest(loaded.batch);
    let inv = store.get("11111111111111111111111111111111").unwrap();
    assert_eq!(inv.summary().counts.spans, 2);
    assert_eq!(inv.tree().rows.len(), 2);
}

#[test]
fn spans_with_invalid_ids_are_dropped_one_by_one() {
    let loaded = load_file(&fixture("invalid-ids.json"));
    assert_eq!(names(&loaded), ["ok-root", "ok-child"]);
    let messages: Vec<&str> = loaded
        .batch
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(messages.len(), 4, "{messages:?}");
    for (message, expected) in messages.iter().zip([
        "trace id is missing",
        "span id is 7 bytes long",
        "trace id is all zero",
        "parent span id is 2 bytes long",
    ]) {
        assert!(message.contains(expected), "{message} lacks {expected}");
    }
}

fn dump(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("dump")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn dump_exits_2_when_nothing_loaded_and_0_otherwise() {
    let garbage = fixture("garbage.bin");
    let truncated = fixture("truncated.json");
    let (code, out) = dump(&[garbage.to_str().unwrap(), truncated.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no invocations loaded"));

    let between = fixture("bad-line-between.jsonl");
    let (code, out) = dump(&["--json", between.to_str().unwrap()]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["invocations"].as_array().unwrap().len(), 2);
    assert_eq!(doc["problems"][0]["line"], 2);
    assert!(
        doc["problems"][0]["source"]
            .as_str()
            .unwrap()
            .ends_with("bad-line-between.jsonl")
    );
}

#[test]
fn requests_whose_first_key_is_not_resource_spans_are_still_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reordered.json");
    let request = r#"{"extra": {"note": "keys in another order"},
        "resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "44444444444444444444444444444444",
        "spanId": "4444444444444444", "name": "reordered"}]}]}]}"#;
    std::fs::write(&path, request).unwrap();
    let loaded = load_file(&path);
    assert_eq!(loaded.detection.format, Some("otlp-json"));
    assert_eq!(names(&loaded), ["reordered"]);
    // The same bytes without a JSON file name are not claimed.
    let origin = Origin::File(std::sync::Arc::new("reordered.txt".into()));
    assert_eq!(
        formats::load_bytes(origin, request.as_bytes())
            .detection
            .format,
        None
    );
}

#[test]
fn mutated_requests_never_panic() {
    // Deterministic byte flips over a JSON line and a protobuf body (a cheap fuzz pass).
    let json =
        std::fs::read("tests/fixtures/corpus/otel-genai/openinference.spans.otlp.jsonl").unwrap();
    let protobuf =
        std::fs::read("tests/fixtures/corpus/openarmature/otlp-http-proto/payload-on.000.pb")
            .unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (name, original) in [("m.jsonl", &json), ("m.pb", &protobuf)] {
        for _ in 0..300 {
            let mut bytes = original.clone();
            for _ in 0..4 {
                let at = (next() as usize) % bytes.len();
                bytes[at] = next() as u8;
            }
            let loaded =
                formats::load_bytes(Origin::File(std::sync::Arc::new(name.into())), &bytes);
            for span in &loaded.batch.spans {
                assert_eq!(span.trace_id.text().len(), 32);
                assert_eq!(span.span_id.text().len(), 16);
            }
        }
    }
}

#[test]
fn a_line_of_empty_spans_is_refused_before_it_decodes_to_far_more_than_its_size() {
    // 600,000 empty spans: 1.8 MB of JSON that would decode to 158 MB (264 bytes each).
    let good = std::fs::read_to_string(fixture("bad-line-between.jsonl")).unwrap();
    let good: Vec<&str> = good.lines().collect();
    let empty_spans = vec!["{}"; 600_000].join(",");
    let hostile =
        format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{empty_spans}]}}]}}]}}"#);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("empty-spans.jsonl");
    std::fs::write(&path, format!("{}\n{hostile}\n{}\n", good[0], good[2])).unwrap();
    let loaded = load_file(&path);
    assert_eq!(names(&loaded), ["good-before", "good-after"]);
    assert_eq!(error_lines(&loaded), [Some(2)]);
    let message = &loaded.batch.problems[0].message;
    assert!(message.contains("bytes per byte of input"), "{message}");

    // The same in protobuf: one resource holding 2,000,000 empty spans.
    let request = crate::protobuf_bytes::request_of_empty_spans(2_000_000);
    let path = tmp.path().join("empty-spans.pb");
    std::fs::write(&path, &request).unwrap();
    let loaded = load_file(&path);
    assert!(loaded.batch.spans.is_empty());
    let errors: Vec<&str> = loaded
        .batch
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert!(
        errors.iter().any(|m| m.contains("bytes per byte of input")),
        "{errors:?}"
    );
}
