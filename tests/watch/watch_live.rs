//! The directory watcher end to end: real files in a temporary directory, real notify
//! events, and a test-only line format so the exact spans (ids, lines, offsets) can be checked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolcap::sources::watch::{WatchHandle, WatchOptions, spawn_watcher_with};
use toolcap::sources::{IngestEvent, SourceStatus};

use crate::support::{Got, Recorder, TEST_REGISTRY, append, lines, strings, wait_for};

fn options(quiet: Duration) -> WatchOptions {
    WatchOptions {
        debounce: Duration::from_millis(50),
        quiet,
        registry: TEST_REGISTRY,
        progress_every: Duration::from_millis(100),
        ..WatchOptions::default()
    }
}

/// Canonical, so paths compare equal to what the watcher reports.
fn temp_root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    (dir, root)
}

fn start(
    root: &Path,
    quiet: Duration,
    capacity: usize,
) -> (WatchHandle, tokio::sync::mpsc::Receiver<IngestEvent>) {
    let (tx, rx) = tokio::sync::mpsc::channel(capacity);
    let handle = spawn_watcher_with(vec![root.to_path_buf()], tx, options(quiet)).expect("watch");
    (handle, rx)
}

/// Waits until the initial load reported itself complete.
async fn initial_load_done(rx: &mut tokio::sync::mpsc::Receiver<IngestEvent>, rec: &mut Recorder) {
    wait_for(rx, rec, "the initial load", |r| {
        r.statuses
            .iter()
            .any(|s| matches!(s, SourceStatus::Watching { loaded, total, .. } if loaded == total))
    })
    .await;
}

