use super::*;
use serde_json::json;

fn read(value: Value, side: Side) -> Vec<Message> {
    read_messages(&value.to_string(), side).unwrap_or_else(|| panic!("not messages: {value}"))
}

fn call(id: Option<&str>, name: &str, arguments: Value) -> Part {
    Part::ToolCall {
        id: id.map(str::to_owned),
        name: name.to_owned(),
        arguments,
    }
}

fn text(text: &str) -> Part {
    Part::Text(text.to_owned())
}

#[test]
fn genai_semantic_convention_messages_read_with_every_part_kind() {
    let messages = read(
        json!([
            {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"},
                                       {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0K"}]},
            {"role": "assistant", "parts": [{"type": "reasoning", "content": "Use the tool."},
                                            {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}],
             "finish_reason": "tool_call"},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"error": {"type": "Timeout", "message": "timed out"}}}]}
        ]),
        Side::Input,
    );
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[0].role, Role::System);
    assert_eq!(messages[0].parts, vec![text("Be brief.")]);
    assert_eq!(
        messages[1].parts[1],
        Part::Media {
            kind: "image/png".into(),
            bytes: Some(8)
        }
    );
    assert_eq!(
        messages[2].parts[0],
        Part::Reasoning("Use the tool.".into())
    );
    assert_eq!(
        messages[2].parts[1],
        call(Some("c1"), "get_weather", json!({"city": "Paris"}))
    );
    assert_eq!(messages[2].finish_reason.as_deref(), Some("tool_call"));
    assert_eq!(
        messages[3].parts,
        vec![Part::ToolResult {
            id: Some("c1".into()),
            content: "timed out".into(),
            is_error: true
        }]
    );
}

#[test]
fn openai_chat_messages_tool_calls_and_legacy_function_calls() {
    let messages = read(
        json!([
            {"role": "system", "content": "You can look up stock prices."},
            {"role": "user", "content": [{"type": "text", "text": "Price of ACME?"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "get_price", "arguments": "{\"symbol\": \"ACME\"}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "42.0"}
        ]),
        Side::Input,
    );
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1].parts[0], text("Price of ACME?"));
    assert!(matches!(messages[1].parts[1], Part::Media { .. }));
    assert_eq!(
        messages[2].parts,
        vec![call(
            Some("call_a"),
            "get_price",
            json!("{\"symbol\": \"ACME\"}")
        )]
    );
    assert_eq!(
        messages[3].parts,
        vec![Part::ToolResult {
            id: Some("call_a".into()),
            content: "42.0".into(),
            is_error: false
        }]
    );
    let legacy = read(
        json!({"role": "assistant", "content": null, "function_call": {"name": "get_price", "arguments": {"symbol": "ACME"}}}),
        Side::Output,
    );
    assert_eq!(
        legacy[0].parts,
        vec![call(None, "get_price", json!({"symbol": "ACME"}))]
    );
}

#[test]
fn a_chat_completion_response_reads_its_choices() {
    let messages = read(
        json!({"id": "x", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}]}),
        Side::Output,
    );
    assert_eq!(messages[0].parts, vec![text("Done.")]);
    assert_eq!(messages[0].finish_reason.as_deref(), Some("stop"));
}

#[test]
fn openai_responses_items_join_the_message_they_belong_to() {
    let messages = read(
        json!([
            {"id": "rs_1", "summary": [{"type": "summary_text", "text": "Two cities."}], "type": "reasoning"},
            {"arguments": "{\"city\":\"Rome\"}", "call_id": "call_rome", "id": "fc_1", "name": "get_weather", "type": "function_call"},
            {"type": "function_call_output", "call_id": "call_rome", "output": "sunny"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Rome is sunny."}]}
        ]),
        Side::Output,
    );
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0].role, Role::Assistant);
    assert_eq!(messages[0].parts.len(), 2);
    assert_eq!(
        messages[0].parts[1],
        call(
            Some("call_rome"),
            "get_weather",
            json!("{\"city\":\"Rome\"}")
        )
    );
    assert_eq!(messages[1].role, Role::Tool);
    assert_eq!(messages[2].parts, vec![text("Rome is sunny.")]);
}

