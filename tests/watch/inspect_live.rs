//! An Inspect AI eval followed while it runs: the real library writes its `.eval` log in a
//! watched directory one sample at a time (`tests/python/inspect_live.py`), the last sample held
//! at a FIFO until the test lets it go. The watcher shows the samples written so far, saying the
//! eval is in progress, then every sample once the log is finished, each as Inspect's own
//! `read_eval_log` reads it (`tests/common/inspect_real.rs`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use toolcap::redact::Reveal;
use toolcap::sources::IngestEvent;
use toolcap::sources::watch::spawn_watcher;
use toolcap::store::Store;
use toolcap::views::dump::to_json;

use crate::inspect_real::{check_against_inspect, inspect_truth, root, venv_python};

/// The next line the eval prints (`waiting`, `done <path>`); the eval's stderr if it ended.
fn next_line(child: &mut Child, lines: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    if lines.read_line(&mut line).unwrap() == 0 {
        let output = std::mem::replace(child, Command::new("true").spawn().unwrap());
        panic!("the eval ended early: {:?}", output.wait_with_output());
    }
    line.trim().to_owned()
}

/// What the watcher sent while followed: batches that replaced runs the log gave, forgets,
/// and spans.
#[derive(Default)]
struct Sent {
    replacing: usize,
    forgets: usize,
    spans: usize,
}

/// Applies the watcher's events to `store` until `enough` says the store has what is awaited.
async fn follow_until(
    rx: &mut tokio::sync::mpsc::Receiver<IngestEvent>,
    store: &mut Store,
    sent: &mut Sent,
    what: &str,
    enough: impl Fn(&Store) -> bool,
) {
    while !enough(store) {
        let event = tokio::time::timeout(Duration::from_secs(120), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("the watcher never showed {what}"))
            .expect("the watcher is running");
        match event {
            IngestEvent::Batch(batch) => {
                sent.replacing += usize::from(batch.replaces.is_some() && !store.is_empty());
                sent.spans += batch.spans.len();
                store.apply(batch)
            }
            IngestEvent::Forget(path) => {
                sent.forgets += 1;
                store.remove_origin(&path)
            }
            IngestEvent::Status(_) => {}
        }
        store.settle();
    }
}

fn progress_notes(store: &Store) -> Vec<String> {
    store
        .problems()
        .iter()
        .map(|problem| problem.message.to_string())
        .filter(|message| message.contains("in progress"))
        .collect()
}

