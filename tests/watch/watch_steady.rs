//! Live follow under steady writes: a file appended every 0.2 s shows new lines while the
//! writer keeps writing (the watcher's debounce has a maximum delay), with real notify events.
//! No timed assertion: the writer stops only once the reader has seen enough lines, or after
//! a generous cap, and the test asserts that it stopped because the reader caught up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use toolcap::sources::watch::{WatchOptions, spawn_watcher_with};

use crate::support::{Recorder, TEST_REGISTRY, append, lines};

/// Lines the reader must see while the writer is still writing.
const SEEN_WHILE_WRITING: usize = 8;
/// The writer gives up after this many lines (40 s at 0.2 s): far past any debounce.
const WRITER_CAP: usize = 200;

#[tokio::test(flavor = "multi_thread")]
async fn a_file_kept_open_and_written_steadily_shows_new_lines_while_it_grows() {
    steady_writer(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_reopened_for_every_line_shows_new_lines_while_it_grows() {
    steady_writer(false).await;
}

async fn steady_writer(kept_open: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let path = root.join("live.jsonl");
    append(&path, &lines(&["l0"]));
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let options = WatchOptions {
        registry: TEST_REGISTRY,
        ..WatchOptions::default()
    };
    let _watch = spawn_watcher_with(vec![root.clone()], tx, options).unwrap();

    let seen = Arc::new(AtomicUsize::new(0));
    let stopped_by_cap = Arc::new(AtomicBool::new(false));
    let writer = {
        let (seen, stopped_by_cap, path) = (seen.clone(), stopped_by_cap.clone(), path.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            for i in 1..WRITER_CAP {
                if seen.load(Ordering::SeqCst) >= SEEN_WHILE_WRITING {
                    return i;
                }
                // The steady writer of the issue: one line every 0.2 s, each its own write.
                std::thread::sleep(Duration::from_millis(200));
                let line = lines(&[&format!("l{i}")]);
                if kept_open {
                    // As an exporter does: no close event between writes.
                    file.write_all(line.as_bytes()).unwrap();
                    file.flush().unwrap();
                } else {
                    append(&path, &line);
                }
            }
            stopped_by_cap.store(true, Ordering::SeqCst);
            WRITER_CAP
        })
    };
    let mut recorder = Recorder::default();
    while seen.load(Ordering::SeqCst) < SEEN_WHILE_WRITING && !writer.is_finished() {
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
            recorder.apply(event);
            seen.store(recorder.ids(&path).len(), Ordering::SeqCst);
        }
    }
    let written = writer.join().unwrap();
    assert!(
        !stopped_by_cap.load(Ordering::SeqCst),
        "the reader saw only {} lines while {written} were written",
        recorder.ids(&path).len()
    );
    let ids = recorder.ids(&path);
    assert!(ids.len() >= SEEN_WHILE_WRITING);
    // In order, no duplicates.
    let expected: Vec<String> = (0..ids.len()).map(|i| format!("l{i}")).collect();
    assert_eq!(ids, expected);
}
