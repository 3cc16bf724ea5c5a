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
        .map(|c| (c.name.clone(), c.failed))
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

// Counted with: for each trace id, the span records (the last record per span id), their
// span_data.type, error != null, and the function spans sorted by started_at.
#[test]
fn openai_agents_exports_load_every_trace_with_its_tool_calls() {
    let (store, reports) = load(&["corpus/openai-agents/exports.jsonl"]);
    assert_eq!(reports[0].format, Some("openai-agents"));
    assert_eq!(store.len(), 9);
    assert_eq!(store.stats().spans_kept, 74);
    let expect: &[(&str, usize, usize, Trajectory, Health)] = &[
        ("weather ok", 8, 0, vec![ok("get_weather")], Health::Ok),
        (
            "order lookup fails",
            8,
            1,
            vec![failed("lookup_order")],
            Health::Degraded,
        ),
        (
            "parallel then cancel",
            12,
            0,
            vec![ok("get_weather"), ok("lookup_order"), ok("cancel_order")],
            Health::Ok,
        ),
        ("kb search", 9, 0, vec![ok("search_kb")], Health::Ok),
        (
            "chat completions model",
            7,
            1,
            vec![failed("get_weather")],
            Health::Degraded,
        ),
        ("handoff", 11, 0, vec![ok("lookup_order")], Health::Ok),
        ("guardrail tripped", 4, 1, vec![], Health::Degraded),
        (
            "max turns exceeded",
            7,
            1,
            vec![ok("get_weather"), ok("lookup_order")],
            Health::Degraded,
        ),
        ("Agent workflow", 8, 0, vec![ok("get_weather")], Health::Ok),
    ];
    for (name, spans, errors, tools, health) in expect {
        let inv = named(&store, name);
        let s = inv.summary();
        assert_eq!(
            (s.counts.spans, s.counts.errors),
            (*spans, *errors),
            "{name}"
        );
        assert_eq!(&calls(inv), tools, "{name}");
        assert_eq!(s.health, *health, "{name}");
        assert!(
            inv.id.starts_with("trace_"),
            "invocation id is the agents trace id"
        );
    }
    // parallel then cancel: 3 response + 3 function + 4 custom + 1 guardrail + 1 agent.
    let c = named(&store, "parallel then cancel").summary().counts;
    assert_eq!((c.llm, c.tool, c.node, c.agent), (3, 3, 5, 1));
    // handoff: two agent spans and a handoff span (node).
    let h = named(&store, "handoff");
    assert_eq!(h.summary().counts.agent, 2);
    assert!(h.spans.iter().any(|s| s.name == "handoff triage → orders"));
    // The raising tool: error message and data are kept.
    let lookup = named(&store, "order lookup fails")
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    assert_eq!(
        lookup.error_message(),
        Some("Error running tool (non-fatal)")
    );
    assert_eq!(
        formats::load_payload(&lookup.input).unwrap().as_deref(),
        Some("{\"order_id\": \"ORD-9999\"}")
    );
    // Chat Completions: model, tokens and the requested call id.
    let chat = named(&store, "chat completions model");
    let generation = chat.spans.iter().find(|s| s.name == "generation").unwrap();
    let llm = generation.llm.as_ref().unwrap();
    assert_eq!(llm.model.as_deref(), Some("fake-chat-model"));
    assert_eq!((llm.input_tokens, llm.output_tokens), (Some(35), Some(20)));
    assert_eq!(
        llm.requested_tool_calls[0].id.as_deref(),
        Some("call_0000267399813f")
    );
    // The function span gets that id from the request with the same name and arguments,
    // and the store links it back to the generation span.
    let tool = chat
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    assert_eq!(tool.tool_call_id(), Some("call_0000267399813f"));
    assert_eq!(
        tool.tool.as_ref().unwrap().requested_by.as_deref(),
        Some(generation.span_id.as_str())
    );
}

#[test]
fn python_repr_output_is_kept_as_text() {
    // kb search: search_kb returned a Python list repr (single quotes), per exports.jsonl.
    let (store, _) = load(&["corpus/openai-agents/exports.jsonl"]);
    let tool = named(&store, "kb search")
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    let out = formats::load_payload(&tool.output).unwrap().unwrap();
    assert!(out.starts_with("[{'doc_id'"), "{out}");
}

