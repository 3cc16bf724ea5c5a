//! openai-agents exports, OpenArmature typed events, arksim runs and A2A tasks.
//!
//! Expected numbers were counted from the files with Python (json module), independently of
//! this code; each block says how. The OpenArmature comparison is computed here from the OTLP
//! files of the same run, read with serde_json only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolcap::formats::{self, REGISTRY};
use toolcap::model::{Health, Origin, PayloadState, SpanKind, SpanStatus};
use toolcap::sources::load::{self, SourceReport};
use toolcap::store::{Invocation, Store};
use toolcap::views::dump;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn load(rels: &[&str]) -> (Store, Vec<SourceReport>) {
    let paths: Vec<PathBuf> = rels.iter().map(|r| fixture(r)).collect();
    load::load_store(&paths)
}

/// Tool calls in trajectory order as `(name, failed)`.
type Trajectory = Vec<(String, bool)>;

fn calls(inv: &Invocation) -> Trajectory {
    inv.summary()
        .tool_calls
        .iter()
        .map(|c| (c.name(&inv.spans).to_string(), c.failed))
        .collect()
}

fn named<'a>(store: &'a Store, name: &str) -> &'a Invocation {
    store
        .invocations()
        .find(|i| i.summary().name == name)
        .unwrap_or_else(|| panic!("no invocation named {name}"))
}

fn ok(name: &str) -> (String, bool) {
    (name.to_owned(), false)
}
fn failed(name: &str) -> (String, bool) {
    (name.to_owned(), true)
}

mod arksim;
mod arksim_joins;
mod openai_agents;
mod openarmature;

#[test]
fn a2a_tasks_read_tool_calls_from_artifact_metadata() {
    let (store, reports) = load(&["agents/a2a/task.json"]);
    assert_eq!(reports[0].format, Some("a2a-task"));
    let task = store.get("task-001").unwrap();
    // 4 entries, one without a name (skipped, as arksim does); `notify` carries an error.
    assert_eq!(
        calls(task),
        vec![ok("verify_customer"), ok("get_order"), failed("notify")]
    );
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("no string name"))
    );

    // Stream: task-002's snapshot replaces its streamed artifact (c1 once, then c2); task-003
    // only streamed, without declaring the extension; line 4 is garbage.
    let (store, reports) = load(&["agents/a2a/stream.jsonl"]);
    assert_eq!(store.len(), 2);
    assert_eq!(
        calls(store.get("task-002").unwrap()),
        vec![ok("search_products"), ok("get_price")]
    );
    assert_eq!(
        calls(store.get("task-003").unwrap()),
        vec![ok("lookup_customer")]
    );
    assert!(reports[0].warnings.iter().any(|w| w.starts_with("line 4:")));
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("does not list the extension URI"))
    );
}

#[test]
fn hostile_lines_are_reported_and_the_rest_loads() {
    let (store, reports) = load(&["agents/hostile/agents.jsonl"]);
    assert_eq!(store.len(), 1);
    assert_eq!(
        store.stats().spans_kept,
        2,
        "lines 1 and 5 are spans; 2 is cut, 4 a list"
    );
    assert!(reports[0].warnings.iter().any(|w| w.starts_with("line 2:")));
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("not valid JSON"))
    );
    // Wrong shapes inside otherwise recognisable documents: reported, never a panic.
    let cases: [(&[u8], Option<&str>, &str); 4] = [
        (
            br#"{"conversations": 5, "simulation_id": 1}"#,
            None,
            "no known trace format",
        ),
        (
            br#"{"scenarios": [{"scenario_id": {}}]}"#,
            Some("arksim-scenarios"),
            "no usable scenario_id",
        ),
        (
            br#"{"event_type": "NodeEvent", "seq": 1, "phase": "completed"}"#,
            Some("openarmature-events"),
            "without an invocation id",
        ),
        (
            br#"{"kind": "task", "id": [], "artifacts": 3}"#,
            Some("a2a-task"),
            "0 tool calls found",
        ),
    ];
    for (bytes, format, problem) in cases {
        let loaded = formats::load_bytes(Origin::endpoint("test"), bytes);
        assert_eq!(loaded.detection.format, format);
        assert!(
            loaded
                .batch
                .problems
                .iter()
                .any(|p| p.message.contains(problem)),
            "{:?}",
            loaded.batch.problems
        );
        Store::new().ingest(loaded.batch);
    }
}

#[test]
fn every_format_is_registered_once() {
    let mine = [
        "openai-agents",
        "openarmature-events",
        "arksim-simulation",
        "arksim-evaluation",
        "arksim-scenarios",
        "arksim-receiver",
        "a2a-task",
    ];
    for name in mine {
        assert_eq!(
            REGISTRY.iter().filter(|f| f.name() == name).count(),
            1,
            "{name}"
        );
    }
}

#[test]
fn dump_binary_shows_turn_verdicts_and_explains_formats() {
    let bin = env!("CARGO_BIN_EXE_toolcap-tui");
    let dir = fixture("corpus/arksim/run-direct");
    let out = std::process::Command::new(bin)
        .args(["dump", "--json", "--explain"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let invocations = doc["invocations"].as_array().unwrap();
    assert_eq!(invocations.len(), 7);
    let failing: Vec<&str> = invocations
        .iter()
        .filter(|i| i["eval"]["passed"] == false)
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let mut failing = failing;
    failing.sort();
    assert_eq!(
        failing,
        [
            "cancel_order · turn 0",
            "kb_only · turn 1",
            "order_missing · turn 0",
            "order_missing · turn 1"
        ]
    );
    for inv in invocations {
        let spans = inv["spans"].as_array().unwrap();
        assert_eq!(
            spans[0]["name"]
                .as_str()
                .unwrap()
                .split(' ')
                .take(2)
                .collect::<Vec<_>>(),
            ["arksim", "turn"]
        );
        let task = spans.iter().find(|s| s["name"] == "task").unwrap();
        assert_eq!(task["depth"], 1, "the agents trace hangs under the turn");
        assert_eq!(task["parent_span_id"], spans[0]["span_id"]);
        assert!(inv["eval"]["label"].is_string());
    }
    let sources: Vec<&str> = doc["sources"]
        .as_array()
        .unwrap()
        .iter()
        // Skipped files (notes only) have no format.
        .filter_map(|s| s["format"].as_str())
        .collect();
    assert!(sources.contains(&"arksim-simulation") && sources.contains(&"openai-agents"));

    let text = std::process::Command::new(bin)
        .args(["dump", "--explain"])
        .arg(fixture(
            "corpus/openarmature/events/payload-off.events.jsonl",
        ))
        .arg(fixture("agents/a2a/task.json"))
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("openarmature-events ("), "{text}");
    assert!(text.contains("a2a-task ("), "{text}");
}
