//! The reviewer's audit: secrets and personal data planted into every string field of a real
//! trace of every format, Inspect logs included (and into attribute keys and identifiers), never
//! reach any redacted output of the real binary: `dump`, `dump --json`, `report` (Markdown and its
//! JSON sibling), `check` text and `check --json`, standard error included; nor any screen of
//! `compare`'s view.
//!
//! Each planted text carries a visible marker beside the sensitive part, so the test also proves
//! the planted fields are shown at all (an empty output would pass a leak test vacuously).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use toolcap::tui::compare::CompareState;
use toolcap::tui::compare::state::Overlay;
use toolcap::views::compare::KeyRule;

use crate::compare_view::{press, screen, view};

/// A planted text: shown with a marker, its `core` must never appear while redacted.
struct Plant {
    text: &'static str,
    core: &'static str,
}

/// Credentials (masked in every mode) and personal data (masked while redacted), each also glued
/// to an identifier-like prefix, as item 2 of the trust issue asks.
const PLANTS: &[Plant] = &[
    Plant {
        text: "sk-proj-Q7vX2mLp9RtY4wZ8nB3kJ6hF1dS5aG0c",
        core: "Q7vX2mLp9RtY4wZ8nB3kJ6hF1dS5aG0c",
    },
    Plant {
        text: "tool_sk-proj-M4nB7vC1xZ9lK2jH5gF8dS3aQ6wE0rT",
        core: "M4nB7vC1xZ9lK2jH5gF8dS3aQ6wE0rT",
    },
    Plant {
        text: "https://maps.example.com/p?key=AIzaSyD4k9Lm2Nq7Rs1Tv6Wx3Yz8Ab5Cd0Ef2Gh",
        core: "SyD4k9Lm2Nq7Rs1Tv6Wx3Yz8Ab5Cd0Ef2Gh",
    },
    Plant {
        text: "/v1/ghp_Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss/x",
        core: "Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss",
    },
    Plant {
        text: "postgres://admin:Hunter2Passw0rd@db.internal.example.com/prod",
        core: "Hunter2Passw0rd",
    },
    Plant {
        text: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----",
        core: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    },
    Plant {
        text: "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        core: "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    },
    Plant {
        text: "write to jane.doe+triage@example.com",
        core: "jane.doe+triage@example.com",
    },
    Plant {
        text: "card 4111 1111 1111 1111 on file",
        core: "4111 1111 1111 1111",
    },
    Plant {
        text: "call +14155550123 back",
        core: "4155550123",
    },
];

/// Strings that are structure rather than text: ids, times, numbers, enumerations. Planting into
/// them would make the trace unreadable, which hides fields instead of testing them.
fn is_structural(key: &str, text: &str) -> bool {
    const KEYS: &[&str] = &[
        "key",
        "type",
        "role",
        "kind",
        "object",
        "jsonrpc",
        "method",
        "version",
        "schemaUrl",
        "finish_reason",
        "stop_reason",
        "status",
        "code",
        "intValue",
        "doubleValue",
        "boolValue",
        "timestamp",
        "started_at",
        "ended_at",
        "created_at",
        "start_time",
        "end_time",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "timeUnixNano",
        "traceId",
        "spanId",
        "parentSpanId",
        "trace_id",
        "span_id",
        "parent_id",
        "id",
        "call_id",
        "tool_call_id",
        "tool_use_id",
        "conversation_id",
        "simulation_id",
        "scenario_id",
        "evaluation_id",
        "uuid",
        "format",
        // An Inspect event's kind.
        "event",
    ];
    KEYS.contains(&key)
        || key.ends_with("_id")
        || key.ends_with("Id")
        || text.len() <= 2
        || text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || matches!(b, b'-' | b':' | b'.' | b'T' | b'Z' | b'+'))
}

/// Appends a planted text to every non-structural string, one plant after another, and gives
/// every OTLP attribute list one more attribute whose key holds personal data.
fn plant(value: &mut Value, key: &str, next: &mut usize) {
    match value {
        Value::String(text) if !is_structural(key, text) => {
            let plant = &PLANTS[*next % PLANTS.len()];
            *next += 1;
            text.push_str(" MARK ");
            text.push_str(plant.text);
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                plant(item, key, next);
            }
            if key == "attributes" && items.iter().all(|i| i.get("key").is_some()) {
                items.push(serde_json::json!({
                    "key": "owner.jane.doe+triage@example.com",
                    "value": {"stringValue": "MARK key-holder"}
                }));
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                plant(v, k, next);
            }
        }
        _ => {}
    }
}

