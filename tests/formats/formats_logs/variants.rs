//! Each format's variants, hostile inputs, the directory walk, tailing and the real binary.

use super::*;

#[test]
fn mcp_integer_and_string_ids_never_collide() {
    let loaded = load(&fixture("mcp_ids_and_errors.json"));
    assert_eq!(loaded.loaded_format, Some("mcp"));
    let calls = loaded.calls();
    let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(
        names,
        ["read_file", "write_file", "slow_query", "delete_all"]
    );
    // id 1 (integer) got the text result; id "1" (string) got the JSON-RPC error.
    assert_eq!(calls[0].result["content"][0]["text"], "hello");
    assert!(!calls[0].is_error);
    assert!(calls[1].is_error);
    assert_eq!(
        calls[1].error_type.as_deref(),
        Some("JSON-RPC error -32602")
    );
    assert!(loaded.has_warning("arguments were not valid JSON"));
    // No response for id 2: unset, not failed, and warned.
    assert!(!calls[2].is_error);
    assert_eq!(calls[2].result, Value::Null);
    assert!(loaded.has_warning("id 2 (slow_query) got no response"));
    // isError results are failures with their text.
    assert!(calls[3].is_error);
    assert_eq!(calls[3].error.as_deref(), Some("refused: dry-run mode"));
    // The response to id 7 has no request: warned, never a fake call.
    assert!(loaded.has_warning("unpaired JSON-RPC response (id 7)"));
}

#[test]
fn mcp_wrapped_messages_with_timestamps_keep_real_durations() {
    let loaded = load(&fixture("mcp_wrapped_timestamps.jsonl"));
    assert_eq!(loaded.loaded_format, Some("mcp"));
    let calls = loaded.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].start, 1_760_000_000_000_000_000);
    // Request at .0 s, response at 1.5 s.
    assert!((calls[0].duration_ms - 1500.0).abs() < 1e-6);
    let inv = loaded.only();
    let root = inv
        .spans
        .iter()
        .find(|s| s.parent_span_id.is_none())
        .unwrap();
    assert_eq!(root.events().len(), 1, "the progress notification");
}

#[test]
fn openai_choices_response_uses_its_id_model_and_usage() {
    let loaded = load(&fixture("openai_choices_response.json"));
    let raw = read_json(&fixture("openai_choices_response.json"));
    let inv = loaded.only();
    assert_eq!(inv.id, raw["id"].as_str().unwrap());
    let turn = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    let llm = turn.llm().unwrap();
    assert_eq!(turn.model(), raw["model"].as_str());
    assert_eq!(
        llm.input_tokens.get().map(u64::from),
        raw["usage"]["prompt_tokens"].as_u64()
    );
    assert_eq!(
        llm.output_tokens.get().map(u64::from),
        raw["usage"]["completion_tokens"].as_u64()
    );
    assert_eq!(*llm.finish_reasons, ["tool_calls"]);
    assert_eq!(llm.requested_tool_calls.len(), 1);
    assert_eq!(llm.requested_tool_calls[0].id.as_deref(), Some("call_w"));
    let calls = loaded.calls();
    assert_eq!(calls[0].args, json!({"city": "Oslo"}));
    // A single response has no tool result: unset, with a warning that says so.
    assert!(loaded.has_warning("1 tool call(s) have no result"));
}

#[test]
fn jsonl_message_log_reports_the_bad_line_and_keeps_the_rest() {
    let loaded = load(&fixture("openai_messages_bad_line.jsonl"));
    assert_eq!(loaded.loaded_format, Some("openai-chat"));
    assert_eq!(loaded.errors.len(), 1);
    assert!(
        loaded.errors[0].starts_with("Some(3)"),
        "{:?}",
        loaded.errors
    );
    let calls = loaded.calls();
    assert_eq!(calls.len(), 2);
    // c1's result was on the broken line; c2's arrived.
    assert_eq!(calls[0].result, Value::Null);
    assert_eq!(
        calls[1].result_text.as_deref(),
        Some("6"),
        "the string \"6\" as recorded"
    );
    let inv = loaded.only();
    let span = &inv.spans[inv.summary().tool_calls[1].span()];
    assert_eq!(span.line.map(u64::from), Some(4));
}

#[test]
fn langchain_messages_pair_tool_status_errors() {
    let loaded = load(&fixture("langchain_messages.json"));
    assert_eq!(loaded.loaded_format, Some("langchain"));
    let calls = loaded.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].result, json!("acme/toolcap"));
    assert!(!calls[0].is_error);
    assert!(calls[1].is_error);
    assert_eq!(calls[1].error.as_deref(), Some("403: issues are disabled"));
    let inv = loaded.only();
    let turn = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    assert_eq!(turn.model(), Some("gpt-4o-mini"));
    assert_eq!(inv.summary().counts.llm, 2);
}

