//! arksim runs: turns with their verdicts, joined agent span trees, explicit tool-call copies.

use super::*;

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
        assert_eq!(inv.summary().counts.spans as usize, *spans, "{name}");
        assert_eq!(&calls(inv), tools, "{name}");
        let eval = inv.eval().expect("every turn was evaluated");
        assert_eq!(eval.passed, !fails, "{name}");
        // The turn span roots the tree; the agents task span hangs under it.
        let rows = &inv.tree().rows;
        assert_eq!(inv.spans[rows[0].span()].name, rows_root_name(inv));
        assert!(rows.iter().all(|r| !r.orphan), "{name}: nothing orphaned");
        assert!(
            inv.spans.iter().all(|s| !s.is_provisional()),
            "{name}: stand-ins replaced"
        );
    }
    let cancel = named(&store, "cancel_order · turn 0");
    let eval = cancel.eval().unwrap();
    assert_eq!(eval.label, "disobey user request");
    assert_eq!(eval.score, Some(5.0));
    assert_eq!(
        eval.reason,
        "[Trajectory] Unexpected extra tool calls: get_weather."
    );
    assert_eq!(
        cancel.id,
        "d0340109-c769-4444-a824-63e9fd117ab7/d8f77f90-8774-4cd0-b9e7-ee12caa6b319/turn-0"
    );
    // Golds: weather_ok's strict assertion lands on its last turn with tool calls (turn 1).
    let gold = named(&store, "weather_ok · turn 1").gold().unwrap();
    assert_eq!(gold.match_mode.as_deref(), Some("strict"));
    assert_eq!(gold.calls.len(), 2);
    assert_eq!(gold.calls[0].args.as_ref().unwrap()["city"], "Paris");
    assert!(gold.calls[1].args.is_none(), "arg_match_mode ignore");
    assert!(named(&store, "weather_ok · turn 0").gold().is_none());
}

fn rows_root_name(inv: &Invocation) -> String {
    format!(
        "arksim turn {}",
        inv.id.text().rsplit("turn-").next().unwrap()
    )
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
        assert_eq!(weather.gold().unwrap().calls.len(), 2);
        assert!(weather.eval().is_some());
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
    let kb_only = named(&store, "kb_only · turn 0");
    let search = kb_only.summary().tool_calls[0].clone();
    assert_eq!(search.call_id(&kb_only.spans), Some("call_000237a1be31a0"));
}

#[test]
fn arksim_dedup_keeps_the_explicit_copy() {
    // Hand-written: call_1 (explicit) and span_aaa… (traced) are the same call with keys in a
    // different order; call_2 appears twice; span_bbb… is a distinct traced call.
    let (store, reports) = load(&["agents/arksim-dedup/simulation.json"]);
    assert_eq!(store.len(), 1, "the trailing user-only message is no turn");
    let inv = store.get("dedup-sim/conv-dedup/turn-0").unwrap();
    assert_eq!(
        calls(inv),
        vec![failed("cancel_order"), ok("get_weather"), ok("get_weather")]
    );
    assert_eq!(
        inv.summary().tool_calls[0].call_id(&inv.spans),
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
    let gold = strict.gold().unwrap();
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
        let inv = store.get("explicit-joined/conv-x/turn-0").unwrap();
        // turn span + task + function span + the call_78 stand-in.
        assert_eq!(inv.summary().counts.spans, 4, "order {order:?}");
        let mut tools: Vec<(Option<String>, String, bool)> = inv
            .summary()
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.call_id(&inv.spans).map(str::to_owned),
                    inv.spans[c.span()].span_id.to_string(),
                    c.failed,
                )
            })
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
fn evaluation_without_its_id_is_still_an_evaluation() {
    let doc = br#"{"simulation_id": "s", "conversations": [{"conversation_id": "c", "turn_scores": [
        {"turn_id": 0, "turn_score": 1.5, "turn_behavior_failure": "repetition", "turn_behavior_failure_reason": "again"}]}]}"#;
    let loaded = formats::load_bytes(Origin::endpoint("test"), doc);
    assert_eq!(loaded.detection.format, Some("arksim-evaluation"));
    let (id, verdict) = &loaded.batch.evals[0];
    assert_eq!(id, "s/c/turn-0");
    assert!(!verdict.passed);
    assert_eq!(
        (verdict.score, verdict.label.as_str()),
        (Some(1.5), "repetition")
    );
}
