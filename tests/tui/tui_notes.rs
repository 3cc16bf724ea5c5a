//! Triage notes in the TUI (issue 43): a note written headless is found by `label:` in the list
//! and shown in the list and the detail; the `a` prompt writes through the same writer; notes
//! another process writes appear once the file changed; and a planted secret or e-mail address
//! in a note is masked in every output while redacted.

use std::path::{Path, PathBuf};
use std::process::Command;

use insta::assert_snapshot;
use toolcap::notes::{NOTES_DIR, NOTES_FILE, Note, Notes};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::overlays::help::help_lines;

use super::support::{app_over_source, draw, press, sample_app, screen_text};

/// Two Inspect epochs runs of five samples × three epochs, copied so notes can be written
/// beside them.
fn epochs_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inspect-ai/epochs/A");
    let copy = dir.path().join("A");
    copy_files(&source, &copy);
    (dir, copy)
}

/// A new directory `to` holding copies of the files in `from` (not of its notes directory).
fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// `annotate SOURCE --id ID --index INDEX --label LABEL [--note NOTE]`, which must succeed.
fn annotate(source: &Path, id: &str, index: u64, label: &str, note: Option<&str>) {
    let (source, index) = (source.to_str().unwrap(), index.to_string());
    let mut args = vec![
        "annotate", source, "--id", id, "--index", &index, "--label", label,
    ];
    if let Some(note) = note {
        args.extend(["--note", note]);
    }
    let written = binary(&args);
    assert_eq!(written.status.code(), Some(0), "{written:?}");
}

fn binary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .env("TOOLCAP_AUTHOR", "ann")
        // The user's own config file (labels) must not decide what the test sees.
        .env(config::CONFIG_ENV, "/nonexistent/toolcap-test-config.toml")
        .output()
        .unwrap()
}

fn app_over(source: &Path, width: u16, height: u16) -> App {
    let mut app = app_over_source(source, width, height);
    app::notes::use_notes_file(&mut app, sidecar(source));
    app
}

fn sidecar(source: &Path) -> PathBuf {
    source.join(NOTES_DIR).join(NOTES_FILE)
}

#[test]
fn a_note_written_headless_is_found_by_label_in_the_list_and_shown_in_the_detail() {
    let (_dir, source) = epochs_copy();
    annotate(
        &source,
        "cap-04",
        2,
        "tool-bug",
        Some("lookup tool returns Bonn"),
    );

    let mut app = app_over(&source, 120, 30);
    assert_eq!(app.store.len(), 15);
    press(&mut app, "/label:tool-bug<enter>");
    assert_eq!(app.list.len(), 1, "{}", screen_text(&app));
    let listed = app.list.id(0).unwrap().to_string();
    let noted = app.store.get(listed.as_str()).unwrap();
    assert_eq!(
        noted.case().map(|c| (c.id.as_str(), c.index)),
        Some(("cap-04", 2))
    );
    let screen = screen_text(&app);
    assert!(screen.contains("✎ "), "{screen}");
    assert!(screen.contains("[tool-bug]"), "{screen}");
    assert!(screen.contains("── note [tool-bug] ──"), "{screen}");
    assert!(screen.contains("lookup tool returns Bonn"), "{screen}");
    // The note's time is when the test ran: the same width of text stands for it.
    let time = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    assert_snapshot!(
        "notes_found_by_label_120x30",
        time.replace_all(&screen, "<time of the note>  ")
    );

    press(&mut app, "<esc>/is:unnoted<enter>");
    assert_eq!(app.list.len(), 14);
}