#[test]
fn langchain_intermediate_steps_keep_observations() {
    let loaded = load(&fixture("langchain_intermediate_steps.json"));
    assert_eq!(loaded.loaded_format, Some("langchain"));
    let raw = read_json(&fixture("langchain_intermediate_steps.json"));
    let steps = raw["intermediate_steps"].as_array().unwrap();
    let calls = loaded.calls();
    assert_eq!(calls.len(), steps.len());
    for (call, step) in calls.iter().zip(steps) {
        assert_eq!(call.tool, step[0]["tool"]);
        assert_eq!(call.args, step[0]["tool_input"]);
        let recorded = step[1].as_str().expect("observations are strings here");
        assert_eq!(call.result_text.as_deref(), Some(recorded));
    }
}

#[test]
fn gold_files_are_not_traces() {
    let loaded = load(&fixture("expected_gold.json"));
    assert_eq!(loaded.loaded_format, None);
    assert!(!files::is_candidate(&fixture("expected_gold.json")));
    assert!(!files::is_candidate(
        &Path::new(CORPUS).join("v01_custom_exact_with_timing/gold.json")
    ));
    assert!(!files::is_candidate(
        &Path::new(CORPUS).join("v01_custom_exact_with_timing/toolscore-record.json")
    ));
    assert!(files::is_candidate(&case("v01_custom_exact_with_timing")));
    let gold = read_json(&fixture("expected_gold.json"));
    let (spec, problems) =
        toolcap::gold::source::parse_toolscore_gold(&gold, "expected_gold.json").unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(spec.calls.len(), gold.as_array().unwrap().len());
    assert_eq!(spec.calls[0].tool, gold[0]["tool"].as_str().unwrap());
}

#[test]
fn the_corpus_walk_finds_one_trace_per_case() {
    let found = files::trace_files(Path::new(CORPUS)).unwrap();
    let traces: Vec<&PathBuf> = found
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "trace.json"))
        .collect();
    let cases = read_json(&Path::new(CORPUS).join("manifest.json"))["cases"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(traces.len(), cases);
    assert!(found.iter().all(|p| !p.ends_with("gold.json")));
}

