//! One test per toolscore pitfall (notes/toolscore.md §5) not covered by the corpus cases.

use super::*;

#[test]
fn pitfall_anthropic_messages_wrapper_is_not_read_as_openai() {
    // toolscore auto-detects {"messages": [...]} as OpenAI and finds 0 calls (h03).
    let loaded = load(&fixture("anthropic_wrapped_messages.json"));
    assert_eq!(loaded.loaded_format, Some("anthropic"), "{}", loaded.reason);
    let wrapped = read_json(&fixture("anthropic_wrapped_messages.json"));
    let expected: Vec<(String, Value)> = wrapped["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (b["name"].as_str().unwrap().to_owned(), b["input"].clone()))
        .collect();
    let ours: Vec<(String, Value)> = loaded
        .calls()
        .into_iter()
        .map(|c| (c.tool, c.args))
        .collect();
    assert_eq!(ours, expected);
    assert_eq!(expected.len(), 2);
    // The wrapper's model names every turn.
    let inv = loaded.only();
    assert!(
        inv.spans
            .iter()
            .filter(|s| s.kind == SpanKind::Llm)
            .all(|s| s.model() == wrapped["model"].as_str())
    );
}

#[test]
fn pitfall_anthropic_is_error_is_kept() {
    // toolscore ignores tool_result blocks and their is_error (h04: error_count 0).
    let loaded = load(&fixture("anthropic_is_error.json"));
    assert_eq!(loaded.loaded_format, Some("anthropic"));
    let calls = loaded.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].tool, "deploy");
    assert!(calls[0].is_error);
    assert_eq!(
        calls[0].error.as_deref(),
        Some("permission denied: prod is locked")
    );
    assert_eq!(calls[1].tool, "status");
    assert!(!calls[1].is_error);
    assert_eq!(calls[1].result, json!("degraded"));
    let inv = loaded.only();
    assert_eq!(inv.summary().failed_tool_calls, 1);
    assert_eq!(inv.summary().health.as_str(), "degraded");
    let turn = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    let llm = turn.llm().unwrap();
    assert_eq!(
        (llm.input_tokens.get(), llm.output_tokens.get()),
        (Some(120), Some(40))
    );
    // The log starts with a user turn: toolscore's first-item detection would fall to custom.
    // The turn's input is what led to it: the opening user message.
    let raw = read_json(&fixture("anthropic_is_error.json"));
    assert_eq!(payload_value(&turn.input()), json!([raw[0]]));
}

#[test]
fn pitfall_openai_list_starting_with_system_and_legacy_function_call() {
    // toolscore looks at the first item only: a system turn sends it to custom, 0 calls.
    let loaded = load(&fixture("openai_legacy_function_call.json"));
    assert_eq!(loaded.loaded_format, Some("openai-chat"));
    let calls = loaded.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool, "get_price");
    assert_eq!(calls[0].args, json!({"symbol": "ACME"}));
    // Legacy `function` messages pair by name.
    assert_eq!(calls[0].result, json!({"price": 12.5}));
    assert_eq!(calls[0].call_id, None);
}

#[test]
fn pitfall_openai_invalid_arguments_are_kept_as_text_and_warned() {
    // toolscore turns them into {"raw": "<string>"} silently (h02).
    let loaded = load(&fixture("openai_bad_args.json"));
    assert_eq!(loaded.loaded_format, Some("openai-chat"));
    let raw = read_json(&fixture("openai_bad_args.json"));
    let bad = raw["messages"][1]["tool_calls"][0]["function"]["arguments"].clone();
    let calls = loaded.calls();
    assert_eq!(calls[0].args, bad);
    assert!(loaded.has_warning("arguments were not valid JSON"));
    // Results pair by tool_call_id even when they come back out of order.
    assert_eq!(calls[1].result, json!("queued"));
    assert!(calls[0].is_error);
    assert_eq!(calls[0].result, json!("invalid arguments"));
    // A result for an unknown id is warned and kept on the root, not invented as a call.
    assert!(loaded.has_warning("call_zzz"));
    let inv = loaded.only();
    assert_eq!(inv.id, raw["conversation_id"].as_str().unwrap());
    let root = inv
        .spans
        .iter()
        .find(|s| s.parent_span_id.is_none())
        .unwrap();
    assert_eq!(root.events().len(), 1);
}

