//! One rule for "failing": `dump --json`'s facets, the triage report and the TUI's list and status
//! bar agree on the bundled samples — span errors, evaluator verdicts and gold mismatches alike,
//! with each turn of a whole-conversation gold judged by its own share.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::tmux::{Tmux, dump_samples_json, samples, shell_quote};

/// The arksim turns (unique names) and their facets.
fn turn_facets(doc: &Value) -> BTreeMap<String, Vec<String>> {
    doc["invocations"]
        .as_array()
        .expect("invocations")
        .iter()
        .filter(|i| i["name"].as_str().is_some_and(|n| n.contains(" · turn ")))
        .map(|i| {
            let facets = i["facets"]
                .as_array()
                .expect("facets")
                .iter()
                .map(|f| f.as_str().expect("a facet name").to_owned())
                .collect();
            (i["name"].as_str().expect("name").to_owned(), facets)
        })
        .collect()
}

#[test]
fn dump_names_every_failing_facet_and_judges_each_turn_by_its_share() {
    let doc = dump_samples_json(&[]);
    let facets = turn_facets(&doc);
    let of = |name: &str| facets.get(name).cloned().unwrap_or_default();
    // Judged failed by the evaluator with no span error, and its trajectory differs from the
    // scenario's assertion.
    assert_eq!(
        of("cancel_order · turn 0"),
        ["eval-failed", "gold-mismatch"]
    );
    // A whole-conversation assertion that fails: the turn whose calls differ carries the
    // mismatch, the turn whose calls match does not.
    assert_eq!(of("kb_only · turn 0"), Vec::<String>::new());
    assert!(of("kb_only · turn 1").contains(&"gold-mismatch".to_owned()));
    assert_eq!(of("weather_ok · turn 1"), Vec::<String>::new());
    for invocation in doc["invocations"].as_array().expect("invocations") {
        let listed = !invocation["facets"].as_array().expect("facets").is_empty();
        assert_eq!(invocation["failing"], listed, "{}", invocation["name"]);
    }
}

#[test]
fn the_tui_report_and_dump_count_the_same_failing_runs() {
    let doc = dump_samples_json(&[]);
    let invocations = doc["invocations"].as_array().expect("invocations");
    let failing = invocations.iter().filter(|i| i["failing"] == true).count();
    let total = invocations.len();

    // The headless report says how many of the listed runs fail.
    let dir = tempfile::tempdir().expect("temp dir");
    let markdown = dir.path().join("report.md");
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("report")
        .arg("--out")
        .arg(&markdown)
        .arg(samples())
        .output()
        .expect("report runs");
    assert_eq!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("{failing} failing of {total} listed")),
        "{said}"
    );

    // The TUI's status bar, and the glyphs of the arksim turns in its list.
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml XDG_STATE_HOME={} {} {}",
        shell_quote(&dir.path().display().to_string()),
        shell_quote(env!("CARGO_BIN_EXE_toolcap-tui")),
        shell_quote(&samples().display().to_string()),
    );
    let tmux = Tmux::start(&command);
    let screen = tmux.wait_for("every run loaded and judged", |s| {
        s.contains(&format!("{failing} of {total} runs failing"))
    });
    let facets = turn_facets(&doc);
    for line in screen.lines() {
        let Some((name, expected)) = facets.iter().find(|(name, _)| line.contains(name.as_str()))
        else {
            continue;
        };
        let glyphs: String = line
            .chars()
            .skip_while(|c| !matches!(c, '✓' | '✗' | '◐' | '⚑' | '≠'))
            .take_while(|c| matches!(c, '✓' | '✗' | '◐' | '⚑' | '≠'))
            .collect();
        let shown_gold = glyphs.contains('≠');
        let shown_eval = glyphs.contains('⚑');
        assert_eq!(
            (shown_gold, shown_eval),
            (
                expected.contains(&"gold-mismatch".to_owned()),
                expected.contains(&"eval-failed".to_owned())
            ),
            "{name}: list shows {glyphs:?}, dump says {expected:?}\n{screen}"
        );
    }
    tmux.send(&["q"]);
}