fn has_duplicates(spans: &[Got]) -> bool {
    let mut ids: Vec<&String> = spans.iter().map(|g| &g.id).collect();
    let before = ids.len();
    ids.sort();
    ids.dedup();
    ids.len() != before
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_appearing_is_loaded() {
    let (_dir, root) = temp_root();
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;

    let path = root.join("run.jsonl");
    std::fs::write(&path, lines(&["a", "b", "c"])).expect("write");
    wait_for(&mut rx, &mut rec, "three spans", |r| {
        r.ids(&path).len() >= 3
    })
    .await;

    // Each line: 10 bytes (`{"t":"a"}\n`).
    assert_eq!(
        rec.spans(&path),
        vec![
            Got {
                id: "a".into(),
                line: Some(1),
                offset: 0
            },
            Got {
                id: "b".into(),
                line: Some(2),
                offset: 10
            },
            Got {
                id: "c".into(),
                line: Some(3),
                offset: 20
            },
        ]
    );
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    wait_for(&mut rx, &mut rec, "a status counting the file", |r| {
        r.statuses
            .iter()
            .any(|s| matches!(s, SourceStatus::Watching { files: 1, .. }))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jsonl_file_appended_mid_line_is_read_line_by_line_without_duplicates() {
    let (_dir, root) = temp_root();
    let path = root.join("live.jsonl");
    std::fs::write(&path, "").expect("create");
    // A long quiet period: a line is only ever taken once its newline is there.
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;

    // Every write ends inside a line; waiting for the previous complete line proves the
    // watcher has looked at the file while the next one was half written.
    let writes = [
        "{\"t\":\"s1\"}\n{\"t\"",
        ":\"s2\"",
        "}\n{\"t\":\"s3\"}",
        "\n{",
        "\"t\":\"s4\"}\n{\"t\":\"s5\"}\n{\"t\":\"s",
        "6\"}\n",
    ];
    let expect_after = [1, 1, 2, 3, 5, 6];
    for (text, expected) in writes.iter().zip(expect_after) {
        append(&path, text);
        if expected > rec.ids(&path).len() {
            wait_for(&mut rx, &mut rec, "the next complete line", |r| {
                r.ids(&path).len() >= expected
            })
            .await;
        }
    }
    let spans = rec.spans(&path);
    assert_eq!(
        spans.iter().map(|g| g.id.clone()).collect::<Vec<_>>(),
        strings(&["s1", "s2", "s3", "s4", "s5", "s6"])
    );
    assert_eq!(
        spans.iter().map(|g| g.line).collect::<Vec<_>>(),
        (1..=6).map(Some).collect::<Vec<_>>()
    );
    // `{"t":"sN"}\n` is 11 bytes.
    assert_eq!(
        spans.iter().map(|g| g.offset).collect::<Vec<_>>(),
        vec![0, 11, 22, 33, 44, 55]
    );
    assert!(!has_duplicates(&spans));
    assert_eq!(rec.delivered, 6, "a span was delivered twice");
    // A half line handed to the parser would have shown up as a bad line.
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    assert!(rec.forgets.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_and_rewritten_file_is_forgotten_and_read_again() {
    let (_dir, root) = temp_root();
    let path = root.join("t.jsonl");
    std::fs::write(&path, lines(&["old1", "old2", "old3"])).expect("write");
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the first version", |r| {
        r.ids(&path).len() == 3
    })
    .await;

    std::fs::write(&path, lines(&["new1", "new2"])).expect("rewrite");
    wait_for(&mut rx, &mut rec, "the rewritten version", |r| {
        r.ids(&path) == strings(&["new1", "new2"])
    })
    .await;
    assert_eq!(rec.forgets, vec![path.clone()]);
    assert_eq!(
        rec.spans(&path).iter().map(|g| g.line).collect::<Vec<_>>(),
        vec![Some(1), Some(2)]
    );

    // Rewritten in place to the same length: still noticed.
    std::fs::write(&path, lines(&["NEW1", "NEW2"])).expect("rewrite");
    wait_for(&mut rx, &mut rec, "the second rewrite", |r| {
        r.ids(&path) == strings(&["NEW1", "NEW2"])
    })
    .await;
    assert_eq!(rec.forgets.len(), 2);
    assert!(!has_duplicates(&rec.spans(&path)));
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_replaced_whole_comes_back_as_one_replacing_batch() {
    let (_dir, root) = temp_root();
    let outside = tempfile::tempdir().expect("tempdir");
    let path = root.join("t.jsonl");
    std::fs::write(&path, lines(&["old1", "old2"])).expect("write");
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the first version", |r| {
        r.ids(&path).len() == 2
    })
    .await;

    // Written beside and renamed over, as editors and log rotators do: the watcher never sees
    // the file empty, so the old runs go in the same event as the new ones come.
    let next = outside.path().join("next.jsonl");
    std::fs::write(&next, lines(&["new1", "new2", "new3"])).expect("write beside");
    std::fs::rename(&next, &path).expect("rename over");
    wait_for(&mut rx, &mut rec, "the new version", |r| {
        r.ids(&path) == strings(&["new1", "new2", "new3"])
    })
    .await;
    assert_eq!(rec.replaced, vec![path.clone()]);
    assert_eq!(rec.forgets, vec![path.clone()], "no forgetting of its own");
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_renamed_away_is_forgotten_and_a_new_one_read() {
    let (_dir, root) = temp_root();
    let outside = tempfile::tempdir().expect("tempdir");
    let path = root.join("app.jsonl");
    std::fs::write(&path, lines(&["r1", "r2"])).expect("write");
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the first file", |r| {
        r.ids(&path).len() == 2
    })
    .await;

    // Rotation inside the root: the old data now lives under the new name, once.
    let rotated = root.join("app.jsonl.1");
    std::fs::rename(&path, &rotated).expect("rotate");
    std::fs::write(&path, lines(&["n1"])).expect("new file");
    wait_for(&mut rx, &mut rec, "the rotated and the new file", |r| {
        r.ids(&rotated) == strings(&["r1", "r2"]) && r.ids(&path) == strings(&["n1"])
    })
    .await;
    assert!(rec.forgets.contains(&path));
    assert_eq!(rec.total_spans(), 3);

    // Renamed out of the watched tree: gone.
    std::fs::rename(&rotated, outside.path().join("away.jsonl")).expect("move away");
    wait_for(
        &mut rx,
        &mut rec,
        "the moved-away file to be forgotten",
        |r| r.forgets.contains(&rotated),
    )
    .await;
    assert_eq!(rec.ids(&rotated), Vec::<String>::new());
    assert_eq!(rec.ids(&path), strings(&["n1"]));
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_document_written_in_two_halves_loads_once_complete() {
    let (_dir, root) = temp_root();
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;

    let doc = root.join("doc.json");
    let text = "{\n  \"spans\": [\n    \"d1\",\n    \"d2\"\n  ]\n}\n";
    let (first, second) = text.split_at(text.len() / 2);
    append(&doc, first);
    // A probe written after the first half, sorting after it: once the probe arrives the
    // watcher has looked at the half document.
    let probe = root.join("zz-probe.jsonl");
    std::fs::write(&probe, lines(&["p"])).expect("probe");
    wait_for(&mut rx, &mut rec, "the probe", |r| r.ids(&probe).len() == 1).await;
    assert!(rec.ids(&doc).is_empty());
    assert!(
        rec.problems.is_empty(),
        "half a document was parsed: {:?}",
        rec.problems
    );

    append(&doc, second);
    wait_for(&mut rx, &mut rec, "the whole document", |r| {
        r.ids(&doc).len() == 2
    })
    .await;
    assert_eq!(rec.ids(&doc), strings(&["d1", "d2"]));
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    assert_eq!(rec.delivered, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_that_stays_invalid_is_reported_once_after_a_quiet_period() {
    let (_dir, root) = temp_root();
    let (_watch, mut rx) = start(&root, Duration::from_millis(300), 64);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;

    let doc = root.join("broken.json");
    append(&doc, "{\n  \"spans\": [\n");
    append(&doc, "    \"d1\",\n");
    wait_for(
        &mut rx,
        &mut rec,
        "a problem for the broken document",
        |r| !r.problems.is_empty(),
    )
    .await;
    let source = doc.display().to_string();
    assert_eq!(rec.problems.len(), 1, "{:?}", rec.problems);
    assert_eq!(rec.problems[0].source, source);
    assert!(rec.problems[0].message.contains("not a complete document"));

    // Later events elsewhere do not repeat it.
    let probe = root.join("zz-probe.jsonl");
    std::fs::write(&probe, lines(&["p"])).expect("probe");
    wait_for(&mut rx, &mut rec, "the probe", |r| r.ids(&probe).len() == 1).await;
    assert_eq!(rec.problems.len(), 1, "{:?}", rec.problems);

    // Finishing it replaces the problem with the spans.
    append(&doc, "    \"d2\"\n  ]\n}\n");
    wait_for(&mut rx, &mut rec, "the finished document", |r| {
        r.ids(&doc).len() == 2
    })
    .await;
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    assert!(rec.forgets.contains(&doc));
}

#[tokio::test(flavor = "multi_thread")]
async fn subdirectories_created_later_are_followed() {
    let (_dir, root) = temp_root();
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;

    // Created together with its file: the file may exist before the directory is watched.
    let deep = root.join("a").join("b");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let first = deep.join("one.jsonl");
    std::fs::write(&first, lines(&["x1", "x2"])).expect("write");
    wait_for(&mut rx, &mut rec, "the nested file", |r| {
        r.ids(&first).len() == 2
    })
    .await;

    // And followed afterwards.
    append(&first, &lines(&["x3"]));
    let second = deep.join("two.jsonl");
    std::fs::write(&second, lines(&["y1"])).expect("write");
    wait_for(&mut rx, &mut rec, "more nested data", |r| {
        r.ids(&first).len() == 3 && r.ids(&second).len() == 1
    })
    .await;
    assert_eq!(rec.ids(&first), strings(&["x1", "x2", "x3"]));

    // Hidden and non-trace files are ignored.
    std::fs::write(deep.join(".hidden.jsonl"), lines(&["h"])).expect("write");
    std::fs::write(deep.join("notes.md"), "# notes\n").expect("write");
    let probe = root.join("zz-probe.jsonl");
    std::fs::write(&probe, lines(&["p"])).expect("probe");
    wait_for(&mut rx, &mut rec, "the probe", |r| r.ids(&probe).len() == 1).await;
    assert_eq!(rec.total_spans(), 5);
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_initial_load_reports_progress_and_waits_when_the_channel_is_full() {
    let (_dir, root) = temp_root();
    let count = 120;
    for i in 0..count {
        std::fs::write(
            root.join(format!("f{i:03}.jsonl")),
            lines(&[&format!("id{i}")]),
        )
        .expect("write");
    }
    // A channel of one: the watcher has to wait for the test at every event.
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 1);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;
    assert_eq!(rec.total_spans(), count);
    let progress: Vec<(usize, usize)> = rec
        .statuses
        .iter()
        .filter_map(|s| match s {
            SourceStatus::Watching { loaded, total, .. } => Some((*loaded, *total)),
            _ => None,
        })
        .collect();
    assert_eq!(progress.first(), Some(&(0, count)));
    assert_eq!(progress.last(), Some(&(count, count)));
    assert!(
        progress.windows(2).all(|w| w[0].0 <= w[1].0),
        "{progress:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_last_line_without_newline_is_taken_after_a_quiet_period() {
    let (_dir, root) = temp_root();
    // Found at start-up and untouched for longer than the quiet period: taken at once.
    let old = root.join("old.jsonl");
    std::fs::write(&old, "{\"t\":\"o1\"}\n{\"t\":\"o2\"}").expect("write");
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .and_then(|f| f.set_modified(an_hour_ago))
        .expect("set mtime");
    let (_watch, mut rx) = start(&root, Duration::from_millis(300), 64);
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the old file", |r| {
        r.ids(&old).len() == 2
    })
    .await;

    // Written live without a newline: taken once it stayed quiet; the late newline and the
    // next line then continue at the right line number.
    let live = root.join("live.jsonl");
    append(&live, "{\"t\":\"a\"}");
    wait_for(&mut rx, &mut rec, "the unterminated line", |r| {
        r.ids(&live).len() == 1
    })
    .await;
    append(&live, "\n{\"t\":\"b\"}\n");
    wait_for(&mut rx, &mut rec, "the next line", |r| {
        r.ids(&live).len() == 2
    })
    .await;
    assert_eq!(
        rec.spans(&live),
        vec![
            Got {
                id: "a".into(),
                line: Some(1),
                offset: 0
            },
            Got {
                id: "b".into(),
                line: Some(2),
                offset: 10
            },
        ]
    );
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn unrecognised_lines_are_reported_once_and_detection_retries_on_new_lines() {
    let (_dir, root) = temp_root();
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 64);
    let mut rec = Recorder::default();
    initial_load_done(&mut rx, &mut rec).await;

    let path = root.join("mixed.jsonl");
    append(&path, "{\"other\":1}\n");
    wait_for(&mut rx, &mut rec, "the problem", |r| !r.problems.is_empty()).await;
    append(&path, "{\"other\":2}\n");
    append(&path, &lines(&["k1"]));
    wait_for(&mut rx, &mut rec, "the recognised line", |r| {
        r.ids(&path).len() == 1
    })
    .await;
    assert_eq!(rec.problems.len(), 1, "{:?}", rec.problems);
    assert_eq!(rec.problems[0].line, Some(1));
    // The recognised line keeps its place in the file (third line).
    assert_eq!(rec.spans(&path)[0].line, Some(3));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_emptied_and_left_empty_is_forgotten_after_a_quiet_period() {
    let (_dir, root) = temp_root();
    let doc = root.join("doc.json");
    std::fs::write(&doc, "{\n\"spans\": [\"e1\"]\n}\n").expect("write");
    let (_watch, mut rx) = start(&root, Duration::from_millis(300), 64);
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the document", |r| {
        r.ids(&doc).len() == 1
    })
    .await;
    std::fs::write(&doc, "").expect("empty it");
    wait_for(&mut rx, &mut rec, "the forget", |r| {
        r.forgets.contains(&doc)
    })
    .await;
    assert!(rec.ids(&doc).is_empty());
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_file_root_is_followed_and_its_siblings_ignored() {
    let (_dir, root) = temp_root();
    let path = root.join("only.jsonl");
    std::fs::write(&path, lines(&["f1"])).expect("write");
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let _watch = spawn_watcher_with(vec![path.clone()], tx, options(Duration::from_secs(60)))
        .expect("watch");
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the file", |r| r.ids(&path).len() == 1).await;
    std::fs::write(root.join("sibling.jsonl"), lines(&["s"])).expect("write");
    append(&path, &lines(&["f2"]));
    wait_for(&mut rx, &mut rec, "the appended line", |r| {
        r.ids(&path).len() == 2
    })
    .await;
    assert_eq!(rec.total_spans(), 2);
    assert!(rec.by_file.keys().all(|k| k == &path));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_big_file_reaches_the_app_in_pieces_with_its_progress() {
    let (_dir, root) = temp_root();
    let path = root.join("big.jsonl");
    // 24 MiB of 1 KiB lines: several of the tailer's 2 MiB pieces.
    let count = 24 * 1024;
    let pad = "x".repeat(1000);
    let text: String = (0..count)
        .map(|i| format!("{{\"t\":\"id{i:05}\",\"pad\":\"{pad}\"}}\n"))
        .map(|line| format!("{line:>1024}"))
        .collect();
    std::fs::write(&path, &text).expect("write");
    let size = text.len() as u64;
    let (_watch, mut rx) = start(&root, Duration::from_secs(60), 4);
    let mut rec = Recorder::default();
    // Spans already delivered when each progress report arrived.
    let mut progress: Vec<(u64, u64, usize)> = Vec::new();
    while progress.last().is_none_or(|&(read, total, _)| read < total) {
        let event = tokio::time::timeout(Duration::from_secs(120), rx.recv())
            .await
            .expect("the watcher went quiet")
            .expect("the watcher stopped");
        if let IngestEvent::Status(SourceStatus::Reading {
            path: p,
            read,
            total,
            ..
        }) = &event
        {
            assert_eq!(p, &path);
            progress.push((*read, *total, rec.total_spans()));
        }
        rec.apply(event);
    }
    assert!(progress.len() >= 3, "{progress:?}");
    assert!(progress.iter().all(|&(_, total, _)| total == size));
    assert!(progress.windows(2).all(|w| w[0].0 < w[1].0), "{progress:?}");
    // Runs were in the app while the rest of the file was still being read.
    assert!(
        progress
            .iter()
            .any(|&(read, _, delivered)| read < size && delivered > 0 && delivered < count),
        "{progress:?}"
    );
    // Each report comes before the runs of the piece it counts, but the last one, which
    // says the read is done, comes after them.
    assert_eq!(progress[0].2, 0, "{progress:?}");
    assert_eq!(progress.last().map(|p| p.2), Some(count), "{progress:?}");
    assert_eq!(rec.total_spans(), count);
    // Pieces are parsed side by side but arrive in file order.
    let ids = rec.ids(&path);
    let in_file_order: Vec<String> = (0..count).map(|i| format!("id{i:05}")).collect();
    assert!(ids == in_file_order, "ids out of file order");
}