#[test]
fn other_corpora_are_not_claimed_by_log_formats() {
    const MINE: &[&str] = &[
        "openai-chat",
        "anthropic",
        "gemini",
        "langchain",
        "mcp",
        "toolscore-custom",
    ];
    let root = Path::new("tests/fixtures/corpus");
    let mut checked = 0;
    for dir in [
        "arksim",
        "openai-agents",
        "openarmature",
        "otel-genai",
        "otlp-python-sdk",
    ] {
        for path in files::trace_files(&root.join(dir)).unwrap() {
            let bytes = std::fs::read(&path).unwrap();
            let origin = toolcap::model::Origin::File(std::sync::Arc::new(path.clone()));
            let input = formats::Input::new(&origin, &bytes, None);
            for format in formats::REGISTRY
                .iter()
                .filter(|f| MINE.contains(&f.name()))
            {
                assert_eq!(
                    format.detect(&input),
                    None,
                    "{} claims {}",
                    format.name(),
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 50);
}

#[test]
fn hostile_inputs_do_not_panic() {
    let origin = toolcap::model::Origin::File(std::sync::Arc::new("hostile.json".into()));
    let deep = "[".repeat(100_000);
    let cases: Vec<Vec<u8>> = vec![
        br#"{"messages": [{"role": "assistant", "tool_calls": [{"function": 5}]}]}"#.to_vec(),
        br#"{"messages": [{"role": "tool", "tool_call_id": 3}, {"role": "assistant", "tool_calls": "x"}]}"#.to_vec(),
        br#"[{"role":"assistant","content":[{"type":"tool_use","input":null}]},{"role":"user","content":[{"type":"tool_result"}]}]"#.to_vec(),
        br#"{"candidates": [{"content": {"parts": [{"functionCall": null}, {"functionCall": {"args": "{"}}]}}]}"#.to_vec(),
        br#"[{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/call", "params": 3}, {"jsonrpc":"2.0","id":null,"error":"boom"}, 5]"#.to_vec(),
        br#"{"calls": [{"tool": "t", "timestamp": 1e308, "duration": -1}, {"tool": "u", "duration": 1e300}]}"#.to_vec(),
        br#"[[{"tool": "a"}, 1], [{"tool": 5}, null]]"#.to_vec(),
        deep.into_bytes(),
    ];
    for bytes in cases {
        let loaded = formats::load_bytes(origin.clone(), &bytes);
        let mut store = Store::new();
        store.ingest(loaded.batch);
    }
}

// ---------------------------------------------------------------------------------------------
// The real binary.

#[test]
fn dump_explain_names_formats_and_warnings() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args([
            "dump",
            "--explain",
            LOGS,
            &case("v10_empty_gold_empty_trace").to_string_lossy(),
        ])
        .output()
        .expect("binary runs");
    let text = String::from_utf8_lossy(&output.stdout);
    for name in [
        "openai-chat",
        "anthropic",
        "gemini",
        "langchain",
        "mcp",
        "toolscore-custom",
    ] {
        assert!(
            text.contains(&format!("— {name} (")),
            "{name} missing:\n{text}"
        );
    }
    for warning in [
        "0 tool calls found",
        "arguments were not valid JSON",
        "unpaired JSON-RPC response",
    ] {
        assert!(text.contains(warning), "{warning} missing:\n{text}");
    }
    // Gold files are skipped by the walk, with a note saying so.
    assert!(text.contains("expected_gold.json"), "{text}");
    assert!(
        text.lines()
            .filter(|l| l.contains("expected_gold.json"))
            .all(|l| l.contains("skipped: a gold trajectory, not a trace")),
        "gold files are skipped by the walk:\n{text}"
    );
    assert_eq!(output.status.code(), Some(0));

    let json_out = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args([
            "dump",
            "--json",
            &fixture("anthropic_is_error.json").to_string_lossy(),
        ])
        .output()
        .expect("binary runs");
    let doc: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    let inv = &doc["invocations"][0];
    assert_eq!(inv["format"], "anthropic");
    assert_eq!(inv["status"], "degraded");
    assert_eq!(inv["tool_calls"][0]["status"], "error");
    assert_eq!(inv["tool_calls"][1]["status"], "ok");
    assert_eq!(inv["counts"]["tool"], 2);
    assert_eq!(inv["counts"]["llm"], 2);
}

#[test]
fn a_tailed_jsonl_chunk_adds_to_the_same_run_in_order() {
    let path = fixture("mcp_full_session.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    // Split after the fourth line (the first tools/call), as a tailer would hand it over.
    let cut: usize = text.lines().take(4).map(|l| l.len() + 1).sum();
    let origin = toolcap::model::Origin::File(std::sync::Arc::new(path.clone()));
    let mcp = formats::by_name("mcp").unwrap();
    let first = formats::load_bytes(origin.clone(), &bytes[..cut]);
    assert_eq!(first.detection.format, Some("mcp"));
    let rest = formats::load_chunk_as(mcp, origin, &bytes[cut..], cut as u64, 4);
    let mut store = Store::new();
    store.ingest(first.batch);
    store.ingest(rest.batch);
    assert_eq!(store.len(), 1);
    let inv = store.invocations().next().unwrap();
    let names: Vec<String> = inv
        .summary()
        .tool_calls
        .iter()
        .map(|c| c.name(&inv.spans).to_string())
        .collect();
    let expected: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "tools/call")
        .filter_map(|m| m["params"]["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(
        store.stats().duplicate_spans,
        1,
        "only the second chunk's root repeats"
    );
}

#[test]
fn langchain_modern_tool_calls_and_actions_hang_off_the_root() {
    let loaded = load(&fixture("langchain_tool_calls.json"));
    assert_eq!(loaded.loaded_format, Some("langchain"));
    let raw = read_json(&fixture("langchain_tool_calls.json"));
    let items = raw.as_array().unwrap();
    let calls = loaded.calls();
    assert_eq!(calls.len(), items.len());
    for (call, item) in calls.iter().zip(items) {
        let name = item.get("name").or_else(|| item.get("action")).unwrap();
        assert_eq!(call.tool, *name);
        let args = item
            .get("args")
            .or_else(|| item.get("action_input"))
            .unwrap();
        assert_eq!(call.args, *args);
        assert_eq!(call.call_id.as_deref(), item["id"].as_str());
    }
    // No reasoning log: no LLM turns, every call is a child of the root.
    let inv = loaded.only();
    assert_eq!(inv.summary().counts.llm, 0);
    assert!(inv.summary().tool_calls.iter().all(|c| {
        inv.spans[c.span()]
            .parent_span_id
            .as_ref()
            .is_some_and(|p| p == "root")
    }));
}

#[test]
fn big_payloads_stay_on_disk_and_load_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    let big_result = "r".repeat(100_000);
    let log = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "dump", "arguments": "{\"n\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big_result},
    ]);
    std::fs::write(&path, log.to_string()).unwrap();
    let loaded = load(&path);
    let inv = loaded.only();
    let span = &inv.spans[inv.summary().tool_calls[0].span()];
    assert!(matches!(
        span.output().body,
        toolcap::model::PayloadBody::InRecord { .. }
    ));
    assert_eq!(span.output().bytes, big_result.len() as u64);
    assert_eq!(
        formats::load_payload(&span.output()).unwrap().as_deref(),
        Some(big_result.as_str())
    );
    // Small payloads stay inline.
    assert_eq!(span.input().inline_text(), Some("{\"n\": 1}"));
    // A file rewritten without that payload says so instead of showing something else.
    std::fs::write(&path, "[]").unwrap();
    assert!(formats::load_payload(&span.output()).is_err());
}

