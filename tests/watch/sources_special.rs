//! Sources that are not plain files in a plain directory: symbolic links (followed, loops
//! reported), FIFOs and other special files inside directories (skipped with a note),
//! standard input (`-`, `/dev/stdin`, `<(…)`), and text with invisible characters.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use toolcap::model::Severity;
use toolcap::sources::files;
use toolcap::sources::load;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus/otel-genai/genai-latest.spans.otlp.jsonl")
}

fn second_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus/otel-genai/openinference.spans.otlp.jsonl")
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
}

#[test]
fn symbolic_links_inside_a_directory_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(fixture(), dir.path().join("a.jsonl")).unwrap();
    std::os::unix::fs::symlink(second_fixture(), dir.path().join("b.jsonl")).unwrap();
    let (store, _) = load::load_store(&[dir.path().to_path_buf()]);
    let (direct, _) = load::load_store(&[fixture(), second_fixture()]);
    assert!(!store.is_empty());
    assert_eq!(store.len(), direct.len());
    assert_eq!(store.stats().spans_kept, direct.stats().spans_kept);
    assert!(store.problems().is_empty(), "{:?}", store.problems());
}

#[test]
fn symbolic_link_loops_and_dangling_links_are_notes_and_the_walk_ends() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::copy(fixture(), sub.join("t.jsonl")).unwrap();
    std::os::unix::fs::symlink(dir.path(), sub.join("back-to-top")).unwrap();
    std::os::unix::fs::symlink(&sub, sub.join("itself")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("missing"),
        dir.path().join("dangling.jsonl"),
    )
    .unwrap();
    // A second name for the same file loads it once.
    std::os::unix::fs::symlink(sub.join("t.jsonl"), dir.path().join("alias.jsonl")).unwrap();
    let walk = files::walk(dir.path()).unwrap();
    assert_eq!(walk.files.len(), 1, "{:?}", walk.files);
    let notes: Vec<String> = walk.notes.iter().map(|n| n.to_string()).collect();
    assert!(
        walk.notes.iter().all(|n| n.severity == Severity::Note),
        "{notes:?}"
    );
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("symbolic link loop"))
            .count(),
        2,
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("dangling.jsonl") && n.contains("link to nothing")),
        "{notes:?}"
    );
    let (store, _) = load::load_store(&[dir.path().to_path_buf()]);
    assert_eq!(store.stats().duplicate_spans, 0);
    assert!(store.problems().iter().all(|p| !p.is_counted()));
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

#[test]
fn fifos_inside_a_directory_are_skipped_with_a_note_not_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), dir.path().join("t.jsonl")).unwrap();
    mkfifo(&dir.path().join("pipe.jsonl"));
    // Nobody writes to the FIFO: reading it would block, so finishing proves it was skipped.
    let (store, _) = load::load_store(&[dir.path().to_path_buf()]);
    assert!(!store.is_empty());
    let notes: Vec<String> = store.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("pipe.jsonl") && notes[0].contains("not a regular file (a FIFO)"),
        "{notes:?}"
    );
    assert_eq!(store.problems()[0].severity, Severity::Note);
}

fn dump_with_stdin(args: &[&str], input: &[u8]) -> String {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn dash_and_dev_stdin_read_standard_input() {
    let bytes = std::fs::read(fixture()).unwrap();
    let expected = bin()
        .args(["dump", "--json"])
        .arg(fixture())
        .output()
        .unwrap();
    let expected: serde_json::Value = serde_json::from_slice(&expected.stdout).unwrap();
    for source in ["-", "/dev/stdin"] {
        let out = dump_with_stdin(&["dump", "--json", source], &bytes);
        let got: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(got["invocations"], expected["invocations"], "{source}");
        assert_eq!(
            got["problems"].as_array().unwrap().len(),
            0,
            "{source}: {out}"
        );
    }
    // Revealed payloads come from memory: standard input cannot be read twice.
    let revealed = dump_with_stdin(&["dump", "--reveal", "-"], &bytes);
    let from_file = bin()
        .args(["dump", "--reveal"])
        .arg(fixture())
        .output()
        .unwrap();
    let from_file = String::from_utf8(from_file.stdout).unwrap();
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("genai-latest") && !l.contains("stdin"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&revealed), body(&from_file));
}

#[test]
fn process_substitution_is_read() {
    let script = format!(
        "{} dump <(cat {})",
        env!("CARGO_BIN_EXE_toolcap-tui"),
        fixture().display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("spans"), "{text}");
    assert!(!text.contains("problems"), "{text}");
}

