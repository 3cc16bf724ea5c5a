//! Every row of docs/toolscore-rules.md has a case in tests/fixtures/toolscore-rules: a gold, a
//! trace, and the report the real toolscore 1.10.0 CLI wrote for them (`toolscore-result.json`,
//! made by the command in `command.txt`; `record.sh` re-records them all). `check --json` must
//! give the same metrics on each. Cases marked `pitfall` in `case.json` are the ones where
//! toolscore's reading is wrong: there our own reading is kept, and toolscore's — its call list
//! and the metrics it gives — is reported under `toolscore_reading`, which must match instead.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/toolscore-rules")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixture dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("case.json").is_file())
        .collect();
    out.sort();
    out
}

/// `check` as the case's command ran toolscore: same gold, trace, format and options.
fn check(case: &Path, extra: &[&str]) -> Output {
    let meta = read_json(&case.join("case.json"));
    let argv: Vec<&str> = meta["command"]
        .as_array()
        .expect("command")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
    command
        .current_dir(case)
        .args(["check", "--gold", "gold.json"]);
    let mut rest = argv.iter().skip(4);
    while let Some(arg) = rest.next() {
        match *arg {
            "-o" => {
                rest.next();
            }
            "--forbidden" | "--weight" => {
                command.arg(arg).arg(rest.next().expect("value"));
            }
            "--format" | "-f" => {
                command.arg("--format").arg(rest.next().expect("value"));
            }
            other => panic!("{}: unhandled toolscore option {other}", case.display()),
        }
    }
    command.args(extra).arg("trace.json");
    command.output().expect("binary runs")
}

/// Every value in `expected` must be in `ours` (numbers within 1e-9); `ours` may have more.
fn covers(expected: &Value, ours: &Value, path: &str, failures: &mut Vec<String>) {
    match (expected, ours) {
        (Value::Number(e), Value::Number(o)) => {
            let (e, o) = (
                e.as_f64().unwrap_or(f64::NAN),
                o.as_f64().unwrap_or(f64::NAN),
            );
            if (e - o).abs() > 1e-9 {
                failures.push(format!("{path}: toolscore {e}, ours {o}"));
            }
        }
        (Value::Object(e), Value::Object(o)) => {
            for (k, v) in e {
                match o.get(k) {
                    Some(ov) => covers(v, ov, &format!("{path}.{k}"), failures),
                    None => failures.push(format!("{path}.{k}: missing from ours")),
                }
            }
        }
        (Value::Array(e), Value::Array(o)) => {
            if e.len() != o.len() {
                failures.push(format!("{path}: {} items, ours {}", e.len(), o.len()));
            }
            for (i, (ev, ov)) in e.iter().zip(o).enumerate() {
                covers(ev, ov, &format!("{path}[{i}]"), failures);
            }
        }
        (e, o) if e == o => {}
        (e, o) => failures.push(format!("{path}: toolscore {e}, ours {o}")),
    }
}

const SUMMARY_KEYS: &[&str] = &[
    "gold_calls_count",
    "trace_calls_count",
    "score",
    "grade",
    "weights",
    "required_call_recall",
    "failed_calls",
    "secrets",
    "policy_violations",
];

/// The parts of toolscore's report `check --json` reproduces: the metrics (side effects are
/// reported as not evaluated, so that section is compared by the side-effect test instead),
/// the summary, and the calls' names, arguments and error flags.
/// Secret-looking values stay masked even with `--reveal` (by design); where ours is masked
/// and toolscore shows a string, the masked value is taken as agreeing.
fn accept_masks(expected: &Value, ours: &mut Value) {
    match (expected, ours) {
        (Value::String(e), o @ Value::String(_)) if o.as_str() == Some("••••••") => {
            *o = Value::String(e.clone());
        }
        (Value::Object(e), Value::Object(o)) => {
            for (k, v) in o.iter_mut() {
                if let Some(ev) = e.get(k) {
                    accept_masks(ev, v);
                }
            }
        }
        (Value::Array(e), Value::Array(o)) => {
            for (ev, ov) in e.iter().zip(o.iter_mut()) {
                accept_masks(ev, ov);
            }
        }
        _ => {}
    }
}

fn compare(expected: &Value, ours: &Value, failures: &mut Vec<String>) {
    let mut ours = ours.clone();
    accept_masks(&expected["metrics"], &mut ours["metrics"]);
    accept_masks(&expected["trace_calls"], &mut ours["trace_calls"]);
    let ours = &ours;
    let mut metrics = expected["metrics"].clone();
    if let Some(m) = metrics.as_object_mut() {
        m.remove("side_effect_metrics");
        // toolscore names each secret's kind and shows part of it; check never prints any of it.
        for secret in m
            .get_mut("security_metrics")
            .and_then(|s| s.get_mut("secrets"))
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(secret) = secret.as_object_mut() {
                secret.remove("kind");
                secret.remove("preview");
            }
        }
        // Violations list the offending arguments in toolscore; check leaves them out.
        for violation in m
            .get_mut("policy_metrics")
            .and_then(|s| s.get_mut("violations"))
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(v) = violation.as_object_mut() {
                v.remove("args");
            }
        }
    }
    covers(&metrics, &ours["metrics"], "metrics", failures);
    for key in SUMMARY_KEYS {
        if let Some(value) = expected["summary"].get(*key) {
            covers(
                value,
                &ours["summary"][*key],
                &format!("summary.{key}"),
                failures,
            );
        }
    }
    let calls = |doc: &Value| -> Vec<(String, Value, bool)> {
        doc.as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap_or("").to_string(),
                    c["args"].clone(),
                    c["is_error"].as_bool().unwrap_or(false)
                        || c["metadata"]["is_error"] == true
                        || c["metadata"]["error"]
                            .as_str()
                            .is_some_and(|e| !e.is_empty()),
                )
            })
            .collect()
    };
    let (theirs, mine) = (calls(&expected["trace_calls"]), calls(&ours["trace_calls"]));
    if theirs != mine {
        failures.push(format!(
            "trace_calls: toolscore {theirs:?}\n  ours {mine:?}"
        ));
    }
}

