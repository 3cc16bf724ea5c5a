//! A line longer than the line limit is skipped by every reader — `dump` reading a file in
//! pieces or whole, standard input, and the TUI's watcher — and told as an error at its line
//! with its size; the lines around it still load. The long lines are generated here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use toolcap::redact::Reveal;
use toolcap::sources::load::load_store;
use toolcap::sources::tail::MAX_LINE_BYTES;
use toolcap::sources::watch::spawn_watcher;
use toolcap::sources::{IngestEvent, SourceStatus};
use toolcap::store::Store;
use toolcap::views::dump::to_json;

/// 70 MiB: past the limit by more than any read step.
const LONG_LINE_BYTES: u64 = MAX_LINE_BYTES + (6 << 20);

fn corpus(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .join(path)
}

/// One fixture with a long line of `a` put before its line `at` (0-based), saved as `name`.
struct Case {
    name: &'static str,
    fixture: &'static str,
    at: usize,
}

/// OTLP lines stand alone (read in pieces); openai-agents lines are read whole; a `.json` name
/// is read as a document first.
const CASES: &[Case] = &[
    Case {
        name: "middle.jsonl",
        fixture: "otlp-python-sdk/otlp-json/traces.jsonl",
        at: 2,
    },
    Case {
        name: "first.jsonl",
        fixture: "otlp-python-sdk/otlp-json/traces.jsonl",
        at: 0,
    },
    Case {
        name: "agents.jsonl",
        fixture: "openai-agents/exports.jsonl",
        at: 40,
    },
    Case {
        name: "named-as-document.json",
        fixture: "otlp-python-sdk/otlp-json/traces.jsonl",
        at: 1,
    },
];

fn with_long_line(case: &Case) -> Vec<u8> {
    let text = std::fs::read_to_string(corpus(case.fixture)).expect("fixture");
    let mut out = Vec::with_capacity(text.len() + LONG_LINE_BYTES as usize + 1);
    for (index, line) in text.lines().enumerate() {
        if index == case.at {
            out.resize(out.len() + LONG_LINE_BYTES as usize, b'a');
            out.push(b'\n');
        }
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

fn expected_message(line: usize) -> String {
    format!("line {line} is 70.0 MiB, over the 64 MiB line limit: skipped")
}

fn dump_json(source: &Path, stdin: Option<&[u8]>) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(source)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolcap-tui");
    let mut input = child.stdin.take().expect("stdin");
    let writer = stdin.map(|bytes| {
        let bytes = bytes.to_vec();
        std::thread::spawn(move || input.write_all(&bytes))
    });
    let out = child.wait_with_output().expect("dump finishes");
    if let Some(writer) = writer {
        writer.join().expect("writer").expect("stdin written");
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// Invocation ids with their span counts: what a file's good lines make.
fn runs(doc: &Value) -> Vec<(String, Value)> {
    let mut runs: Vec<(String, Value)> = doc["invocations"]
        .as_array()
        .expect("invocations")
        .iter()
        .map(|i| (i["id"].as_str().expect("id").to_owned(), i["spans"].clone()))
        .collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0));
    runs
}

#[test]
fn dump_skips_a_long_line_and_loads_every_line_around_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in CASES {
        let path = dir.path().join(case.name);
        let content = with_long_line(case);
        std::fs::write(&path, &content).expect("write");
        let expected = runs(&dump_json(&corpus(case.fixture), None));
        assert!(!expected.is_empty(), "{}", case.fixture);

        for (doc, source) in [
            (dump_json(&path, None), path.display().to_string()),
            (
                dump_json(Path::new("-"), Some(&content)),
                "stdin".to_owned(),
            ),
        ] {
            assert_eq!(runs(&doc), expected, "{source}: every good line loads");
            let line = case.at + 1;
            let problems = doc["problems"].as_array().expect("problems");
            assert_eq!(problems.len(), 1, "{source}: {problems:?}");
            assert_eq!(problems[0]["source"], source.as_str(), "{problems:?}");
            assert_eq!(problems[0]["line"], line, "{source}: {problems:?}");
            assert_eq!(problems[0]["severity"], "error", "{problems:?}");
            assert_eq!(
                problems[0]["message"],
                expected_message(line).as_str(),
                "{source}"
            );
        }
    }
}

/// The watcher reads the same files as `dump` does, long lines included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_skips_long_lines_as_dump_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in CASES {
        std::fs::write(dir.path().join(case.name), with_long_line(case)).expect("write");
    }
    let root = dir.path().canonicalize().expect("tempdir");
    let (headless, _) = load_store(std::slice::from_ref(&root));

    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let _watch = spawn_watcher(vec![root.clone()], tx).expect("watching");
    let mut live = Store::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(120), rx.recv())
            .await
            .expect("the initial load finishes")
            .expect("the watcher is running");
        match event {
            IngestEvent::Batch(batch) => live.apply(batch),
            IngestEvent::Forget(path) => live.remove_origin(&path),
            IngestEvent::Status(SourceStatus::Watching { loaded, total, .. })
                if total > 0 && loaded == total =>
            {
                break;
            }
            IngestEvent::Status(_) => {}
        }
    }
    live.settle();

    let (live, headless) = (
        to_json(&live, Reveal::Redacted),
        to_json(&headless, Reveal::Redacted),
    );
    assert_eq!(runs(&live), runs(&headless));
    let mut problems: Vec<String> = live["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| format!("{}:{}: {}", p["source"], p["line"], p["message"]))
        .collect();
    problems.sort();
    let mut expected: Vec<String> = CASES
        .iter()
        .map(|case| {
            format!(
                "{:?}:{}: {:?}",
                root.join(case.name).display().to_string(),
                case.at + 1,
                expected_message(case.at + 1)
            )
        })
        .collect();
    expected.sort();
    assert_eq!(problems, expected);
}
