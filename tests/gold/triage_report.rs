//! `toolcap-tui report` (issue 9 item 7): the JSON beside the Markdown is exactly
//! `dump --json` for the same filter, the Markdown details each failing invocation, and a
//! secret planted in a payload never appears in a redacted report.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn run(args: &[&str], sources: &[PathBuf]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .args(sources)
        .output()
        .expect("run the binary")
}

#[test]
fn the_report_json_is_dump_json_for_the_same_filter_and_the_markdown_names_each_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("triage.md");
    let sources = [
        fixture("tests/fixtures/corpus/arksim/run-direct"),
        fixture("tests/fixtures/arksim-two-turn"),
    ];
    for filter in ["is:failing", "is:eval-failed"] {
        let written = run(
            &["report", "--filter", filter, "--out", out.to_str().unwrap()],
            &sources,
        );
        assert_eq!(written.status.code(), Some(0), "{written:?}");
        let dumped = run(&["dump", "--json", "--filter", filter], &sources);
        let dump: Value = serde_json::from_slice(&dumped.stdout).expect("dump json");
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("triage.json")).unwrap())
                .expect("report json");
        assert_eq!(report, dump, "{filter}");
        let markdown = std::fs::read_to_string(&out).unwrap();
        let ids: Vec<&str> = dump["invocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert!(!ids.is_empty(), "{filter}");
        for id in &ids {
            assert!(
                markdown.contains(&format!("`{id}`")),
                "{filter}: {id}\n{markdown}"
            );
        }
        assert!(markdown.contains(&format!("{} failing of {} listed", ids.len(), ids.len())));
    }
    let markdown = std::fs::read_to_string(&out).unwrap();
    // The evaluator's reason verbatim, the failed span with its error and source line.
    assert!(markdown.contains("[Trajectory] Unexpected extra tool calls: get_weather."));
    assert!(
        markdown.contains("Error running tool (non-fatal)"),
        "{markdown}"
    );
    assert!(markdown.contains("agent_spans.jsonl:"), "{markdown}");
}

#[test]
fn a_planted_secret_never_reaches_a_redacted_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("all.md");
    let written = run(
        &["report", "--out", out.to_str().unwrap()],
        &[fixture("tests/fixtures/arksim-two-turn")],
    );
    assert_eq!(written.status.code(), Some(0), "{written:?}");
    let markdown = std::fs::read_to_string(&out).unwrap();
    let json = std::fs::read_to_string(dir.path().join("all.json")).unwrap();
    assert!(json.contains("lookup_order"), "the run is in the report");
    for planted in ["sk-PLANTEDSECRETabcdef0123456789", "PLANTED-PII-7731"] {
        assert!(!markdown.contains(planted), "{planted} in markdown");
        assert!(!json.contains(planted), "{planted} in json");
    }
    // Revealed on request, the secret-looking key stays masked.
    let revealed = run(
        &["report", "--reveal", "--out", out.to_str().unwrap()],
        &[fixture("tests/fixtures/arksim-two-turn")],
    );
    assert_eq!(revealed.status.code(), Some(0));
    let json = std::fs::read_to_string(dir.path().join("all.json")).unwrap();
    assert!(
        json.contains("PLANTED-PII-7731"),
        "revealed shows the payload"
    );
    assert!(
        !json.contains("sk-PLANTEDSECRETabcdef0123456789"),
        "secrets stay masked"
    );
}
