use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;

use super::*;

fn note(run: &str, label: &str, text: &str) -> Note {
    Note {
        v: NOTES_VERSION,
        run: run.to_owned(),
        case: None,
        label: label.to_owned(),
        note: text.to_owned(),
        author: "ann".to_owned(),
        time: "2026-12-07T01:25:00Z".to_owned(),
    }
}

fn sidecar(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join(NOTES_DIR).join(NOTES_FILE)
}

#[test]
fn the_latest_line_of_a_run_wins_and_an_empty_one_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = sidecar(&dir);
    append(&path, &note("run-a", "flaky", "first look")).unwrap();
    append(&path, &note("run-b", "known", "")).unwrap();
    append(
        &path,
        &note("run-a", "tool-bug", "the search tool times out"),
    )
    .unwrap();
    let notes = Notes::read(&path);
    assert!(notes.problems.is_empty(), "{:?}", notes.problems);
    assert_eq!(notes.lines, 3, "history is kept");
    assert_eq!(notes.of_run("run-a").unwrap().label, "tool-bug");
    assert_eq!(notes.of_run("run-b").unwrap().label, "known");
    append(&path, &note("run-a", "", "")).unwrap();
    let notes = Notes::read(&path);
    assert_eq!(notes.of_run("run-a"), None, "cleared");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes.lines, 4);
}

#[test]
fn the_sidecar_and_its_directory_are_created_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = sidecar(&dir);
    append(&path, &note("run-a", "flaky", "")).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
}

#[test]
fn a_note_is_never_written_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = sidecar(&dir);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let target = dir.path().join("elsewhere.txt");
    std::fs::write(&target, "untouched\n").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let error = append(&path, &note("run-a", "flaky", "")).unwrap_err();
    assert!(matches!(error, NotesError::Link { .. }), "{error}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");

    // A linked notes directory is refused too.
    let other = tempfile::tempdir().unwrap();
    let linked = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(other.path(), linked.path().join(NOTES_DIR)).unwrap();
    let error = append(&sidecar(&linked), &note("run-a", "flaky", "")).unwrap_err();
    assert!(matches!(error, NotesError::Link { .. }), "{error}");
    assert!(!other.path().join(NOTES_FILE).exists());
}

/// What a writer killed mid-append leaves: the earlier notes all count, the cut line is a
/// problem naming its line, and the next note written is whole.
#[test]
fn a_cut_last_line_is_skipped_and_the_next_note_starts_on_a_line_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = sidecar(&dir);
    append(&path, &note("run-a", "flaky", "one")).unwrap();
    append(&path, &note("run-b", "known", "two")).unwrap();
    let whole = serde_json::to_string(&note("run-c", "tool-bug", "three")).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&whole.as_bytes()[..whole.len() / 2])
        .unwrap();
    drop(file);

    let notes = Notes::read(&path);
    assert_eq!(notes.len(), 2);
    assert_eq!(notes.of_run("run-a").unwrap().note, "one");
    assert_eq!(notes.of_run("run-c"), None);
    assert_eq!(notes.problems.len(), 1, "{:?}", notes.problems);
    assert_eq!(notes.problems[0].line, Some(3));
    assert!(notes.problems[0].message.contains("unfinished"));
    assert_eq!(notes.problems[0].source, path.display().to_string());

    append(&path, &note("run-d", "gold-wrong", "four")).unwrap();
    let notes = Notes::read(&path);
    assert_eq!(notes.len(), 3);
    assert_eq!(notes.of_run("run-d").unwrap().note, "four");
    assert_eq!(notes.problems.len(), 1, "{:?}", notes.problems);
    assert_eq!(
        notes.problems[0].line,
        Some(3),
        "the cut line, now mid-file"
    );
}

#[test]
fn writers_at_once_lose_no_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = sidecar(&dir);
    let (threads, each) = (4, 50);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let path = &path;
            scope.spawn(move || {
                for n in 0..each {
                    let text = format!("writer {t} note {n} {}", "x".repeat(300));
                    append(path, &note(&format!("run-{t}-{n}"), "flaky", &text)).unwrap();
                }
            });
        }
    });
    let notes = Notes::read(&path);
    assert!(notes.problems.is_empty(), "{:?}", notes.problems);
    assert_eq!(notes.len(), threads * each);
    assert_eq!(notes.lines, threads * each);
}

#[test]
fn hostile_lines_are_skipped_with_their_line_and_the_rest_still_count() {
    let good = serde_json::to_string(&note("run-a", "flaky", "fine")).unwrap();
    let escape_label = good.replace("\"flaky\"", "\"\\u001b[2J\"");
    let long = format!(
        "{{\"v\":1,\"note\":\"{}\"}}",
        "y".repeat(MAX_LINE_BYTES + 10)
    );
    let other_version = good.replace("\"v\":1", "\"v\":7").replace("run-a", "run-v");
    let bad_time = good.replace("2026-12-07T01:25:00Z", "yesterday");
    let last = serde_json::to_string(&note("run-z", "known", "after")).unwrap();
    let text = [
        good.as_str(),
        "not json",
        &escape_label,
        &long,
        &other_version,
        &bad_time,
        "",
        &last,
    ]
    .join("\n")
        + "\n";
    let notes = Notes::parse(text.as_bytes(), "notes.jsonl");
    let lines: Vec<Option<u64>> = notes.problems.iter().map(|p| p.line).collect();
    assert_eq!(
        lines,
        [Some(2), Some(3), Some(4), Some(5), Some(6)],
        "{:?}",
        notes.problems
    );
    assert!(notes.problems[2].message.contains("bytes"));
    assert_eq!(notes.len(), 2);
    assert_eq!(notes.of_run("run-a").unwrap().note, "fine");
    assert_eq!(notes.of_run("run-z").unwrap().note, "after");
}

#[test]
fn a_note_that_cannot_be_read_back_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = sidecar(&dir);
    for bad in [
        note("run-a", "Tool Bug", ""),
        note("run-a", "flaky", &"z".repeat(MAX_NOTE_CHARS + 1)),
        note(" ", "flaky", ""),
    ] {
        assert!(append(&path, &bad).is_err(), "{bad:?}");
    }
    assert!(!path.exists(), "nothing written");
}

#[test]
fn the_sidecar_is_beside_a_directory_or_a_file_and_nowhere_for_streams() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, "").unwrap();
    let expected = dir.path().join(".toolcap").join("notes.jsonl");
    assert_eq!(sidecar_for(dir.path()), Some(expected.clone()));
    assert_eq!(sidecar_for(&file), Some(expected));
    assert_eq!(
        sidecar_for(Path::new("trace.jsonl")),
        Some(PathBuf::from("./.toolcap/notes.jsonl"))
    );
    assert_eq!(sidecar_for(Path::new("-")), None);
    assert_eq!(sidecar_for(Path::new("http://localhost:4319")), None);
    assert_eq!(sidecar_for(Path::new("/dev/stdin")), None);
}

#[test]
fn the_author_is_toolcap_author_then_user_then_unknown() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(
        author_from(vars(&[("TOOLCAP_AUTHOR", "ann"), ("USER", "bob")])),
        "ann"
    );
    assert_eq!(
        author_from(vars(&[("TOOLCAP_AUTHOR", "  "), ("USER", "bob")])),
        "bob"
    );
    assert_eq!(author_from(vars(&[])), "unknown");
}

#[test]
fn now_is_rfc3339_utc_and_passes_the_check() {
    let now = now_rfc3339();
    assert!(now.ends_with('Z'), "{now}");
    let mut written = note("run-a", "flaky", "");
    written.time = now;
    assert!(written.check().is_ok());
}