#[test]
fn invisible_and_tag_characters_show_as_escapes_in_dump() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tags.otlp.jsonl");
    // "run" followed by the tag characters spelling "hi", a zero-width space and a bidi override.
    let name = "run\u{e0068}\u{e0069}\u{200b}x\u{202e}y";
    let line = serde_json::json!({"resourceSpans":[{"resource":{},"scopeSpans":[{"spans":[{
        "traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331",
        "name": name, "startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]});
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let text = String::from_utf8(bin().arg("dump").arg(&path).output().unwrap().stdout).unwrap();
    let json = String::from_utf8(
        bin()
            .args(["dump", "--json"])
            .arg(&path)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for out in [&text, &json] {
        for c in ['\u{e0068}', '\u{e0069}', '\u{200b}', '\u{202e}'] {
            assert!(!out.contains(c), "raw {:?} in {out}", c);
        }
    }
    assert!(
        text.contains(r"run\u{e0068}\u{e0069}\u{200b}x\u{202e}y"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        doc["invocations"][0]["spans"][0]["name"],
        r"run\u{e0068}\u{e0069}\u{200b}x\u{202e}y"
    );
}

/// One directory nobody may read, a FIFO nobody writes to and a link into `/proc`: `dump` of
/// their parent skips each with a note and loads the trace beside them.
#[test]
fn unreadable_directories_fifos_and_kernel_files_are_skipped_by_dump() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path();
    std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(fixture(), top.join("t.jsonl")).unwrap();
    let locked = top.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::copy(second_fixture(), locked.join("hidden.jsonl")).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    toolcap::system::make_fifo(&top.join("pipe.jsonl")).expect("mkfifo");
    std::os::unix::fs::symlink("/proc/self", top.join("kernel")).unwrap();

    let mut dump = bin();
    dump.args(["dump", "--json"]).arg(top);
    let root = toolcap::system::is_root();
    if root {
        // Permissions do not stop root: the walk is run as an unprivileged user instead.
        dump.uid(65534).gid(65534);
    }
    let out = dump.output().expect("run toolcap-tui");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !doc["invocations"].as_array().unwrap().is_empty(),
        "t.jsonl loads"
    );
    let problems = doc["problems"].as_array().unwrap();
    let said = |path: &Path, words: &str| {
        problems.iter().any(|p| {
            p["severity"] == "note"
                && p["source"].as_str() == Some(&*path.display().to_string())
                && p["message"].as_str().is_some_and(|m| m.contains(words))
        })
    };
    assert!(said(&top.join("pipe.jsonl"), "a FIFO"), "{problems:?}");
    assert!(said(&top.join("kernel"), "procfs"), "{problems:?}");
    assert!(said(&locked, "directory not readable"), "{problems:?}");
    assert_eq!(problems.len(), 3, "{problems:?}");
}

/// A device or a file of `/proc` named on the command line is refused with the reason: reading
/// one may never end.
#[test]
fn devices_and_kernel_files_named_directly_are_refused() {
    for (path, reason) in [
        ("/dev/zero", "a device"),
        ("/proc/self/status", "on procfs"),
    ] {
        let out = bin().args(["dump", path]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert!(stderr.contains(reason), "{path}: {stderr}");
    }
}

/// The TUI's watcher says why a root it cannot walk shows nothing, as `dump` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_says_why_a_root_is_not_read() {
    use toolcap::sources::watch::spawn_watcher;
    use toolcap::sources::{IngestEvent, SourceStatus};
    let root = PathBuf::from("/proc/self/fdinfo");
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let _watch = spawn_watcher(vec![root.clone()], tx).expect("procfs can be watched");
    let mut problems = Vec::new();
    // With no files, the initial load says "0 of 0" before and after its notes.
    let mut statuses = 0;
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(60), rx.recv())
            .await
            .expect("the initial load finishes")
            .expect("the watcher is running");
        match event {
            IngestEvent::Batch(batch) => problems.extend(batch.problems),
            IngestEvent::Status(SourceStatus::Watching { loaded, total, .. }) => {
                statuses += 1;
                if loaded == total && statuses == 2 {
                    break;
                }
            }
            _ => {}
        }
    }
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].severity, Severity::Error);
    assert!(problems[0].message.contains("on procfs"), "{problems:?}");
}