#[test]
fn pitfall_gemini_contents_starting_with_user_and_snake_case() {
    // toolscore sends a contents list that starts with a user turn to custom (0 calls, h17).
    let loaded = load(&fixture("gemini_snake_case.json"));
    assert_eq!(loaded.loaded_format, Some("gemini"));
    let calls = loaded.calls();
    let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(names, ["convert", "convert"]);
    assert_eq!(calls[1].args["to"], "JPY");
    // No ids: responses pair with calls of the same name in order.
    assert_eq!(calls[0].result, json!({"result": 10.8}));
    assert!(!calls[0].is_error);
    assert!(calls[1].is_error);
    assert_eq!(calls[1].error.as_deref(), Some("rate unavailable for JPY"));
}

#[test]
fn pitfall_mcp_protocol_traffic_is_session_context_not_calls() {
    // toolscore would turn `initialize` into a call and the tools/list response into `unknown`.
    let loaded = load(&fixture("mcp_full_session.jsonl"));
    assert_eq!(loaded.loaded_format, Some("mcp"));
    let lines: Vec<Value> = std::fs::read_to_string(fixture("mcp_full_session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<&str> = lines
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].as_str().unwrap())
        .collect();
    let calls = loaded.calls();
    let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(names, expected);
    assert!(!names.contains(&"initialize") && !names.contains(&"unknown"));
    let inv = loaded.only();
    let root = inv
        .spans
        .iter()
        .find(|s| s.parent_span_id.is_none())
        .unwrap();
    let protocol = lines.iter().filter(|m| {
        m["method"] != "tools/call"
            && !(m.get("method").is_none() && (2..=4).contains(&m["id"].as_i64().unwrap_or(-1)))
    });
    assert_eq!(root.events().len(), protocol.count());
    let server = lines
        .iter()
        .find(|m| m["id"] == 0 && m.get("result").is_some())
        .unwrap();
    assert_eq!(
        root.attr("mcp.server.name")
            .and_then(|v| v.held()?.as_str()),
        server["result"]["serverInfo"]["name"].as_str()
    );
    let listed = lines
        .iter()
        .find(|m| m["id"] == 1 && m.get("result").is_some())
        .unwrap();
    let tools = root.attr("mcp.server.tools").unwrap();
    let AttrValue::List(tools) = &*tools else {
        panic!("tools list")
    };
    assert_eq!(
        tools.len(),
        listed["result"]["tools"].as_array().unwrap().len()
    );
    assert!(loaded.warnings.iter().all(|w| !w.contains("unpaired")));
}

#[test]
fn pitfall_custom_falsy_values_are_kept() {
    // toolscore's `or` fallbacks lose result 0 / false, timestamp 0 and duration 0.
    let loaded = load(&fixture("custom_falsy_values.json"));
    assert_eq!(loaded.loaded_format, Some("toolscore-custom"));
    let calls = loaded.calls();
    assert_eq!(calls.len(), 3, "the item without a name is skipped");
    assert!(loaded.has_warning("call 4 has no tool name"));
    assert_eq!(calls[0].result, json!(0));
    assert_eq!(calls[0].duration_ms, 0.0);
    assert_eq!(calls[1].result, json!(false));
    assert_eq!(calls[1].duration_ms, 500.0);
    assert!(calls[2].is_error);
    assert_eq!(calls[2].error.as_deref(), Some("card declined"));
    assert_eq!(calls[2].call_id.as_deref(), Some("7"));
    let inv = loaded.only();
    let span = &inv.spans[inv.summary().tool_calls[2].span()];
    assert_eq!(span.attr("attempt").as_deref(), Some(&AttrValue::Int(2)));
}