// events.jsonl: 184 callbacks = 10 trace_start + 10 trace_end + 82 span_start + 82 span_end;
// 10 traces (the 9 above plus "redacted weather").
#[test]
fn openai_agents_event_stream_counts_each_span_once() {
    let (store, reports) = load(&["corpus/openai-agents/events.jsonl"]);
    assert_eq!(reports[0].format, Some("openai-agents"));
    assert_eq!(store.len(), 10);
    assert_eq!(store.stats().spans_kept, 82);
    assert_eq!(store.stats().duplicate_spans, 0);
    let provisional: usize = store
        .invocations()
        .map(|i| i.spans.iter().filter(|s| s.is_provisional()).count())
        .sum();
    assert_eq!(provisional, 0);
    let tools: usize = store
        .invocations()
        .map(|i| i.summary().tool_calls.len())
        .sum();
    // function spans: 6 get_weather + 4 lookup_order + 1 cancel_order + 1 search_kb.
    assert_eq!(tools, 12);
}

#[test]
fn a_span_started_in_one_chunk_and_ended_in_the_next_is_replaced() {
    let path = fixture("corpus/openai-agents/events.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    // Split after line 20 (inside the second trace): some spans start before, end after.
    let cut = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(19)
        .map(|(i, _)| i + 1)
        .unwrap();
    let format = formats::by_name("openai-agents").unwrap();
    let mut store = Store::new();
    let first = formats::load_chunk_as(
        format,
        Origin::File(std::sync::Arc::new(path.clone())),
        &bytes[..cut],
        0,
        0,
    );
    let provisional_first = first
        .batch
        .spans
        .iter()
        .filter(|s| s.is_provisional())
        .count();
    assert!(
        provisional_first > 0,
        "the first chunk ends with open spans"
    );
    store.ingest(first.batch);
    let second = formats::load_chunk_as(
        format,
        Origin::File(std::sync::Arc::new(path)),
        &bytes[cut..],
        cut as u64,
        20,
    );
    store.ingest(second.batch);
    assert_eq!(store.stats().spans_kept, 82);
    let provisional: usize = store
        .invocations()
        .map(|i| i.spans.iter().filter(|s| s.is_provisional()).count())
        .sum();
    assert_eq!(provisional, 0);
}

#[test]
fn sensitive_data_off_is_not_captured_never_empty() {
    let (store, reports) = load(&["corpus/openai-agents/redacted_exports.jsonl"]);
    assert_eq!(store.len(), 1);
    let inv = named(&store, "redacted weather");
    assert_eq!(calls(inv), vec![ok("get_weather")]);
    let tool = inv.spans.iter().find(|s| s.kind == SpanKind::Tool).unwrap();
    assert_eq!(tool.input.state, PayloadState::NotCaptured);
    assert_eq!(tool.output.state, PayloadState::NotCaptured);
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("sensitive data off"))
    );
}

/// Per-trace facts of an OTLP/JSON file, read with serde_json only: keyed by the
/// `openarmature.invocation_id` of the trace's invocation span.
#[derive(Debug, PartialEq)]
struct TraceFacts {
    spans: usize,
    errors: usize,
    by_kind: BTreeMap<&'static str, usize>,
    tools: Vec<(String, bool)>,
    root_error: bool,
}