fn only_log(dir: &Path) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "eval"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_eval_shows_its_samples_so_far_then_all_of_them() {
    let work = tempfile::tempdir().unwrap();
    let logs = work.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let gate = work.path().join("gate");
    let made = Command::new("mkfifo").arg(&gate).status().unwrap();
    assert!(made.success(), "mkfifo");

    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let _watch = spawn_watcher(vec![logs.clone()], tx).expect("watching the log directory");
    let mut eval = Command::new(venv_python())
        .arg(root().join("tests/python/inspect_live.py"))
        .arg(&logs)
        .arg(&gate)
        .arg(root().join("tests/fixtures/inspect-ai"))
        .env("INSPECT_LOG_LEVEL", "warning")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(eval.stdout.take().unwrap());
    let mut store = Store::new();
    let mut sent = Sent::default();
    let open_gate = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&gate)
            .unwrap()
            .write_all(b"go\n")
            .unwrap()
    };

    // Three samples are written, then seven; the fourth and the eighth wait at the gate. The
    // runs come a group of samples at a time, the log's coverage after them.
    for (written, then) in [(3, "3 of 8"), (7, "7 of 8")] {
        assert_eq!(next_line(&mut eval, &mut lines), "waiting");
        follow_until(
            &mut rx,
            &mut store,
            &mut sent,
            &format!("{written} samples and the coverage"),
            |store| {
                store.len() >= written
                    && progress_notes(store).iter().any(|note| note.contains(then))
            },
        )
        .await;
        assert_eq!(store.len(), written);
        let notes = progress_notes(&store);
        assert_eq!(notes.len(), 1, "the coverage said once: {notes:?}");
        if written == 3 {
            open_gate();
        }
    }
    // The log read again once samples were written took only the samples added: no run was
    // replaced, and every span came once.
    assert_eq!((sent.replacing, sent.forgets), (0, 0));
    let held: usize = store.invocations().map(|run| run.spans.len()).sum();
    assert_eq!(sent.spans, held);
    // The log as it is now, read by Inspect: it says the eval is running, and every sample
    // written so far is shown as Inspect reads it.
    let snapshot = work.path().join("in-progress.eval");
    std::fs::copy(only_log(&logs), &snapshot).unwrap();
    let truth = inspect_truth(std::slice::from_ref(&snapshot));
    assert_eq!(truth[0]["status"], "started");
    let checked = check_against_inspect(&to_json(&store, Reveal::Revealed), &truth[0]);
    assert_eq!(checked, 7);

    // Let the last sample finish: Inspect writes it and the header after the others, which
    // stay in place, so the finish adds the last run and says the coverage anew.
    open_gate();
    let done = next_line(&mut eval, &mut lines);
    assert!(done.starts_with("done "), "{done}");
    assert!(eval.wait().unwrap().success());
    follow_until(
        &mut rx,
        &mut store,
        &mut sent,
        "the finished log",
        |store| store.len() == 8 && progress_notes(store).is_empty(),
    )
    .await;
    assert_eq!(
        (sent.replacing, sent.forgets),
        (0, 0),
        "followed to its end by adding"
    );
    let held: usize = store.invocations().map(|run| run.spans.len()).sum();
    assert_eq!(sent.spans, held);
    let truth = inspect_truth(&[only_log(&logs)]);
    assert_eq!(truth[0]["status"], "success");
    let checked = check_against_inspect(&to_json(&store, Reveal::Revealed), &truth[0]);
    assert_eq!(checked, 8);
}

/// A `.eval` log is read in place, member by member: while its zip directory is not written
/// the watcher waits, and once the file stays so for a quiet period it says so; when the log is
/// whole, its runs come.
#[tokio::test(flavor = "multi_thread")]
async fn a_log_without_its_directory_is_waited_for_then_read_in_place() {
    let whole = std::fs::read(root().join(
        "tests/fixtures/inspect-ai/A/2026-12-05T23-41-56-00-00_geo-tools_AqDaXwGFYwbT89CTuYLT32.eval",
    ))
    .unwrap();
    let cut = whole[..whole.len() / 2].to_vec();
    waited_for_then_read("run.eval", &cut, &whole, "still not a complete document").await;
}

/// A JSON log is read as a stream: one that breaks off in its samples (as while Inspect
/// rewrites it) is waited for like an unfinished zip, and once whole, all its runs come.
#[tokio::test(flavor = "multi_thread")]
async fn a_json_log_that_breaks_off_is_waited_for_then_read_as_a_stream() {
    let whole = std::fs::read(root().join(
        "tests/fixtures/inspect-ai/A/2026-12-05T23-41-58-00-00_geo-tools_W2smyxMsnHsNeycSC4xsC9.json",
    ))
    .unwrap();
    let mut cut = whole[..whole.len() * 3 / 4].to_vec();
    cut.extend_from_slice(b"\n}\n");
    waited_for_then_read("run.json", &cut, &whole, "the log breaks off after").await;
}