/// Plants into one trace file: a JSON document, or JSON lines (lines that are not JSON are kept).
fn plant_file(from: &Path, to: &Path) {
    let text = std::fs::read_to_string(from).expect("fixture is text");
    let mut next = 0;
    let out = match serde_json::from_str::<Value>(&text) {
        Ok(mut doc) => {
            plant(&mut doc, "", &mut next);
            // A JSON-lines file of one line stays one line.
            if from.extension().is_some_and(|e| e == "jsonl") {
                serde_json::to_string(&doc).expect("serializes") + "\n"
            } else {
                serde_json::to_string_pretty(&doc).expect("serializes")
            }
        }
        Err(_) => {
            let mut lines = Vec::new();
            for line in text.lines() {
                match serde_json::from_str::<Value>(line) {
                    Ok(mut doc) => {
                        plant(&mut doc, "", &mut next);
                        lines.push(serde_json::to_string(&doc).expect("serializes"));
                    }
                    Err(_) => lines.push(line.to_owned()),
                }
            }
            lines.join("\n") + "\n"
        }
    };
    std::fs::write(to, out).expect("writes planted copy");
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One planted copy of a trace of every format, each in a directory of its own.
fn planted_sources(root: &Path) -> Vec<PathBuf> {
    let f = fixtures();
    let files: Vec<(&str, Vec<PathBuf>)> = vec![
        (
            "genai",
            vec![f.join("corpus/otel-genai/genai-latest.spans.otlp.jsonl")],
        ),
        (
            "genai-legacy",
            vec![f.join("corpus/otel-genai/genai-legacy.spans.otlp.jsonl")],
        ),
        (
            "openinference",
            vec![f.join("corpus/otel-genai/openinference.spans.otlp.jsonl")],
        ),
        (
            "openarmature",
            vec![f.join("corpus/openarmature/otlp-json/payload-on.batch.jsonl")],
        ),
        (
            "openai-agents",
            vec![f.join("corpus/openai-agents/exports.jsonl")],
        ),
        (
            "arksim",
            [
                "agent_spans.jsonl",
                "evaluation.json",
                "simulation.json",
                "scenarios.json",
            ]
            .iter()
            .map(|n| f.join("corpus/arksim/run-direct").join(n))
            .collect(),
        ),
        (
            "logs",
            std::fs::read_dir(f.join("logs"))
                .expect("logs fixtures")
                .map(|e| e.expect("entry").path())
                .filter(|p| {
                    p.extension().is_some_and(|e| e == "json" || e == "jsonl")
                        && !p.ends_with("expected_gold.json")
                })
                .collect(),
        ),
        (
            "toolscore",
            vec![f.join("corpus/toolscore/v02_openai_reordered/trace.json")],
        ),
        (
            "inspect",
            ["inspect-ai/B", "inspect-ai/limit"]
                .iter()
                .flat_map(|d| std::fs::read_dir(f.join(d)).expect("inspect fixtures"))
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect(),
        ),
    ];
    let mut dirs = Vec::new();
    for (name, sources) in files {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("dir");
        for source in sources {
            plant_file(&source, &dir.join(source.file_name().expect("name")));
        }
        dirs.push(dir);
    }
    dirs
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .env_remove("TOOLCAP_TOKEN")
        .output()
        .expect("runs the binary")
}

/// What leaked into `text`, by plant.
fn leaks(text: &str) -> Vec<&'static str> {
    PLANTS
        .iter()
        .filter(|p| text.contains(p.core))
        .map(|p| p.core)
        .chain(text.contains("jane.doe").then_some("jane.doe (in a key)"))
        .collect()
}

/// Records what `text` leaks, so one run lists every side door at once.
fn check_clean(found: &mut Vec<String>, what: &str, text: &str) {
    let leaked = leaks(text);
    if !leaked.is_empty() {
        found.push(format!("{what} leaks {leaked:?}"));
    }
}

