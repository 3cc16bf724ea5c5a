//! `toolcap-tui check` through the real binary: exit codes and error reporting.

use std::path::Path;
use std::process::Command;

fn check(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("check")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("binary runs")
}

const GOLD: &str = "tests/fixtures/corpus/toolscore/v01_custom_exact_with_timing/gold.json";
const TRACE: &str = "tests/fixtures/corpus/toolscore/v01_custom_exact_with_timing/trace.json";

#[test]
fn a_missing_gold_file_is_an_error() {
    let out = check(&["--gold", "tests/fixtures/gold/nope.json", TRACE]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.json"));
}

#[test]
fn bad_options_are_errors() {
    let out = check(&["--gold", GOLD, "--align", "diagonal", TRACE]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--align"));
    let out = check(&["--gold", GOLD, "--weight", "speed=1", TRACE]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown weight"));
}

#[test]
fn no_invocation_with_a_gold_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gold = dir.path().join("other.json");
    std::fs::write(&gold, r#"{"some-other-run": [{"tool": "search"}]}"#).expect("write");
    // Copied away from the gold.json that sits beside it.
    let trace = dir.path().join("trace.json");
    std::fs::copy(TRACE, &trace).expect("copy");
    let paths = [&gold, &trace].map(|p| p.to_str().expect("utf-8 path"));
    let out = check(&["--gold", paths[0], paths[1]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no invocation with a gold"));
}

#[test]
fn a_source_that_loads_nothing_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").expect("write");
    assert!(Path::new(GOLD).is_relative());
    let out = check(&["--gold", GOLD, empty.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nothing loaded from"), "{stderr}");
    assert!(stderr.contains("empty.jsonl"), "{stderr}");
}
