//! `check` keeps the redaction promise (issue 38 item 1) and says when a source is missing
//! (item 17), through the real binary.
//!
//! The planted fixture (`tests/fixtures/hostile/check-planted/`) holds an OpenAI-style key, a
//! PEM block, a URL password, an e-mail address, a card and a phone number in the root span's
//! name and status, a tool's name, arguments, argument keys and status message, in the gold's
//! tool names, argument keys and invocation ids (which the gold's problems quote), beside a
//! line that is not a request.

use std::path::Path;
use std::process::{Command, Output};

const PLANTED: &str = "tests/fixtures/hostile/check-planted";

/// Secrets: masked whatever the mode.
pub const SECRETS: &[&str] = &[
    "sk-proj-Plant3d",
    "Plant3dKey0abcdefghijklmnopqrstuvwxyz0123",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "PRIVATE KEY",
    "Passw0rdPlanted",
];

/// Personal data: masked unless the user reveals.
pub const PERSONAL: &[&str] = &[
    "planted.person@example.com",
    "4111 1111 1111 1111",
    "4155550123",
];

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("check")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("binary runs")
}

fn planted(file: &str) -> String {
    format!("{PLANTED}/{file}")
}

fn assert_clean(what: &str, text: &str, never: &[&str]) {
    for planted in never {
        assert!(!text.contains(planted), "{what} shows {planted:?}:\n{text}");
    }
}

#[test]
fn check_masks_every_planted_value_in_text_json_and_stderr() {
    let gold = planted("gold.json");
    let trace = planted("check-planted.otlp.jsonl");
    let every: Vec<&str> = SECRETS.iter().chain(PERSONAL).copied().collect();
    for extra in [&[][..], &["--json"], &["--explain"]] {
        let mut args = vec!["--gold", gold.as_str(), trace.as_str()];
        args.extend(extra);
        let out = check(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: the run differs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The planted fields are printed at all: each begins with "before".
        assert!(stdout.contains("before_lookup"), "{args:?}: {stdout}");
        assert!(stdout.contains("before_gold"), "{args:?}: {stdout}");
        assert!(stderr.contains("before_bad"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("invocation before id"),
            "{args:?}: {stderr}"
        );
        assert_clean(&format!("{args:?} stdout"), &stdout, &every);
        assert_clean(&format!("{args:?} stderr"), &stderr, &every);
        if extra == ["--json"] {
            let doc: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
            let run = &doc["invocations"][0];
            assert!(
                run["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("before agent"))
            );
            let error = run["trace_calls"][0]["error"].as_str().unwrap_or_default();
            assert!(error.contains("before tool failed"), "{error}");
            assert!(doc["problems"].as_array().is_some_and(|p| p.len() >= 2));
        }
    }
}

#[test]
fn revealed_check_shows_personal_data_but_never_secrets() {
    let gold = planted("gold.json");
    let trace = planted("check-planted.otlp.jsonl");
    for json in [false, true] {
        let mut args = vec!["--reveal", "--gold", gold.as_str(), trace.as_str()];
        if json {
            args.push("--json");
        }
        let out = check(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains("planted.person@example.com"), "{stdout}");
        assert_clean(&format!("{args:?} stdout"), &stdout, SECRETS);
        assert_clean(&format!("{args:?} stderr"), &stderr, SECRETS);
    }
}

#[test]
fn a_source_that_does_not_exist_is_an_error_not_a_diff() {
    // A scenarios gold makes invocations of its own: without the check, they were diffed.
    let scenarios = "tests/fixtures/arksim-two-turn/scenarios.json";
    let out = check(&["--gold", scenarios, "/does-not-exist"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/does-not-exist"), "{stderr}");
    assert!(stderr.contains("nothing loaded"), "{stderr}");
    assert!(out.stdout.is_empty(), "no diff is printed");
    // One missing source among good ones is still an error.
    let trace = "tests/fixtures/arksim-two-turn";
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(trace).is_dir());
    let out = check(&["--gold", scenarios, trace, "/does-not-exist"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no diff is printed");
}

#[test]
fn a_source_that_fails_to_load_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.otlp.json");
    std::fs::write(&broken, "{\"resourceSpans\": [").expect("write");
    let scenarios = "tests/fixtures/arksim-two-turn/scenarios.json";
    let out = check(&["--gold", scenarios, broken.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("broken.otlp.json"), "{stderr}");
    assert!(out.stdout.is_empty(), "no diff is printed");
}

#[test]
fn a_planted_match_mode_is_masked_in_the_verdict_column() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/arksim/run-direct");
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["agent_spans.jsonl", "evaluation.json", "simulation.json"] {
        std::fs::copy(run.join(name), dir.path().join(name)).expect("copy");
    }
    // arksim's reader keeps the mode as written; the verdict column quotes it beside a failed
    // call ("allowed: call errors not checked in … mode").
    let mode = "contains before sk-proj-Plant3dKey0abcdefghijklmnopqrstuvwxyz0123 \
                planted.person@example.com card 4111 1111 1111 1111";
    let scenarios = std::fs::read_to_string(run.join("scenarios.json")).expect("scenarios");
    let planted = scenarios.replace(
        r#""match_mode": "contains""#,
        &format!(r#""match_mode": "{mode}""#),
    );
    assert_ne!(planted, scenarios, "the fixture has a contains assertion");
    let gold = dir.path().join("scenarios.json");
    std::fs::write(&gold, planted).expect("write");
    let out = check(&[
        "--gold",
        gold.to_str().expect("utf-8 path"),
        dir.path().to_str().expect("utf-8 path"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("call errors not checked in contains before"),
        "{stdout}"
    );
    let every: Vec<&str> = SECRETS.iter().chain(PERSONAL).copied().collect();
    assert_clean("check", &stdout, &every);
}

#[test]
fn check_json_escapes_c1_controls_and_line_separators() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(PLANTED);
    let request = std::fs::read_to_string(root.join("check-planted.otlp.jsonl"))
        .expect("fixture")
        .lines()
        .next()
        .expect("a request line")
        // Escaped in the trace's JSON, raw in the loaded text: NEL, CSI, LS, PS.
        .replace(
            "before tool failed",
            r"before tool failed \u0085\u009b[2J\u2028\u2029",
        );
    let trace = dir.path().join("run.otlp.jsonl");
    std::fs::write(&trace, request + "\n").expect("write");
    let gold = root.join("gold.json");
    let paths = [&gold, &trace].map(|p| p.to_str().expect("utf-8 path"));
    let out = check(&["--json", "--gold", paths[0], paths[1]]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for raw in ['\u{85}', '\u{9b}', '\u{2028}', '\u{2029}'] {
        assert!(!stdout.contains(raw), "raw {raw:?} in:\n{stdout}");
    }
    // Escaped, not dropped: the value read back holds the characters.
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    let error = doc["invocations"][0]["trace_calls"][0]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains("\u{85}\u{9b}[2J\u{2028}\u{2029}"),
        "{error:?}"
    );
}