#[test]
fn agent_transcript_lines_are_read_as_anthropic_with_real_time() {
    let loaded = load(&fixture("agent_transcript.jsonl"));
    assert_eq!(loaded.loaded_format, Some("anthropic"), "{}", loaded.reason);
    let lines: Vec<Value> = std::fs::read_to_string(fixture("agent_transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let uses: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    let calls = loaded.calls();
    assert_eq!(calls.len(), uses.len());
    for (call, block) in calls.iter().zip(&uses) {
        assert_eq!(call.tool, block["name"]);
        assert_eq!(call.args, block["input"]);
    }
    assert!(calls[0].is_error);
    assert_eq!(calls[0].error.as_deref(), Some("test parse ... FAILED"));
    // Bash ran from its line (10:00:02.5) to its result's line (10:00:09): 6.5 s, less the
    // synthetic nanosecond that orders a call after its turn.
    assert!((calls[0].duration_ms - 6500.0).abs() < 1e-3);
    assert!((calls[1].duration_ms - 250.0).abs() < 1e-3);
    let inv = loaded.only();
    assert_eq!(inv.id, "sess-7f3a");
    // Two lines of response msg_01 are one turn; msg_02 is the second.
    assert_eq!(inv.summary().counts.llm, 2);
    let first_turn = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    let llm = first_turn.llm().unwrap();
    assert_eq!(llm.output_tokens, Some(42));
    assert_eq!(*llm.finish_reasons, ["tool_use"]);
    // The summary line is kept on the root.
    let root = inv
        .spans
        .iter()
        .find(|s| s.parent_span_id.is_none())
        .unwrap();
    assert_eq!(root.events().len(), 1);
}

#[test]
fn a_broken_first_jsonl_line_does_not_hide_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let text = [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a""#,
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "b", "arguments": {}}}"#,
        r#"{"jsonrpc": "2.0", "id": 2, "result": {"content": []}}"#,
    ]
    .join("\n");
    std::fs::write(&path, text).unwrap();
    let loaded = load(&path);
    assert_eq!(loaded.loaded_format, Some("mcp"));
    assert_eq!(loaded.errors.len(), 1);
    assert!(
        loaded.errors[0].starts_with("Some(1)"),
        "{:?}",
        loaded.errors
    );
    let names: Vec<String> = loaded.calls().into_iter().map(|c| c.tool).collect();
    assert_eq!(names, ["b"]);
}

#[test]
fn openai_responses_items_pair_outputs_by_call_id() {
    let loaded = load(&fixture("openai_responses_items.json"));
    assert_eq!(
        loaded.loaded_format,
        Some("openai-chat"),
        "{}",
        loaded.reason
    );
    let raw = read_json(&fixture("openai_responses_items.json"));
    let items = raw.as_array().unwrap();
    let calls = loaded.calls();
    let expected: Vec<&str> = items
        .iter()
        .filter(|i| i["type"].as_str().is_some_and(|t| t.ends_with("_call")))
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(names, expected);
    for call in &calls[..2] {
        let id = call.call_id.as_deref().unwrap();
        let output = items
            .iter()
            .find(|i| i["type"] == "function_call_output" && i["call_id"] == id)
            .unwrap();
        assert_eq!(call.result_text.as_deref(), output["output"].as_str());
    }
    assert!(calls[2].is_error);
    assert_eq!(calls[2].error.as_deref(), Some("upstream timeout"));
    // Reasoning + both calls are one turn; the MCP call and the answer are the second.
    let inv = loaded.only();
    assert_eq!(inv.summary().counts.llm, 2);
}
