//! The TUI reads a directory through the watcher, `dump` through `sources::load`: both must
//! arrive at the same invocations, spans and problems on the whole mixed fixture corpus (every
//! format the project reads, side by side, with READMEs and SOURCES notes between them).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use toolcap::redact::Reveal;
use toolcap::sources::load::load_store;
use toolcap::sources::watch::spawn_watcher;
use toolcap::sources::{IngestEvent, SourceStatus};
use toolcap::store::Store;
use toolcap::views::dump::to_json;

/// `dump --json`'s invocations keyed by id, and its problems sorted: arrival order may differ.
fn comparable(store: &Store) -> (BTreeMap<String, Value>, Vec<String>) {
    let doc = to_json(store, Reveal::Revealed);
    let invocations = doc["invocations"]
        .as_array()
        .expect("invocations")
        .iter()
        .map(|i| (i["id"].as_str().expect("id").to_owned(), i.clone()))
        .collect();
    let mut problems: Vec<String> = doc["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(Value::to_string)
        .collect();
    problems.sort();
    (invocations, problems)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_and_dump_read_the_mixed_corpus_identically() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .canonicalize()
        .expect("the fixture corpus");
    let (headless, _) = load_store(std::slice::from_ref(&corpus));
    assert!(headless.len() > 50, "the corpus loads: {}", headless.len());

    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let _watch = spawn_watcher(vec![corpus.clone()], tx).expect("watching the corpus");
    let mut live = Store::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(120), rx.recv())
            .await
            .expect("the initial load finishes")
            .expect("the watcher is running");
        match event {
            IngestEvent::Batch(batch) => live.apply(batch),
            IngestEvent::Forget(path) => live.remove_origin(&path),
            IngestEvent::Status(SourceStatus::Watching { loaded, total, .. })
                if total > 0 && loaded == total =>
            {
                break;
            }
            IngestEvent::Status(_) => {}
        }
    }
    live.settle();

    let (headless_invocations, headless_problems) = comparable(&headless);
    let (live_invocations, live_problems) = comparable(&live);
    let only_headless: Vec<&String> = headless_invocations
        .keys()
        .filter(|id| !live_invocations.contains_key(*id))
        .collect();
    let only_live: Vec<&String> = live_invocations
        .keys()
        .filter(|id| !headless_invocations.contains_key(*id))
        .collect();
    assert!(
        only_headless.is_empty() && only_live.is_empty(),
        "invocations only dump has: {only_headless:?}; only the watcher has: {only_live:?}"
    );
    for (id, invocation) in &headless_invocations {
        assert_eq!(
            &live_invocations[id], invocation,
            "invocation {id} differs between the watcher and dump"
        );
    }
    assert_eq!(live_problems, headless_problems);
}