#[test]
fn anthropic_content_blocks_tool_use_and_tool_results() {
    let output = read(
        json!({"content": [{"text": "Deploying.", "type": "text"}, {"id": "toolu_a", "input": {"service": "api"}, "name": "deploy", "type": "tool_use"}],
               "model": "claude", "role": "assistant", "stop_reason": "tool_use", "type": "message"}),
        Side::Output,
    );
    assert_eq!(
        output[0].parts,
        vec![
            text("Deploying."),
            call(Some("toolu_a"), "deploy", json!({"service": "api"}))
        ]
    );
    assert_eq!(output[0].finish_reason.as_deref(), Some("tool_use"));
    let input = read(
        json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "is_error": true,
                                              "content": [{"type": "text", "text": "permission denied"}]},
                                             {"type": "thinking", "thinking": "hmm"}]}]),
        Side::Input,
    );
    assert_eq!(
        input[0].parts[0],
        Part::ToolResult {
            id: Some("toolu_a".into()),
            content: "permission denied".into(),
            is_error: true
        }
    );
    assert_eq!(input[0].parts[1], Part::Reasoning("hmm".into()));
}

#[test]
fn gemini_parts_in_both_spellings() {
    let messages = read(
        json!({"contents": [
            {"role": "user", "parts": [{"text": "Convert 10 EUR"}]},
            {"role": "model", "parts": [{"function_call": {"name": "convert", "args": {"amount": 10}}},
                                        {"functionCall": {"name": "convert", "args": {"amount": 11}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "convert", "response": {"usd": 10.8}}},
                                       {"inlineData": {"mimeType": "image/jpeg", "data": "abcd"}}]}
        ]}),
        Side::Input,
    );
    assert_eq!(messages[1].role, Role::Assistant);
    assert_eq!(
        messages[1].parts,
        vec![
            call(None, "convert", json!({"amount": 10})),
            call(None, "convert", json!({"amount": 11}))
        ]
    );
    assert!(
        matches!(&messages[2].parts[0], Part::ToolResult { content, .. } if content.contains("10.8"))
    );
    assert_eq!(
        messages[2].parts[1],
        Part::Media {
            kind: "image/jpeg".into(),
            bytes: Some(4)
        }
    );
}

#[test]
fn langchain_messages_plain_and_serialized() {
    let plain = read(
        json!([{"content": "Find the repo.", "type": "human"},
               {"content": "", "type": "ai", "tool_calls": [{"args": {"query": "toolcap"}, "id": "lc_1", "name": "find_repo", "type": "tool_call"}],
                "response_metadata": {"finish_reason": "tool_calls"}},
               {"content": "acme/toolcap", "type": "tool", "tool_call_id": "lc_1"}]),
        Side::Input,
    );
    assert_eq!(plain[0].role, Role::User);
    assert_eq!(
        plain[1].parts,
        vec![call(Some("lc_1"), "find_repo", json!({"query": "toolcap"}))]
    );
    assert_eq!(plain[1].finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(plain[2].role, Role::Tool);
    let serialized = read(
        json!([{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
                "kwargs": {"content": "hi"}}]),
        Side::Input,
    );
    assert_eq!(serialized[0].role, Role::User);
    assert_eq!(serialized[0].parts, vec![text("hi")]);
}

#[test]
fn a_bare_list_of_tool_calls_is_the_model_asking_for_them() {
    let messages = read(
        json!([{"arguments": {"city": "Paris"}, "id": "call_weather_01", "name": "get_weather"},
               {"arguments": {"ticker": "ACME"}, "id": "call_stock_02", "name": "get_stock_price"}]),
        Side::Output,
    );
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].role, Role::Assistant);
    assert_eq!(messages[0].parts.len(), 2);
}

#[test]
fn a_bare_string_is_an_answer_only_on_the_output_side() {
    assert_eq!(
        read(json!("It is 18 degrees."), Side::Output)[0].parts,
        vec![text("It is 18 degrees.")]
    );
    assert_eq!(read_messages("\"It is 18 degrees.\"", Side::Input), None);
}

#[test]
fn other_shapes_are_not_messages() {
    for value in [
        json!({"city": "Paris"}),
        json!([{"page_content": "doc", "metadata": {}}]),
        json!([]),
        json!(42),
        json!([{"role": "user", "content": "ok"}, {"document": "x"}]),
        json!([{"role": "user", "parts": [{"type": "hologram"}]}]),
    ] {
        assert_eq!(
            read_messages(&value.to_string(), Side::Output),
            None,
            "{value}"
        );
    }
    assert_eq!(read_messages("not json", Side::Output), None);
}

#[test]
fn deeply_wrapped_messages_are_not_looked_for_forever() {
    let mut value = json!([{"role": "user", "content": "deep"}]);
    for _ in 0..64 {
        value = json!({ "messages": value });
    }
    assert_eq!(read_messages(&value.to_string(), Side::Input), None);
}
