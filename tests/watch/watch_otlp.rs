//! The watcher with the real format registry over OTLP/JSON from the Python SDK corpus:
//! 5 requests holding 7 + 6 + 9 + 7 + 6 = 35 spans (counted with jq).

use std::time::Duration;

use toolcap::sources::watch::{WatchOptions, spawn_watcher_with};

use crate::support::{Recorder, append, wait_for};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/corpus/otlp-python-sdk/otlp-json"
);

fn options() -> WatchOptions {
    WatchOptions {
        debounce: Duration::from_millis(50),
        quiet: Duration::from_secs(60),
        ..WatchOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn otlp_jsonl_appended_in_odd_chunks_yields_every_span_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let _watch = spawn_watcher_with(vec![root.clone()], tx, options()).expect("watch");
    let text = std::fs::read_to_string(format!("{CORPUS}/traces.jsonl")).expect("fixture");
    let path = root.join("traces.jsonl");
    let mut rec = Recorder::default();
    // 997-byte pieces end mid-line almost every time.
    for piece in text.as_bytes().chunks(997) {
        append(&path, std::str::from_utf8(piece).unwrap_or_default());
    }
    wait_for(&mut rx, &mut rec, "35 spans", |r| r.total_spans() >= 35).await;
    assert_eq!(rec.total_spans(), 35);
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    let mut ids: Vec<String> = rec
        .by_file
        .values()
        .flatten()
        .map(|g| g.id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 35);
}

#[tokio::test(flavor = "multi_thread")]
async fn otlp_json_documents_written_in_halves_yield_every_span() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let _watch = spawn_watcher_with(vec![root.clone()], tx, options()).expect("watch");
    let mut rec = Recorder::default();
    for n in 1..=5 {
        let name = format!("{n:04}-v1_traces.json");
        let text = std::fs::read(format!("{CORPUS}/{name}")).expect("fixture");
        let (first, second) = text.split_at(text.len() / 2);
        let path = root.join(&name);
        std::fs::write(&path, first).expect("write");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, second))
            .expect("append");
    }
    wait_for(&mut rx, &mut rec, "35 spans", |r| r.total_spans() >= 35).await;
    assert_eq!(rec.total_spans(), 35);
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}