fn otlp_facts(rel: &str) -> BTreeMap<String, TraceFacts> {
    let text = std::fs::read_to_string(fixture(rel)).unwrap();
    let mut spans: Vec<Value> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let doc: Value = serde_json::from_str(line).unwrap();
        for rs in doc["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                spans.extend(ss["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    let attr = |span: &Value, key: &str| -> Option<String> {
        span["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .and_then(|a| a["value"].as_object()?.values().next().cloned())
            .map(|v| v.as_str().map(str::to_owned).unwrap_or(v.to_string()))
    };
    let mut by_trace: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for s in &spans {
        by_trace
            .entry(s["traceId"].as_str().unwrap().to_owned())
            .or_default()
            .push(s);
    }
    let mut out = BTreeMap::new();
    for (_, mut list) in by_trace {
        list.sort_by_key(|s| {
            s["startTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        });
        let root = list
            .iter()
            .find(|s| s["name"] == "openarmature.invocation")
            .unwrap();
        let is_error = |s: &Value| s["status"]["code"].as_i64() == Some(2);
        let mut by_kind = BTreeMap::new();
        for s in &list {
            let kind = match s["name"].as_str().unwrap() {
                "openarmature.llm.complete" => "llm",
                "openarmature.tool.call" => "tool",
                "openarmature.embedding.complete" => "embedding",
                "openarmature.rerank.complete" => "rerank",
                _ if attr(s, "openarmature.node.name").is_some() => "node",
                _ => "other",
            };
            *by_kind.entry(kind).or_insert(0) += 1;
        }
        let facts = TraceFacts {
            spans: list.len(),
            errors: list.iter().filter(|s| is_error(s)).count(),
            by_kind,
            tools: list
                .iter()
                .filter(|s| s["name"] == "openarmature.tool.call")
                .map(|s| (attr(s, "openarmature.tool.name").unwrap(), is_error(s)))
                .collect(),
            root_error: is_error(root),
        };
        out.insert(attr(root, "openarmature.invocation_id").unwrap(), facts);
    }
    out
}

fn event_facts(store: &Store) -> BTreeMap<String, TraceFacts> {
    store
        .invocations()
        .map(|inv| {
            let c = inv.summary().counts;
            let mut by_kind = BTreeMap::new();
            for kind in SpanKind::ALL {
                if c.of(kind) > 0 {
                    by_kind.insert(kind.as_str(), c.of(kind));
                }
            }
            let root = inv
                .spans
                .iter()
                .find(|s| s.name == "openarmature.invocation")
                .unwrap();
            let facts = TraceFacts {
                spans: c.spans,
                errors: c.errors,
                by_kind,
                tools: inv
                    .summary()
                    .tool_calls
                    .iter()
                    .map(|t| (t.name.clone(), t.failed))
                    .collect(),
                root_error: root.status == SpanStatus::Error,
            };
            (inv.id.clone(), facts)
        })
        .collect()
}

#[test]
fn openarmature_events_give_the_same_trees_as_their_otlp_spans() {
    for variant in ["payload-on", "payload-off", "payload-on-cap256"] {
        let (store, reports) = load(&[&format!(
            "corpus/openarmature/events/{variant}.events.jsonl"
        )]);
        assert_eq!(reports[0].format, Some("openarmature-events"), "{variant}");
        let expected = otlp_facts(&format!(
            "corpus/openarmature/otlp-json/{variant}.batch.jsonl"
        ));
        assert_eq!(event_facts(&store), expected, "{variant}");
    }
    // The same facts, spelled out for payload-on (3 traces in the OTLP file): agent_tools has
    // 11 spans and tools get_weather ok, get_stock_price failed; llm_retry_and_failure has 3 LLM
    // attempts (2 failed); tool_failure_propagates fails at the root.
    let (store, _) = load(&["corpus/openarmature/events/payload-on.events.jsonl"]);
    assert_eq!(store.len(), 3);
    let tools = store.get("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b01").unwrap();
    assert_eq!(
        calls(tools),
        vec![ok("get_weather"), failed("get_stock_price")]
    );
    assert_eq!(tools.summary().counts.spans, 11);
    assert_eq!(tools.summary().health, Health::Degraded);
    let retry = store.get("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b02").unwrap();
    let attempts: Vec<(Option<u32>, bool)> = retry
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Llm)
        .map(|s| (s.identity.attempt_index, s.status.is_error()))
        .collect();
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts.iter().filter(|(_, e)| *e).count(), 2);
    let failing = store.get("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b03").unwrap();
    assert_eq!(failing.summary().health, Health::Error);
    let tool = failing
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    assert_eq!(tool.error_type(), Some("QuoteTimeout"));
    assert_eq!(
        tool.error_message(),
        Some("quote service timed out for ACME")
    );
    assert_eq!(
        tool.tool_call_id(),
        None,
        "a standalone tool call has no call id"
    );
}

// run-direct, counted from simulation.json (assistant messages per conversation/turn and their
// tool_calls), evaluation.json (turn_behavior_failure per turn) and agent_spans.jsonl (spans per
// trace, joined through trace metadata arksim.conversation_id/turn_id).
#[test]
fn arksim_run_direct_turns_carry_verdicts_and_joined_span_trees() {
    let (store, reports) = load(&["corpus/arksim/run-direct"]);
    let formats_seen: Vec<_> = reports.iter().filter_map(|r| r.format).collect();
    assert_eq!(
        formats_seen,
        [
            "openai-agents",
            "arksim-evaluation",
            "arksim-scenarios",
            "arksim-scenarios",
            "arksim-scenarios",
            "arksim-simulation"
        ]
    );
    assert_eq!(
        store.len(),
        7,
        "7 turns with an assistant reply, no gold-only leftovers"
    );
    // (name, spans = agents spans + turn span + evaluation span, tool calls, failed eval)
    let expect: &[(&str, usize, Trajectory, bool)] = &[
        (
            "order_missing · turn 0",
            9,
            vec![failed("lookup_order")],
            true,
        ),
        (
            "order_missing · turn 1",
            9,
            vec![failed("lookup_order")],
            true,
        ),
        ("kb_only · turn 0", 9, vec![ok("search_kb")], false),
        ("kb_only · turn 1", 9, vec![failed("get_weather")], true),
        ("weather_ok · turn 0", 9, vec![ok("get_weather")], false),
        ("weather_ok · turn 1", 9, vec![ok("get_weather")], false),
        (
            "cancel_order · turn 0",
            13,
            vec![ok("get_weather"), ok("lookup_order"), ok("cancel_order")],
            true,
        ),
    ];
    for (name, spans, tools, fails) in expect {
        let inv = named(&store, name);
        assert_eq!(inv.summary().counts.spans, *spans, "{name}");
        assert_eq!(&calls(inv), tools, "{name}");
        let eval = inv.eval.as_ref().expect("every turn was evaluated");
        assert_eq!(eval.passed, !fails, "{name}");
        // The turn span roots the tree; the agents task span hangs under it.
        let rows = &inv.tree().rows;
        assert_eq!(inv.spans[rows[0].span].name, rows_root_name(inv));
        assert!(rows.iter().all(|r| !r.orphan), "{name}: nothing orphaned");
        assert!(
            inv.spans.iter().all(|s| !s.is_provisional()),
            "{name}: stand-ins replaced"
        );
    }
    let cancel = named(&store, "cancel_order · turn 0");
    let eval = cancel.eval.as_ref().unwrap();
    assert_eq!(eval.label, "disobey user request");
    assert_eq!(eval.score, Some(5.0));
    assert_eq!(
        eval.reason,
        "[Trajectory] Unexpected extra tool calls: get_weather."
    );
    assert_eq!(cancel.id, "d8f77f90-8774-4cd0-b9e7-ee12caa6b319/turn-0");
    // Golds: weather_ok's strict assertion lands on its last turn with tool calls (turn 1).
    let gold = named(&store, "weather_ok · turn 1").gold.as_ref().unwrap();
    assert_eq!(gold.match_mode.as_deref(), Some("strict"));
    assert_eq!(gold.calls.len(), 2);
    assert_eq!(gold.calls[0].args.as_ref().unwrap()["city"], "Paris");
    assert!(gold.calls[1].args.is_none(), "arg_match_mode ignore");
    assert!(named(&store, "weather_ok · turn 0").gold.is_none());
}

fn rows_root_name(inv: &Invocation) -> String {
    format!("arksim turn {}", inv.id.rsplit("turn-").next().unwrap())
}

#[test]
fn arksim_files_join_the_same_in_any_load_order() {
    let names = [
        "agent_spans.jsonl",
        "evaluation.json",
        "scenarios.json",
        "simulation.json",
    ];
    let mut forward = Store::new();
    let mut backward = Store::new();
    for name in names {
        forward.ingest(
            toolcap::sources::files::load_file(&fixture(&format!(
                "corpus/arksim/run-direct/{name}"
            )))
            .batch,
        );
    }
    for name in names.iter().rev() {
        backward.ingest(
            toolcap::sources::files::load_file(&fixture(&format!(
                "corpus/arksim/run-direct/{name}"
            )))
            .batch,
        );
    }
    let a = dump::to_json(&forward, toolcap::redact::Reveal::Redacted);
    let b = dump::to_json(&backward, toolcap::redact::Reveal::Redacted);
    assert_eq!(a["invocations"].as_array().unwrap().len(), 7);
    let key = |doc: &Value| {
        let mut out: Vec<String> = doc["invocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|inv| {
                let mut inv = inv.clone();
                // `formats` lists formats in arrival order, which is the load order.
                inv.as_object_mut().unwrap().remove("formats");
                inv.as_object_mut().unwrap().remove("format");
                inv.to_string()
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(key(&a), key(&b));
    for store in [&forward, &backward] {
        let weather = named(store, "weather_ok · turn 1");
        assert_eq!(weather.gold.as_ref().unwrap().calls.len(), 2);
        assert!(weather.eval.is_some());
    }
}

// run-explicit/simulation.json: 4 conversations, 7 assistant turns; ids are call_…, and the
// three failing tools (kb_only t1 get_weather, order_missing t0/t1 lookup_order) have
// error: null next to "An error occurred while running the tool…".
#[test]
fn arksim_explicit_capture_trap_is_flagged_and_counted_failed() {
    let (store, reports) = load(&["corpus/arksim/run-explicit/simulation.json"]);
    assert_eq!(store.len(), 7);
    let trap_warnings = reports[0]
        .warnings
        .iter()
        .filter(|w| w.contains("error: null"))
        .count();
    assert_eq!(trap_warnings, 3);
    assert_eq!(
        calls(named(&store, "kb_only · turn 1")),
        vec![failed("get_weather")]
    );
    assert_eq!(
        calls(named(&store, "order_missing · turn 0")),
        vec![failed("lookup_order")]
    );
    assert_eq!(
        calls(named(&store, "cancel_order · turn 0")),
        vec![ok("get_weather"), ok("lookup_order"), ok("cancel_order")]
    );
    let search = named(&store, "kb_only · turn 0").summary().tool_calls[0].clone();
    assert_eq!(search.call_id.as_deref(), Some("call_000237a1be31a0"));
}

#[test]
fn arksim_dedup_keeps_the_explicit_copy() {
    // Hand-written: call_1 (explicit) and span_aaa… (traced) are the same call with keys in a
    // different order; call_2 appears twice; span_bbb… is a distinct traced call.
    let (store, reports) = load(&["agents/arksim-dedup/simulation.json"]);
    assert_eq!(store.len(), 1, "the trailing user-only message is no turn");
    let inv = store.get("conv-dedup/turn-0").unwrap();
    assert_eq!(
        calls(inv),
        vec![failed("cancel_order"), ok("get_weather"), ok("get_weather")]
    );
    assert_eq!(
        inv.summary().tool_calls[0].call_id.as_deref(),
        Some("call_1")
    );
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("2 duplicate tool call(s) dropped"))
    );
}

#[test]
fn arksim_repo_examples_and_receiver_dump() {
    // 8 conversations with one assistant turn each and tool_calls null throughout.
    let (store, reports) =
        load(&["corpus/arksim/repo-examples/integration-tests.eval_test_simulation.json"]);
    assert_eq!(store.len(), 8);
    assert!(
        store
            .invocations()
            .all(|i| i.summary().tool_calls.is_empty())
    );
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w == "0 tool calls found")
    );

    // 7 scenarios, each with one tool_calls assertion; no simulation loaded, so each gold
    // stays on its own span-less invocation.
    let (store, reports) = load(&["corpus/arksim/repo-examples/customer-service.scenarios.json"]);
    assert_eq!(reports[0].format, Some("arksim-scenarios"));
    assert_eq!(store.len(), 7);
    let strict = store.get("arksim-scenario/auth_cancel_order").unwrap();
    let gold = strict.gold.as_ref().unwrap();
    assert_eq!(gold.match_mode.as_deref(), Some("strict"));
    let tools: Vec<&str> = gold.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "send_verification_code",
            "verify_customer",
            "get_order",
            "cancel_order"
        ]
    );
    assert_eq!(strict.spans.len(), 0);

    // receiver_toolcalls.json: conv-http-1#turn0 (lookup_customer ok, cancel_order error),
    // conv-http-1#turn1 (search_products), conv-http-2#turn0 (get_order, no result, no error).
    let (store, reports) = load(&["corpus/arksim/receiver/receiver_toolcalls.json"]);
    assert_eq!(reports[0].format, Some("arksim-receiver"));
    assert_eq!(store.len(), 3);
    assert_eq!(
        calls(store.get("conv-http-1/turn-0").unwrap()),
        vec![ok("lookup_customer"), failed("cancel_order")]
    );
    assert_eq!(
        calls(store.get("conv-http-1/turn-1").unwrap()),
        vec![ok("search_products")]
    );
    assert_eq!(
        calls(store.get("conv-http-2/turn-0").unwrap()),
        vec![ok("get_order")]
    );

    // The OTLP request is the OTLP parser's business, not one of these formats.
    let (_, reports) = load(&["corpus/arksim/receiver/otlp_request.json"]);
    assert!(
        !reports[0]
            .format
            .is_some_and(|f| f.starts_with("arksim") || f == "openai-agents")
    );
}

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
        let loaded = formats::load_bytes(Origin::Endpoint("test".into()), bytes);
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

