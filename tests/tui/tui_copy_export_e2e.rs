//! `y` and `x` end to end, in the real binary inside tmux: the OSC 52 sequence the binary writes
//! reaches tmux's clipboard (`set-clipboard on`, read back with `show-buffer`) carrying exactly
//! what the screen shows — a payload's shape while redacted, its value only once revealed — and
//! `x` writes a report whose JSON is `dump --json` of the same runs, redacted even while the
//! screen is revealed; `X` writes the revealed one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::tmux::{Tmux, WAIT, dump_samples_json, samples, shell_quote};

/// The failing `get_weather` call's argument in the bundled arksim run.
const HIDDEN_ARGUMENT: &str = "Atlantis";

/// Starts the binary on the samples with `dir` as its working directory (where `x` writes).
fn start(dir: &Path) -> Tmux {
    let command = format!(
        "cd {} && env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml XDG_STATE_HOME={} {} {}",
        shell_quote(&dir.display().to_string()),
        shell_quote(&dir.display().to_string()),
        shell_quote(env!("CARGO_BIN_EXE_toolcap-tui")),
        shell_quote(&samples().display().to_string()),
    );
    let tmux = Tmux::start(&command);
    assert!(
        tmux.run(&["set-option", "-s", "set-clipboard", "on"])
            .status
            .success()
    );
    tmux
}

/// Presses `y` and waits until tmux's newest buffer holds a new copy; returns it.
fn copy(tmux: &Tmux, previous: &str) -> String {
    tmux.send(&["y"]);
    let deadline = Instant::now() + WAIT;
    loop {
        let out = tmux.run(&["show-buffer"]);
        let buffer = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && !buffer.is_empty() && buffer != previous {
            return buffer;
        }
        assert!(
            Instant::now() < deadline,
            "no OSC 52 copy reached tmux; screen:\n{}",
            tmux.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The report files (`toolcap-report-…`) in `dir`, by name.
fn reports(dir: &Path) -> Vec<PathBuf> {
    let mut written: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the working directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("toolcap-report-"))
        })
        .collect();
    written.sort();
    written
}

fn by_id(doc: &Value) -> BTreeMap<String, Value> {
    doc["invocations"]
        .as_array()
        .expect("invocations")
        .iter()
        .map(|i| (i["id"].as_str().expect("id").to_owned(), i.clone()))
        .collect()
}

#[test]
fn y_reaches_the_terminal_clipboard_as_shown_and_x_writes_dump_json_beside_the_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tmux = start(dir.path());
    tmux.wait_for("the sample runs", |s| {
        s.contains("REDACTED") && s.contains("Invocations (35)")
    });

    // In the list, `y` copies the selected run's trace id: one of the ids dump knows.
    let trace_id = copy(&tmux, "");
    let ids = by_id(&dump_samples_json(&[]));
    assert!(ids.contains_key(&trace_id), "copied {trace_id:?}");

    // Onto the failing call, as a user would: filter, into the tree, the queue twice.
    tmux.send(&["-l", "/kb_only"]);
    tmux.send(&["Enter", "Tab", "n"]);
    tmux.wait_for("the verdict", |s| s.contains("── verdict"));
    tmux.send(&["n"]);
    tmux.wait_for("the failing call", |s| {
        s.lines()
            .any(|l| l.contains('›') && l.contains("get_weather") && l.contains('✗'))
    });

    // In the tree, the span as JSON, redacted: its id, never the argument.
    let span = copy(&tmux, &trace_id);
    let span_doc: Value = serde_json::from_str(&span).expect("the span copies as JSON");
    assert_eq!(span_doc["name"], "get_weather", "{span}");
    assert!(!span.contains(HIDDEN_ARGUMENT), "{span}");

    // In the detail, the payload (the call's output, captured): its shape while redacted, the
    // text `dump --reveal` shows once revealed.
    let revealed_doc = dump_samples_json(&["--reveal", "--filter", "kb_only"]);
    let failed_call = revealed_doc["invocations"]
        .as_array()
        .expect("invocations")
        .iter()
        .flat_map(|i| i["spans"].as_array().expect("spans").iter())
        .find(|s| s["name"] == "get_weather" && s["status"] == "error")
        .expect("the failed call in dump");
    let output = failed_call["output"]["value"]
        .as_str()
        .expect("a text output")
        .to_owned();
    tmux.send(&["Tab"]);
    let shape = copy(&tmux, &span);
    assert!(shape.contains("chars"), "a shape, not the text: {shape}");
    assert_ne!(shape, output);
    tmux.send(&["r"]);
    tmux.wait_for("revealed", |s| s.contains("REVEALED"));
    let value = copy(&tmux, &shape);
    assert_eq!(value, output);
    // Back in the tree, revealed, the span JSON carries the argument.
    tmux.send(&["BTab"]);
    let revealed_span = copy(&tmux, &value);
    assert!(revealed_span.contains(HIDDEN_ARGUMENT), "{revealed_span}");

    // `x` while revealed, with the filter kept: a redacted report whose JSON is
    // `dump --json --filter kb_only`.
    tmux.send(&["x"]);
    tmux.wait_for("the report message", |s| s.contains("report: "));
    let redacted = reports(dir.path());
    assert_eq!(redacted.len(), 2, "{redacted:?}");
    let json_path = redacted
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap_or_else(|| panic!("no report JSON among {redacted:?}"));
    let markdown_path = json_path.with_extension("md");
    let report: Value =
        serde_json::from_slice(&std::fs::read(json_path).expect("readable")).expect("JSON");
    let expected = dump_samples_json(&["--filter", "kb_only"]);
    assert_eq!(by_id(&report), by_id(&expected));
    assert_eq!(report["invocations"].as_array().map(Vec::len), Some(2));
    let markdown = std::fs::read_to_string(markdown_path).expect("the Markdown beside it");
    for text in [&markdown, &report.to_string()] {
        assert!(
            !text.contains(HIDDEN_ARGUMENT),
            "revealed on screen, `x` still writes a redacted report"
        );
    }
    // `X` is the explicit ask: a revealed report beside it, and the status bar says so.
    tmux.send(&["X"]);
    tmux.wait_for("the revealed report message", |s| {
        s.contains("REVEALED report")
    });
    let revealed: Vec<PathBuf> = reports(dir.path())
        .into_iter()
        .filter(|p| !redacted.contains(p))
        .collect();
    let revealed_json = revealed
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap_or_else(|| panic!("no revealed JSON among {revealed:?}"));
    let revealed_report = std::fs::read_to_string(revealed_json).expect("readable");
    assert!(
        revealed_report.contains(HIDDEN_ARGUMENT),
        "{revealed_report}"
    );
    tmux.send(&["q"]);
}