/// Writes `cut` as `name` in a watched directory: the watcher says `said` once the file stays
/// so for a quiet period, and holds none of its runs; then `whole`: all its runs come.
async fn waited_for_then_read(name: &str, cut: &[u8], whole: &[u8], said: &str) {
    use crate::support::{Recorder, wait_for};
    use toolcap::sources::watch::{WatchOptions, spawn_watcher_with};

    let dir = tempfile::tempdir().unwrap();
    let root_dir = dir.path().canonicalize().unwrap();
    let log = root_dir.join(name);
    std::fs::write(&log, cut).unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let options = WatchOptions {
        debounce: Duration::from_millis(20),
        quiet: Duration::from_millis(200),
        ..WatchOptions::default()
    };
    let _watch = spawn_watcher_with(vec![root_dir.clone()], tx, options).expect("watch");
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the incomplete log said", |r| {
        r.problems.iter().any(|p| {
            p.message.contains("still not a complete document") && p.message.contains(said)
        })
    })
    .await;
    assert_eq!(rec.by_file.get(&log).map_or(0, Vec::len), 0);

    std::fs::write(&log, whole).unwrap();
    wait_for(&mut rx, &mut rec, "the log's eight runs", |r| {
        r.problems.iter().any(|p| p.message.contains("8 samples, "))
    })
    .await;
    let spans = rec.by_file.get(&log).map_or(0, Vec::len);
    let origin = toolcap::model::Origin::File(std::sync::Arc::new(log.clone()));
    let expected = toolcap::formats::load_bytes(origin, whole)
        .batch
        .spans
        .len();
    assert!(expected > 8);
    assert_eq!(spans, expected);

    // Written again (an eval flushing its log): the new read replaces the old one in the
    // batch that brings its first runs, with no forgetting of its own before it.
    let (forgets, replaced) = (rec.forgets.len(), rec.replaced.len());
    std::fs::write(&log, whole).unwrap();
    wait_for(&mut rx, &mut rec, "the log read again", |r| {
        r.replaced.len() > replaced
    })
    .await;
    assert_eq!(rec.replaced[replaced..], *std::slice::from_ref(&log));
    assert_eq!(rec.forgets.len(), forgets + 1);
    wait_for(&mut rx, &mut rec, "all its runs again", |r| {
        r.by_file.get(&log).map_or(0, Vec::len) == expected
    })
    .await;
}

/// A log of many samples written again (its eval finished, or rescored) comes back as one batch
/// that replaces every run at once: the list never shrinks to the first group's runs and grows
/// back while the file is read, though a first read hands each group on as it comes.
#[tokio::test(flavor = "multi_thread")]
async fn a_big_log_read_again_replaces_its_runs_in_one_batch() {
    use crate::support::{Recorder, wait_for};
    use toolcap::sources::watch::{WatchOptions, spawn_watcher_with};

    let dir = tempfile::tempdir().unwrap();
    let root_dir = dir.path().canonicalize().unwrap();
    let log = root_dir.join("many.eval");
    let json_log = root().join(
        "tests/fixtures/inspect-ai/A/2026-12-05T23-41-58-00-00_geo-tools_W2smyxMsnHsNeycSC4xsC9.json",
    );
    crate::inspect_many::many_samples_log(&json_log, &log, 10);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let options = WatchOptions {
        debounce: Duration::from_millis(20),
        ..WatchOptions::default()
    };
    let _watch = spawn_watcher_with(vec![root_dir.clone()], tx, options).expect("watch");
    let mut rec = Recorder::default();
    let said = |r: &Recorder| {
        r.problems
            .iter()
            .any(|p| p.message.contains("80 samples, "))
    };
    wait_for(&mut rx, &mut rec, "the log's 80 runs", said).await;
    let spans = rec.by_file.get(&log).map_or(0, Vec::len);
    assert!(spans > 80 * 8, "{spans} spans");
    assert!(rec.replaced.is_empty());

    // Written again whole, as when the eval finishes: one batch brings every span back.
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, bytes).unwrap();
    wait_for(&mut rx, &mut rec, "the log read again", |r| {
        !r.replaced.is_empty()
    })
    .await;
    assert_eq!(rec.replaced, std::slice::from_ref(&log));
    assert_eq!(
        rec.replacing_spans,
        [spans],
        "every run in the replacing batch"
    );
    assert_eq!(rec.by_file.get(&log).map_or(0, Vec::len), spans);
}