#[test]
fn explicit_copies_give_way_to_joined_function_spans_by_name_and_arguments() {
    // Hand-written: the turn lists call_77 lookup_order {A} (error: null, the trap) and call_78
    // lookup_order {B}; the joined agents trace has one function span lookup_order {A} with
    // its real error. call_77 is covered by that span; call_78 keeps its stand-in.
    let files = ["simulation.json", "agent_spans.jsonl"];
    for order in [[0, 1], [1, 0]] {
        let mut store = Store::new();
        for i in order {
            let path = fixture(&format!("agents/arksim-explicit-joined/{}", files[i]));
            store.ingest(toolcap::sources::files::load_file(&path).batch);
        }
        assert_eq!(store.len(), 1);
        let inv = store.get("conv-x/turn-0").unwrap();
        // turn span + task + function span + the call_78 stand-in.
        assert_eq!(inv.summary().counts.spans, 4, "order {order:?}");
        let mut tools: Vec<(Option<String>, String, bool)> = inv
            .summary()
            .tool_calls
            .iter()
            .map(|c| (c.call_id.clone(), c.span_id.clone(), c.failed))
            .collect();
        tools.sort();
        assert_eq!(
            tools,
            vec![
                (None, "span_f1".to_owned(), true),
                (Some("call_78".to_owned()), "call_78".to_owned(), false),
            ]
        );
        let failed = inv.spans.iter().find(|s| s.span_id == "span_f1").unwrap();
        assert_eq!(
            failed.error_message(),
            Some("Error running tool (non-fatal)")
        );
    }
}

