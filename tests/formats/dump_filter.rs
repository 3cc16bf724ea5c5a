//! `dump --filter`: the query language headless. Every expected count below was derived by
//! reading the fixture files with Python (tests/python/derive_filter_counts.py, which states how
//! each file becomes invocations), not by running this program.

use std::process::Command;

use serde_json::Value;

const CORPUS: &[&str] = &[
    // 3 OTLP traces: agent_tools (11 spans, get_stock_price fails, 533 tokens, 58 ms),
    // llm_retry_and_failure (6 spans, vllm + mock-bad-model), tool_failure_propagates (root fails).
    "tests/fixtures/corpus/openarmature/otlp-json/payload-on.batch.jsonl",
    // 7 arksim turns with an assistant message, evaluated (labels, turn scores, reasons).
    "tests/fixtures/corpus/arksim/run-direct/simulation.json",
    "tests/fixtures/corpus/arksim/run-direct/evaluation.json",
    // One anthropic message log (claude-sonnet-4-5, deploy fails) and one MCP session.
    "tests/fixtures/logs/anthropic_is_error.json",
    "tests/fixtures/logs/mcp_ids_and_errors.json",
];

fn dump(extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("dump")
        .args(CORPUS)
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run toolcap-tui")
}

fn filtered_json(query: &str, reveal: bool) -> Value {
    let mut args = vec!["--json", "--filter", query];
    if reveal {
        args.push("--reveal");
    }
    let out = dump(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{query}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn matched(query: &str, reveal: bool) -> usize {
    let doc = filtered_json(query, reveal);
    let listed = doc["invocations"].as_array().unwrap().len();
    assert_eq!(doc["filter"]["matched"], listed, "{query}");
    assert_eq!(
        doc["filter"]["of"], 12,
        "{query}: the corpus has 12 invocations"
    );
    listed
}

#[test]
fn filter_counts_equal_counts_derived_from_the_files() {
    // (query, reveal, expected, where the number comes from)
    let cases: &[(&str, bool, usize, &str)] = &[
        (
            "\"quote service timed out\"",
            false,
            2,
            "OTLP status.message of get_stock_price in 2 traces",
        ),
        (
            "\"(non-fatal)\"",
            false,
            3,
            "arksim tool_calls[].error, only in error messages: 3 turns",
        ),
        (
            "is:error",
            false,
            1,
            "OTLP roots with status.code 2: tool_failure_propagates",
        ),
        (
            "is:degraded",
            false,
            7,
            "2 OTLP + 3 arksim turns with a tool error + anthropic + mcp",
        ),
        (
            "is:eval-failed",
            false,
            4,
            "turn_behavior_failure other than 'no failure'",
        ),
        ("score<3", false, 3, "turn_score below 3"),
        ("\"disobey user request\"", false, 4, "evaluator label text"),
        (
            "tool:get_stock_price",
            false,
            2,
            "openarmature.tool.name in 2 traces",
        ),
        (
            "tool:lookup_order",
            false,
            3,
            "arksim assistant tool_calls named lookup_order",
        ),
        (
            "model:mock-gpt",
            false,
            1,
            "gen_ai.request.model mock-gpt-4o: agent_tools",
        ),
        (
            "model:claude",
            false,
            1,
            "the anthropic log's assistant model",
        ),
        (
            "provider:vllm",
            false,
            1,
            "gen_ai.system vllm: llm_retry_and_failure",
        ),
        ("name:ask_bad_model", false, 1, "span named ask_bad_model"),
        (
            "attr:openarmature.error.category=node_exception",
            false,
            1,
            "tool_failure_propagates",
        ),
        (
            "attr:openarmature.llm.retry_reason",
            false,
            1,
            "the retried LLM attempt",
        ),
        ("id:84e5", false, 1, "traceId prefix"),
        ("id:call_weather", false, 1, "tool call id call_weather_01"),
        (
            "conv:8f9099c6",
            false,
            2,
            "order_missing's two answered turns",
        ),
        ("format:mcp", false, 1, "the MCP session"),
        (
            "tools>1",
            false,
            4,
            "agent_tools 2, cancel_order 3, anthropic 2, mcp 4 tool calls",
        ),
        (
            "spans>5 format:otlp",
            false,
            2,
            "traces with 11 and 6 spans",
        ),
        (
            "tokens>=500",
            false,
            1,
            "agent_tools: 448 in + 85 out; anthropic has 160",
        ),
        (
            "dur>50ms format:otlp",
            false,
            1,
            "agent_tools spans 58.1 ms end to end",
        ),
        (
            "tool:get_stock_price -is:error",
            false,
            1,
            "agent_tools (its root did not fail)",
        ),
        ("provider:vllm | model:claude", false, 2, "one each"),
        (
            "(format:mcp OR format:anthropic) is:degraded",
            false,
            2,
            "both logs have a failed call",
        ),
        // Text only in a tool's arguments (MCP slow_query {"sql": "select 1"}): payload text
        // is searched only when revealed.
        (
            "\"select 1\"",
            false,
            0,
            "arguments are payloads: redacted, never searched",
        ),
        ("\"select 1\"", true, 1, "revealed: the MCP session"),
        // In order_missing's arguments and user messages, both payloads.
        ("\"ORD-9999\"", false, 0, "payloads only"),
        ("\"ORD-9999\"", true, 2, "order_missing turns 0 and 1"),
    ];
    let mut wrong = Vec::new();
    for &(query, reveal, expected, why) in cases {
        let got = matched(query, reveal);
        if got != expected {
            wrong.push(format!(
                "{query} (reveal {reveal}): got {got}, derived {expected} ({why})"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn json_lists_the_matched_span_ids_per_invocation() {
    let doc = filtered_json("tool:get_stock_price", false);
    let mut pairs: Vec<(String, Vec<String>)> = doc["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|inv| {
            let spans = inv["matched_span_ids"].as_array().unwrap();
            (
                inv["id"].as_str().unwrap().to_owned(),
                spans
                    .iter()
                    .map(|s| s.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    pairs.sort();
    // The spanIds of the spans whose openarmature.tool.name is get_stock_price.
    assert_eq!(
        pairs,
        vec![
            (
                "a49253afd27ae0bd40f8179c6e2fbb2e".to_owned(),
                vec!["f101f2c788451de0".to_owned()]
            ),
            (
                "ee4eed8ab6518572116764482a87343f".to_owned(),
                vec!["e9fe5f905344e301".to_owned()]
            ),
        ]
    );
    // Unfiltered output carries neither the filter block nor matched ids.
    let out = dump(&["--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.get("filter").is_none());
    assert!(doc["invocations"][0].get("matched_span_ids").is_none());
}

#[test]
fn text_output_says_k_of_n_and_marks_matched_spans() {
    let out = dump(&["--filter", "tool:get_stock_price is:error"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("filter: tool:get_stock_price is:error — 1 of 12 invocations\n"),
        "{text}"
    );
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with("» ")).collect();
    // The failed tool span (tool term) and, for is:error, the failed spans of that run:
    // the tool, the call_tool node and the root.
    assert_eq!(marked.len(), 3, "{text}");
    assert!(
        marked.iter().any(|l| l.contains("tool=get_stock_price")),
        "{text}"
    );
    assert!(!text.contains("agent_tools"), "{text}");
}

#[test]
fn a_bad_query_is_reported_with_its_position_and_exit_2() {
    let out = dump(&["--filter", "tool:search (is:error"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "error: --filter: unclosed parenthesis\n  tool:search (is:error\n              ^\n"
    );
}

/// A query that starts with `-` (a negated term) is the option's value, not another flag, for
/// every command that takes a query.
#[test]
fn a_query_starting_with_a_hyphen_is_a_value() {
    assert_eq!(
        matched("-is:error", false),
        11,
        "12 invocations, 1 is:error"
    );
    let report = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("report")
        .args(CORPUS)
        .args(["--filter", "-is:error"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run toolcap-tui");
    assert_eq!(
        report.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    assert!(!report.stdout.is_empty());
}