#[test]
fn no_redacted_output_shows_a_planted_secret_or_personal_datum() {
    let root = tempfile::tempdir().expect("temp dir");
    let sources = planted_sources(root.path());
    let gold = fixtures().join("corpus/toolscore/v02_openai_reordered/gold.json");
    let mut unmarked = Vec::new();
    let mut found = Vec::new();
    for dir in &sources {
        let dir_text = dir.to_str().expect("utf-8 path");
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();

        let dump = run(&["dump", dir_text]);
        let stdout = String::from_utf8_lossy(&dump.stdout);
        check_clean(&mut found, &format!("{name}: dump"), &stdout);
        check_clean(
            &mut found,
            &format!("{name}: dump stderr"),
            &String::from_utf8_lossy(&dump.stderr),
        );
        if !stdout.contains("MARK") {
            unmarked.push(name.clone());
        }

        let json = run(&["dump", "--json", dir_text]);
        check_clean(
            &mut found,
            &format!("{name}: dump --json"),
            &String::from_utf8_lossy(&json.stdout),
        );
        check_clean(
            &mut found,
            &format!("{name}: dump --json stderr"),
            &String::from_utf8_lossy(&json.stderr),
        );

        let report_path = root.path().join(format!("{name}-report.md"));
        let report = run(&["report", "--out", report_path.to_str().unwrap(), dir_text]);
        check_clean(
            &mut found,
            &format!("{name}: report stderr"),
            &String::from_utf8_lossy(&report.stderr),
        );
        check_clean(
            &mut found,
            &format!("{name}: report stdout"),
            &String::from_utf8_lossy(&report.stdout),
        );
        if let Ok(markdown) = std::fs::read_to_string(&report_path) {
            check_clean(&mut found, &format!("{name}: report"), &markdown);
        }
        if let Ok(json) = std::fs::read_to_string(report_path.with_extension("json")) {
            check_clean(&mut found, &format!("{name}: report json"), &json);
        }
        let report_stdout = run(&["report", dir_text]);
        check_clean(
            &mut found,
            &format!("{name}: report to stdout"),
            &String::from_utf8_lossy(&report_stdout.stdout),
        );

        for json_flag in [true, false] {
            let mut args = vec!["check", "--gold", gold.to_str().unwrap()];
            if json_flag {
                args.push("--json");
            }
            args.push(dir_text);
            let check = run(&args);
            check_clean(
                &mut found,
                &format!("{name}: check (json: {json_flag})"),
                &String::from_utf8_lossy(&check.stdout),
            );
            check_clean(
                &mut found,
                &format!("{name}: check stderr (json: {json_flag})"),
                &String::from_utf8_lossy(&check.stderr),
            );
        }
    }
    assert!(found.is_empty(), "leaks:\n{}", found.join("\n"));
    assert!(
        unmarked.is_empty(),
        "no planted text shows in `dump` of {unmarked:?}"
    );
}

#[test]
fn revealed_outputs_still_mask_every_planted_credential() {
    let root = tempfile::tempdir().expect("temp dir");
    let sources = planted_sources(root.path());
    let credentials: Vec<&str> = PLANTS[..7].iter().map(|p| p.core).collect();
    for dir in &sources {
        let dir_text = dir.to_str().expect("utf-8 path");
        for args in [
            vec!["dump", "--reveal", dir_text],
            vec!["dump", "--json", "--reveal", dir_text],
            vec!["report", "--reveal", dir_text],
        ] {
            let out = run(&args);
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            let found: Vec<_> = credentials.iter().filter(|c| text.contains(*c)).collect();
            assert!(found.is_empty(), "{args:?} leaks {found:?}");
        }
    }
}

/// Every screen of `compare`'s view of a run against itself: each row of the list, redacted,
/// then its gold diffs when it has any, then the row revealed; with the detail's lines as built
/// (a text wrapped on screen is whole there).
fn compare_screens(dir: &Path) -> Vec<(String, bool)> {
    let mut state = view(dir, dir, KeyRule::Case, 240, 80);
    let mut screens = Vec::new();
    let mut record = |state: &CompareState| {
        let mut text = screen(state);
        if let Some(shown) = &state.shown {
            for line in toolcap::tui::compare::render::detail_lines(
                &shown.blocks,
                u16::MAX,
                Default::default(),
            ) {
                text.push_str(&line.to_string());
                text.push('\n');
            }
        }
        screens.push((text, state.reveal == toolcap::redact::Reveal::Revealed));
    };
    for _ in 0..state.rows.len() {
        record(&state);
        press(&mut state, "d");
        if matches!(state.overlay, Some(Overlay::Gold(_))) {
            record(&state);
            press(&mut state, "<esc>");
        }
        press(&mut state, "r");
        record(&state);
        press(&mut state, "rj");
    }
    screens
}

#[test]
fn the_compare_view_shows_no_planted_datum_redacted_and_no_credential_revealed() {
    let root = tempfile::tempdir().expect("temp dir");
    let credentials: Vec<&str> = PLANTS[..7].iter().map(|p| p.core).collect();
    let mut found = Vec::new();
    let mut unmarked = Vec::new();
    for dir in planted_sources(root.path()) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let screens = compare_screens(&dir);
        for (n, (text, revealed)) in screens.iter().enumerate() {
            if *revealed {
                let leaked: Vec<_> = credentials.iter().filter(|c| text.contains(**c)).collect();
                if !leaked.is_empty() {
                    found.push(format!("{name}: revealed screen {n} leaks {leaked:?}"));
                }
            } else {
                check_clean(&mut found, &format!("{name}: screen {n}"), text);
            }
        }
        if !screens.iter().any(|(text, _)| text.contains("MARK")) {
            unmarked.push(name);
        }
    }
    assert!(found.is_empty(), "leaks:\n{}", found.join("\n"));
    assert!(
        unmarked.is_empty(),
        "no planted text shows in the compare view of {unmarked:?}"
    );
}