#[test]
fn openarmature_events_without_attempts_or_completion_still_make_a_tree() {
    // Hand-written: invocation inv-1 and node n1 never complete; node n1/inner completes; an
    // LlmFailedEvent with no LlmRetryAttemptEvent; a tool call with 12 KB of arguments; a
    // FailureIsolatedEvent.
    let (store, reports) = load(&["agents/openarmature-unfinished.events.jsonl"]);
    let inv = store.get("inv-1").unwrap();
    assert_eq!(inv.summary().counts.spans, 6);
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("2 node or invocation span(s) never completed"))
    );
    let llm = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    assert_eq!(llm.error_type(), Some("ProviderUnavailable"));
    let inner = inv.spans.iter().find(|s| s.name == "inner").unwrap();
    assert_eq!(llm.parent_span_id.as_deref(), Some(inner.span_id.as_str()));
    let n1 = inv.spans.iter().find(|s| s.name == "n1").unwrap();
    assert_eq!(inner.parent_span_id.as_deref(), Some(n1.span_id.as_str()));
    let tool = inv.spans.iter().find(|s| s.kind == SpanKind::Tool).unwrap();
    assert!(matches!(
        tool.input.body,
        toolcap::model::PayloadBody::InRecord { .. }
    ));
    let args = formats::load_payload(&tool.input).unwrap().unwrap();
    assert!(
        args.len() > 12_000 && args.starts_with("{\"query\":\"xxx"),
        "{}",
        &args[..20]
    );
    assert_eq!(calls(inv), vec![ok("search")]);
}

#[test]
fn evaluation_without_its_id_is_still_an_evaluation() {
    let doc = br#"{"simulation_id": "s", "conversations": [{"conversation_id": "c", "turn_scores": [
        {"turn_id": 0, "turn_score": 1.5, "turn_behavior_failure": "repetition", "turn_behavior_failure_reason": "again"}]}]}"#;
    let loaded = formats::load_bytes(Origin::Endpoint("test".into()), doc);
    assert_eq!(loaded.detection.format, Some("arksim-evaluation"));
    let (id, verdict) = &loaded.batch.evals[0];
    assert_eq!(id, "c/turn-0");
    assert!(!verdict.passed);
    assert_eq!(
        (verdict.score, verdict.label.as_str()),
        (Some(1.5), "repetition")
    );
}
