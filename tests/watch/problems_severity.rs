//! One severity model for problems: `error` (a trace format failed), `warning` (data lost or
//! guessed), `note` (a file skipped because it is not a trace). A run directory with a log, a
//! YAML config and a README next to its traces opens with zero errors, in `dump` and in the
//! directory watcher the TUI uses; a file that looks like a trace and fails stays an error.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use toolcap::model::{Origin, Severity};
use toolcap::sources::watch::{WatchOptions, spawn_watcher_with};

use crate::support::{Recorder, wait_for};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/corpus/toolscore/v01_custom_exact_with_timing/trace.json"
);

/// A run directory: one trace, and the files a run leaves next to it.
fn run_dir(root: &Path) {
    std::fs::copy(TRACE, root.join("trace.json")).expect("copy trace");
    std::fs::write(
        root.join("run.log"),
        "2026-12-01 08:00:01 INFO agent started\n2026-12-01 08:00:02 WARN retrying\n",
    )
    .expect("log");
    std::fs::write(
        root.join("config.yaml"),
        "model: gpt-4o\ntemperature: 0.2\n",
    )
    .expect("yaml");
    std::fs::write(root.join("README"), "# Run 42\nNotes about this run.\n").expect("readme");
    std::fs::write(
        root.join("settings.json"),
        r#"{"theme": "dark", "retries": 3}"#,
    )
    .expect("settings");
}

fn dump(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("dump")
        .args(args)
        .arg(dir)
        .output()
        .expect("binary runs")
}

fn severities(doc: &Value, severity: &str) -> Vec<String> {
    doc["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["severity"] == severity)
        .map(|p| format!("{} {}", p["source"], p["message"]))
        .collect()
}

#[test]
fn a_run_directory_with_logs_configs_and_readmes_has_no_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_dir(dir.path());
    let output = dump(&["--json"], dir.path());
    assert_eq!(output.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(doc["invocations"].as_array().map(Vec::len), Some(1));
    assert!(severities(&doc, "error").is_empty(), "{doc:#}");
    assert!(severities(&doc, "warning").is_empty(), "{doc:#}");
    let notes = severities(&doc, "note");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("run.log") && n.contains("skipped: not a trace")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("README") && n.contains("skipped: not a trace")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("settings.json")),
        "JSON with no trace shape is skipped too: {notes:?}"
    );
    // Skipped by its extension alone (never read), yet listed like the others.
    assert!(
        notes
            .iter()
            .any(|n| n.contains("config.yaml") && n.contains("skipped: not a trace (.yaml file)")),
        "{notes:?}"
    );
    // The text output counts no problems and lists the notes apart.
    let text = String::from_utf8_lossy(&dump(&[], dir.path()).stdout).into_owned();
    assert!(!text.contains("problems ("), "{text}");
    assert!(text.contains("notes (4):"), "{text}");
}

#[test]
fn a_file_that_looks_like_a_trace_and_fails_stays_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_dir(dir.path());
    std::fs::write(
        dir.path().join("cut.json"),
        r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "#,
    )
    .expect("cut");
    let output = dump(&["--json"], dir.path());
    let doc: Value = serde_json::from_slice(&output.stdout).expect("json");
    let errors = severities(&doc, "error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    // OTLP/JSON claims it by its first key, then fails to parse it: its error, not a note.
    assert!(errors[0].contains("cut.json"), "{errors:?}");
    assert!(errors[0].contains("EOF while parsing"), "{errors:?}");
}

#[test]
fn dump_explain_shows_every_severity() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_dir(dir.path());
    std::fs::write(dir.path().join("cut.json"), "[{\"tool\": ").expect("cut");
    std::fs::write(
        dir.path().join("partial.json"),
        r#"{"calls": [{"tool": "a", "args": {}}, {"args": {"x": 1}}]}"#,
    )
    .expect("partial");
    let text = String::from_utf8_lossy(&dump(&["--explain"], dir.path()).stdout).into_owned();
    assert!(
        text.contains("    error: looks like JSON but does not parse"),
        "{text}"
    );
    assert!(
        text.contains("    warning: call 2 has no tool name; skipped"),
        "{text}"
    );
    assert!(
        text.contains("    note: skipped: not a trace (text, not JSON)"),
        "{text}"
    );
    assert!(
        text.contains("    note: skipped: not a trace (.yaml file)"),
        "{text}"
    );
}

#[test]
fn unrecognised_content_is_classified_by_what_it_looks_like() {
    let origin = Origin::endpoint("test");
    let cases: [(&[u8], Option<&str>, Severity); 8] = [
        (b"", None, Severity::Note),
        (b"  \n", Some("json"), Severity::Note),
        (b"2026-12-01 INFO started\n", Some("log"), Severity::Note),
        (b"key: value\n", Some("yaml"), Severity::Note),
        (b"\x00\x01\x02binary", None, Severity::Note),
        (
            br#"{"name": "x", "version": 2}"#,
            Some("json"),
            Severity::Note,
        ),
        (b"{\"resourceSpans\": [", Some("json"), Severity::Error),
        (b"\x0a\x02garbage", Some("pb"), Severity::Error),
    ];
    for (bytes, extension, severity) in cases {
        let problem = toolcap::formats::unrecognised(&origin, bytes, extension);
        assert_eq!(problem.severity, severity, "{bytes:?}: {problem}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watcher_opens_a_run_directory_with_zero_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    run_dir(&root);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let options = WatchOptions {
        debounce: Duration::from_millis(50),
        quiet: Duration::from_secs(60),
        ..WatchOptions::default()
    };
    let _watch = spawn_watcher_with(vec![root.clone()], tx, options).expect("watch");
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the trace and three notes", |r| {
        r.total_spans() > 0
            && r.problems
                .iter()
                .filter(|p| p.severity == Severity::Note)
                .count()
                >= 3
    })
    .await;
    let counted: Vec<_> = rec.problems.iter().filter(|p| p.is_counted()).collect();
    assert!(counted.is_empty(), "{counted:?}");
}