#[test]
fn a_note_written_headless_is_found_by_dump_filter_and_listed_in_the_report() {
    let (dir, source) = epochs_copy();
    let src = source.to_str().unwrap();
    annotate(&source, "cap-02", 2, "model-error", Some("answers Sydney"));
    let dumped = binary(&["dump", "--json", "--filter", "label:model-error", src]);
    let doc: serde_json::Value = serde_json::from_slice(&dumped.stdout).unwrap();
    let listed = doc["invocations"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{doc:#}");
    assert_eq!(listed[0]["case"]["id"], "cap-02");
    assert_eq!(listed[0]["case"]["index"], 2);
    assert_eq!(listed[0]["note"]["label"], "model-error");
    assert_eq!(listed[0]["note"]["note"], "answers Sydney");
    assert_eq!(listed[0]["note"]["author"], "ann");
    let text = binary(&["dump", "--filter", "label:model-error", src]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("  note: [model-error] answers Sydney — ann, "),
        "{text}"
    );
    let out = dir.path().join("triage.md");
    let report = binary(&["report", "--out", out.to_str().unwrap(), src]);
    assert_eq!(report.status.code(), Some(0), "{report:?}");
    let markdown = std::fs::read_to_string(&out).unwrap();
    assert!(markdown.contains("## Triage notes (1)"), "{markdown}");
    let id = listed[0]["id"].as_str().unwrap();
    assert!(
        markdown.contains(&format!(
            "`{id}`: **model-error** `answers Sydney` (`ann`, "
        )),
        "{markdown}"
    );
    // The run fails, so its section carries the note too.
    assert!(
        markdown.contains("- note: **model-error** `answers Sydney`"),
        "{markdown}"
    );
    // An unknown id and an ambiguous case are refused, naming what would do.
    let unknown = binary(&["annotate", src, "--id", "nope", "--label", "known"]);
    assert_eq!(unknown.status.code(), Some(2));
    let ambiguous = binary(&["annotate", src, "--id", "cap-02", "--label", "known"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    let said = String::from_utf8_lossy(&ambiguous.stderr);
    assert!(
        said.contains("--index N") && said.contains("task capital_epochs index 3 (run "),
        "{said}"
    );
    let outside = binary(&["annotate", src, "--id", id, "--label", "wontfix"]);
    assert_eq!(outside.status.code(), Some(2));
    let said = String::from_utf8_lossy(&outside.stderr);
    assert!(
        said.contains("tool-bug, model-error, gold-wrong, flaky, known"),
        "{said}"
    );
    assert_eq!(
        Notes::read(&sidecar(&source)).lines,
        1,
        "refusals write nothing"
    );
}

#[test]
fn the_note_prompt_writes_through_the_notes_writer_and_esc_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(NOTES_DIR).join(NOTES_FILE);
    let mut app = sample_app(100, 30);
    app::notes::use_notes_file(&mut app, path.clone());
    let run = app.selected_invocation.clone().expect("a run is selected");

    press(&mut app, "a");
    assert_snapshot!("notes_prompt_open_100x30", draw(&app).backend());
    // Tab moves to the second label, a digit picks the third before any text is typed.
    press(&mut app, "<tab>3retries exhausted 2x<enter>");
    let notes = Notes::read(&path);
    assert!(notes.problems.is_empty(), "{:?}", notes.problems);
    let note = notes.of_run(&run).expect("saved");
    assert_eq!(note.label, "gold-wrong");
    assert_eq!(
        note.note, "retries exhausted 2x",
        "digits after text are text"
    );
    assert!(app.overlay.is_none(), "Enter closes the prompt");
    assert!(screen_text(&app).contains('✎'));

    // Esc leaves without writing; the prompt opens on the note as saved.
    press(&mut app, "a");
    let screen = screen_text(&app);
    assert!(screen.contains("retries exhausted 2x▏"), "{screen}");
    press(&mut app, "<esc>");
    assert_eq!(Notes::read(&path).lines, 1);

    // No label and no text clears it; the history stays in the file.
    press(&mut app, "a<s-tab><s-tab><s-tab>");
    for _ in 0.."retries exhausted 2x".len() {
        app::update(&mut app, Action::SearchBackspace);
    }
    press(&mut app, "<enter>");
    let notes = Notes::read(&path);
    assert_eq!(notes.lines, 2);
    assert_eq!(notes.of_run(&run), None);
    assert!(!screen_text(&app).contains('✎'));
}

#[test]
fn a_note_another_process_writes_shows_once_the_file_changed() {
    let (_dir, source) = epochs_copy();
    let mut app = app_over(&source, 120, 30);
    press(&mut app, "/is:noted<enter>");
    assert_eq!(app.list.len(), 0);
    assert!(!app::notes::reload_if_changed(&mut app), "nothing changed");

    annotate(&source, "cap-02", 1, "flaky", None);
    assert!(app::notes::reload_if_changed(&mut app));
    assert_eq!(app.list.len(), 1, "the filter is evaluated again");
    assert!(!app::notes::reload_if_changed(&mut app), "read once");
}

#[test]
fn without_a_notes_file_a_says_how_to_get_one() {
    let mut app = sample_app(100, 30);
    press(&mut app, "a");
    assert!(app.overlay.is_none());
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .contains("--notes FILE")
    );
}

#[test]
fn the_help_lists_the_note_key_and_queries() {
    let app = sample_app(100, 30);
    let text: String = help_lines(&app)
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect();
    assert!(text.contains("triage note on the selected run"), "{text}");
    assert!(text.contains("Note prompt"), "{text}");
    assert!(text.contains("save the note"), "{text}");
    assert!(text.contains("label:NAME"), "{text}");
    assert!(text.contains("noted unnoted"), "{text}");
}

/// What must never be printed while redacted: a credential (masked even when revealed) and an
/// e-mail address (personal data, shown only when revealed).
const PLANTED_SECRET: &str = "sk-proj-Q7vX2mLp9RtY4wZ8nB3kJ6hF1dS5aG0c";
const PLANTED_EMAIL: &str = "triager.planted@example.com";

#[test]
fn a_secret_and_an_email_in_a_note_are_masked_in_every_output_while_redacted() {
    let (dir, source) = epochs_copy();
    let text = format!("ask {PLANTED_EMAIL}; key {PLANTED_SECRET}");
    let src = source.to_str().unwrap();
    for (index, label) in [(2, "known"), (3, "flaky")] {
        annotate(&source, "cap-04", index, label, Some(&text));
    }
    // B: the same runs again, so cap-04 still fails there and compare carries A's notes.
    let b = dir.path().join("B");
    copy_files(&source, &b);
    let report_md = dir.path().join("report.md");
    let outputs: Vec<(&str, Vec<&str>)> = vec![
        ("dump", vec!["dump", src]),
        ("dump --json", vec!["dump", "--json", src]),
        (
            "dump --filter",
            vec!["dump", "--filter", "label:known", src],
        ),
        (
            "report",
            vec!["report", "--out", report_md.to_str().unwrap(), src],
        ),
        (
            "compare --json",
            vec!["compare", "--json", src, b.to_str().unwrap()],
        ),
        (
            "compare --md",
            vec!["compare", "--md", src, b.to_str().unwrap()],
        ),
        (
            "compare --text",
            vec!["compare", "--text", src, b.to_str().unwrap()],
        ),
    ];
    for (what, args) in &outputs {
        let output = binary(args);
        assert!(
            output.status.code().is_some_and(|c| c < 2),
            "{what}: {output:?}"
        );
        let mut printed = String::from_utf8_lossy(&output.stdout).into_owned();
        if *what == "report" {
            printed = std::fs::read_to_string(&report_md).unwrap()
                + &std::fs::read_to_string(report_md.with_extension("json")).unwrap();
        }
        assert!(
            printed.contains("known"),
            "{what}: the note is there\n{printed}"
        );
        for planted in [PLANTED_SECRET, PLANTED_EMAIL] {
            assert!(
                !printed.contains(planted),
                "{what} printed {planted}\n{printed}"
            );
        }
        assert!(
            printed.contains("ask "),
            "{what}: the rest of the text is kept"
        );
    }
    // Revealed, the address shows and the credential stays masked.
    let revealed = binary(&["dump", "--reveal", src]);
    let printed = String::from_utf8_lossy(&revealed.stdout);
    assert!(printed.contains(PLANTED_EMAIL), "{printed}");
    assert!(!printed.contains(PLANTED_SECRET), "{printed}");

    // The TUI: the list, the detail and the prompt, until `r`.
    let mut app = app_over(&source, 140, 40);
    press(&mut app, "/label:known<enter>");
    assert_eq!(app.list.len(), 1);
    let mut screens = screen_text(&app);
    press(&mut app, "a");
    screens.push_str(&screen_text(&app));
    press(&mut app, "<esc>");
    assert!(screens.contains("ask "), "{screens}");
    for planted in [PLANTED_SECRET, PLANTED_EMAIL] {
        assert!(
            !screens.contains(planted),
            "the TUI showed {planted}\n{screens}"
        );
    }
    press(&mut app, "r");
    let screen = screen_text(&app);
    assert!(screen.contains(PLANTED_EMAIL), "{screen}");
    assert!(!screen.contains(PLANTED_SECRET), "{screen}");
}

/// A note file planted with terminal escapes and an oversized line: nothing raw reaches the
/// screen, and the good notes around them still count.
#[test]
fn a_hostile_notes_file_shows_nothing_raw_and_keeps_its_good_notes() {
    let (_dir, source) = epochs_copy();
    let path = sidecar(&source);
    let store_runs = binary(&["dump", "--json", source.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&store_runs.stdout).unwrap();
    let run = doc["invocations"][0]["id"].as_str().unwrap().to_owned();
    let mut good = Note::new(&run, None, "known", "fine \u{1b}[2J\u{9b}31m text");
    good.author = "\u{1b}]52;c;aGk=\u{7}mallory".into();
    toolcap::notes::append(&path, &good).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    use std::io::Write as _;
    writeln!(
        file,
        "{{\"v\":1,\"run\":\"{run}\",\"label\":\"\\u001b[31m\"}}"
    )
    .unwrap();
    file.write_all(&vec![b'x'; toolcap::notes::MAX_LINE_BYTES + 5])
        .unwrap();
    file.write_all(b"\n").unwrap();
    drop(file);

    let mut app = app_over(&source, 140, 40);
    assert_eq!(app.store.notes().len(), 1);
    assert_eq!(
        app.store
            .problems()
            .iter()
            .filter(|p| p.source == path.display().to_string())
            .count(),
        2,
        "{:?}",
        app.store.problems()
    );
    press(&mut app, "/is:noted<enter>");
    let symbols = super::support::all_symbols(&app);
    assert!(!symbols.chars().any(|c| c.is_control()), "{symbols:?}");
    assert!(screen_text(&app).contains("fine ␛[2J"));
}

/// Where the killed writer's child process appends (set only for that child).
const CHILD_FILE_ENV: &str = "TOOLCAP_TEST_NOTES_CHILD_FILE";
/// What the child prints once half its line is on disk.
const HALF_WRITTEN: &str = "<<half of the note is written>>";

/// A real writer killed mid-append: the earlier notes all count, the cut line is one problem
/// with its line, and the next note written is whole. The child is this test binary running
/// [`killed_writer_child`]; it says on a pipe when half its line is written, then waits on its
/// standard input until the parent kills it.
#[test]
fn a_writer_killed_mid_append_loses_no_earlier_note() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(NOTES_DIR).join(NOTES_FILE);
    for n in 0..3 {
        let note = Note::new(&format!("run-{n}"), None, "known", &format!("note {n}"));
        toolcap::notes::append(&path, &note).unwrap();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tui_notes::killed_writer_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_FILE_ENV, &path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(HALF_WRITTEN) {
        let n = stdout.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the child ended first: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed, not finished");

    let notes = Notes::read(&path);
    assert_eq!(notes.len(), 3, "{:?}", notes.problems);
    for n in 0..3 {
        assert_eq!(
            notes.of_run(&format!("run-{n}")).unwrap().note,
            format!("note {n}")
        );
    }
    assert_eq!(notes.of_run("run-killed"), None);
    assert_eq!(notes.problems.len(), 1, "{:?}", notes.problems);
    assert_eq!(notes.problems[0].line, Some(4));
    let raw = std::fs::read(&path).unwrap();
    assert_ne!(raw.last(), Some(&b'\n'), "the file ends cut short");

    let after = Note::new("run-after", None, "flaky", "after the kill");
    toolcap::notes::append(&path, &after).unwrap();
    let notes = Notes::read(&path);
    assert_eq!(notes.len(), 4);
    assert_eq!(notes.of_run("run-after").unwrap().note, "after the kill");
    assert_eq!(notes.problems.len(), 1, "still only the cut line");
}

/// The child of [`a_writer_killed_mid_append_loses_no_earlier_note`]: run only by it.
#[test]
#[ignore = "the killed writer: run by a_writer_killed_mid_append_loses_no_earlier_note"]
fn killed_writer_child() {
    use std::io::{Read as _, Write as _};
    let path = PathBuf::from(std::env::var_os(CHILD_FILE_ENV).expect("run as the child"));
    let note = Note::new("run-killed", None, "tool-bug", &"a long note ".repeat(200));
    let _ = toolcap::notes::append_pausing_midway(&path, &note, || {
        let mut out = std::io::stdout();
        out.write_all(HALF_WRITTEN.as_bytes()).unwrap();
        out.flush().unwrap();
        // Waits for the kill: the parent never writes, and never closes this pipe first.
        let _ = std::io::stdin().read(&mut [0u8; 1]);
    });
}

#[test]
fn compare_carries_the_notes_of_cases_still_failing() {
    let (dir, a) = epochs_copy();
    let b = dir.path().join("B");
    copy_files(&a, &b);
    annotate(&a, "cap-04", 1, "known", Some("Bonn in the gold"));
    annotate(&a, "cap-04", 3, "known", Some("Bonn again"));
    annotate(&b, "cap-04", 3, "gold-wrong", Some("fix the gold"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let json = binary(&["compare", "--json", a, b]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let still: Vec<&serde_json::Value> = doc["still_failing"].as_array().unwrap().iter().collect();
    let entry = |index: u64| {
        still
            .iter()
            .find(|e| e["case"]["id"] == "cap-04" && e["case"]["index"] == index)
            .copied()
            .unwrap_or_else(|| panic!("cap-04 #{index} still fails: {doc:#}"))
    };
    let first = entry(1);
    assert_eq!(first["a"]["note"]["note"], "Bonn in the gold");
    assert_eq!(first["b"]["note"]["note"], "Bonn in the gold");
    assert_eq!(first["b"]["note"]["carried"], true);
    assert!(first["a"]["note"].get("carried").is_none());
    let third = entry(3);
    assert_eq!(third["a"]["note"]["label"], "known");
    assert_eq!(
        third["b"]["note"]["label"], "gold-wrong",
        "B's own note wins"
    );
    assert!(third["b"]["note"].get("carried").is_none());

    let md = binary(&["compare", "--md", a, b]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("## Triage notes of cases still failing"),
        "{md}"
    );
    assert!(
        md.contains("| `cap-04` | 1 | known | `Bonn in the gold (from A)` | `ann` |"),
        "{md}"
    );
    assert!(
        md.contains("| `cap-04` | 3 | gold-wrong | `fix the gold` | `ann` |"),
        "{md}"
    );
}

/// The compare view shows each side's note under its verdict, and on a case still failing in B
/// whose B run has none, that A's note holds.
#[test]
fn the_compare_view_shows_each_side_s_note_and_a_carried_one() {
    use toolcap::tui::compare::{CompareState, update};
    use toolcap::views::compare::{KeyRule, compare};
    let (dir, a) = epochs_copy();
    let b = dir.path().join("B");
    copy_files(&a, &b);
    annotate(&a, "cap-04", 1, "known", Some("Bonn in the gold"));
    let load = |source: &Path| -> &'static Store {
        let (mut store, _) = toolcap::sources::load::load_store(&[source.to_path_buf()]);
        if let Some(sidecar) = toolcap::notes::sidecar_for(source) {
            store.set_notes(Notes::read(&sidecar));
        }
        Box::leak(Box::new(store))
    };
    let stores = [load(&a), load(&b)];
    let comparison = compare(stores[0], stores[1], &KeyRule::Case, Reveal::Revealed);
    let mut state = CompareState::new(
        comparison,
        stores,
        ["runs/A".into(), "runs/B".into()],
        KeyRule::Case,
        Reveal::Revealed,
        config::from_toml("", true),
    );
    update(
        &mut state,
        toolcap::tui::compare::keys::Action::Resize {
            width: 200,
            height: 60,
        },
    );
    crate::compare_view::select_case(&mut state, "cap-04", 1);
    let screen = crate::compare_view::screen(&state);
    assert!(screen.contains("── note [known] ──"), "{screen}");
    assert!(screen.contains("Bonn in the gold"), "{screen}");
    assert!(
        screen.contains("[known] A's note holds (still failing)"),
        "{screen}"
    );
}