#[test]
fn every_rule_case_matches_the_toolscore_cli() {
    let mut all = Vec::new();
    let mut checked = 0;
    for case in cases() {
        checked += 1;
        let name = case
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let meta = read_json(&case.join("case.json"));
        let expected = read_json(&case.join("toolscore-result.json"));
        let output = check(&case, &["--json", "--reveal"]);
        let doc: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let ours = &doc["invocations"][0];
        let mut failures = Vec::new();
        if ours.is_null() {
            failures.push(format!(
                "no report (exit {:?}): {}",
                output.status.code(),
                String::from_utf8_lossy(&output.stderr)
            ));
        } else if meta.get("pitfall").is_some() {
            compare(&expected, &ours["toolscore_reading"], &mut failures);
        } else {
            compare(&expected, ours, &mut failures);
            let passed = ours["passed"].as_bool().unwrap_or(false);
            if output.status.code() != Some(if passed { 0 } else { 1 }) {
                failures.push(format!("exit {:?}, passed {passed}", output.status.code()));
            }
        }
        all.extend(failures.into_iter().map(|f| format!("{name}: {f}")));
    }
    assert!(checked >= 44, "{checked} cases");
    assert!(all.is_empty(), "{}", all.join("\n"));
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn an_empty_trace_against_a_gold_exits_1_with_every_call_missing() {
    let case = fixtures().join("r01_empty_list");
    let output = check(&case, &["--json"]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: Value = serde_json::from_slice(&output.stdout).expect("json");
    let kinds: Vec<&str> = doc["invocations"][0]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["missing", "missing"]);
}

#[test]
fn secrets_and_forbidden_calls_are_in_the_text_header() {
    let case = fixtures().join("r43_forbidden_rules_and_secrets");
    let out = text(&check(&case, &[]));
    let header: String = out
        .lines()
        .take_while(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        header.contains("secrets: 1 secret-looking value(s) in tool arguments (call 3 http_get at headers.Authorization)"),
        "{out}"
    );
    assert!(
        header.contains("forbidden: 2 of 3 call(s) break a rule (3 rule(s)); call 1 run_shell matches rule 1 (destructive); call 2 read_file matches rule 2"),
        "{out}"
    );
    assert!(
        !out.contains("ghp_abc"),
        "the secret itself is never printed: {out}"
    );
    // A comma list forbids tools outright.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
    let out = command
        .current_dir(&case)
        .args([
            "check",
            "--gold",
            "gold.json",
            "--forbidden",
            "http_get,nope",
            "trace.json",
        ])
        .output()
        .expect("runs");
    assert!(
        text(&out).contains(
            "forbidden: 1 of 3 call(s) break a rule (2 rule(s)); call 3 http_get matches rule 1"
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn side_effects_are_reported_as_not_evaluated() {
    let case = fixtures().join("r44_side_effects_not_evaluated");
    let out = text(&check(&case, &[]));
    for line in [
        "side effect http_ok of gold call 1 (fetch): not evaluated",
        "side effect file_exists of gold call 2 (save): not evaluated",
        "side effect sql_rows of gold call 2 (save): not evaluated",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    let doc: Value = serde_json::from_slice(&check(&case, &["--json"]).stdout).expect("json");
    let checks: Vec<(String, String)> = doc["invocations"][0]["side_effects"]
        .as_array()
        .expect("side_effects")
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap_or("").into(),
                c["status"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert_eq!(checks.len(), 3, "{checks:?}");
    assert!(checks.iter().all(|(_, status)| status == "not_evaluated"));
}

#[test]
fn explain_shows_toolscores_reading_where_it_differs() {
    let case = fixtures().join("r16_anthropic_wrapped_in_messages");
    let out = text(&check(&case, &["--explain"]));
    assert!(
        out.contains(
            "toolscore 1.10.0 would use its openai adapter (an object with `messages` or `choices`)"
        ),
        "{out}"
    );
    assert!(out.contains("toolscore reads: no calls"), "{out}");
    assert!(out.contains("we read:         search"), "{out}");
    assert!(
        out.contains("toolscore's score on its reading: 0.10 (F), ours 1.00 (A)"),
        "{out}"
    );
    let same = text(&check(
        &fixtures().join("r09_openai_messages_tool_calls"),
        &["--explain"],
    ));
    assert!(same.contains("would use its openai adapter"), "{same}");
    assert!(same.contains(": same calls as ours"), "{same}");
}
