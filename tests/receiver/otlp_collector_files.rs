//! What the OpenTelemetry Collector's file exporter writes with `format: proto` or
//! `compression: zstd` (length-prefixed messages, each its own zstd frame), whole-file zstd,
//! and `Content-Encoding: zstd` request bodies: each loads to exactly the spans of the same
//! requests written as plain JSON lines. Fixtures: tests/fixtures/corpus/otel-collector.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolcap::redact::Reveal;
use toolcap::sources::load::load_store;
use toolcap::views::dump::to_json;

const DIR: &str = "tests/fixtures/corpus/otel-collector";

fn fixture(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

/// The `dump --json` invocations with the format names taken out (protobuf and JSON differ
/// there and nowhere else).
fn invocations_of(path: &Path) -> Vec<Value> {
    let (store, reports) = load_store(&[path.to_path_buf()]);
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0].warnings.is_empty(),
        "{}: {:?}",
        path.display(),
        reports[0].warnings
    );
    let mut doc = to_json(&store, Reveal::Redacted);
    let mut invocations = doc["invocations"].take();
    for invocation in invocations.as_array_mut().expect("invocations") {
        let object = invocation.as_object_mut().expect("object");
        object.remove("format");
        object.remove("formats");
    }
    invocations.as_array().cloned().unwrap_or_default()
}

fn span_count(invocations: &[Value]) -> u64 {
    invocations
        .iter()
        .map(|i| i["counts"]["spans"].as_u64().expect("spans count"))
        .sum()
}

#[test]
fn every_container_loads_exactly_the_plain_json_lines() {
    let plain = invocations_of(&fixture("plain.otlp.jsonl"));
    assert_eq!(plain.len(), 3);
    assert_eq!(span_count(&plain), 9);
    let errors: u64 = plain
        .iter()
        .map(|i| i["counts"]["errors"].as_u64().unwrap())
        .sum();
    assert_eq!(errors, 1, "trace 3's lookup tool failed");
    for name in [
        "proto-framed.binpb",
        "proto-zstd-framed.binpb",
        "json-zstd-framed.jsonl",
        "spool.otlp.jsonl.zst",
    ] {
        assert_eq!(invocations_of(&fixture(name)), plain, "{name}");
    }
}

#[test]
fn explain_names_the_container() {
    let reason = |name: &str| {
        let (_, reports) = load_store(&[fixture(name)]);
        (reports[0].format, reports[0].reason.clone())
    };
    let (format, why) = reason("proto-framed.binpb");
    assert_eq!(format, Some("otlp-protobuf"));
    assert!(
        why.starts_with("Collector framing: 3 length-prefixed messages (protobuf"),
        "{why}"
    );
    let (format, why) = reason("json-zstd-framed.jsonl");
    assert_eq!(format, Some("otlp-json"));
    assert!(
        why.contains("3 length-prefixed messages, zstd each"),
        "{why}"
    );
    let (_, why) = reason("spool.otlp.jsonl.zst");
    assert!(why.starts_with("zstd; "), "{why}");
}

#[test]
fn a_file_cut_inside_a_message_keeps_the_whole_ones_and_says_so() {
    let bytes = std::fs::read(fixture("proto-zstd-framed.binpb")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.binpb");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let (store, reports) = load_store(std::slice::from_ref(&cut));
    let doc = to_json(&store, Reveal::Redacted);
    let loaded = doc["invocations"].as_array().unwrap();
    // Requests 1 and 2 are whole: 2 + 3 spans.
    assert_eq!(span_count(loaded), 5);
    assert_eq!(
        reports[0].warnings,
        ["the file ends inside message 3: it is cut short or still being written"]
    );
}

#[test]
fn a_zstd_request_body_is_spooled_with_its_exact_spans() {
    let dir = tempfile::tempdir().unwrap();
    let serve = crate::support::Serve::start(dir.path(), &[]);
    // Compressed by the reference `zstd` command (see SOURCES.md), not by our own crate.
    let body = std::fs::read(fixture("request-zstd.pb.zst.bin")).unwrap();
    let response = crate::support::raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "zstd"),
        ],
        &body,
    )
    .unwrap();
    assert_eq!(
        response.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
    let spooled = crate::support::span_ids(&crate::support::spool_lines(dir.path()));
    let expected: std::collections::BTreeSet<(String, String)> = [(2, 1), (2, 2), (3, 2)]
        .iter()
        .map(|(trace, span)| (format!("{trace:032x}"), format!("{trace:08x}{span:08x}")))
        .collect();
    assert_eq!(spooled, expected);
}
