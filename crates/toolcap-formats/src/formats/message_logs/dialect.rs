//! One place decides which message-log dialect a JSON value is, so the six log formats never
//! both claim a file. Unlike toolscore (which looks at the first list item only and never
//! recognises LangChain), every item of the sample is examined.

use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Anthropic,
    Gemini,
    LangChain,
    Mcp,
    ToolscoreCustom,
}

const ANTHROPIC_BLOCKS: &[&str] = &[
    "tool_use",
    "tool_result",
    "server_tool_use",
    "mcp_tool_use",
    "mcp_tool_result",
    "web_search_tool_result",
    "thinking",
    "redacted_thinking",
];

const LANGCHAIN_MESSAGE_TYPES: &[&str] = &[
    "human",
    "ai",
    "tool",
    "system",
    "function",
    "chat",
    "AIMessage",
    "HumanMessage",
    "ToolMessage",
    "SystemMessage",
    "AIMessageChunk",
];

const CHAT_ROLES: &[&str] = &[
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// The dialect of a whole document (or of a JSONL sample as an array) and why.
pub fn detect(value: &Value) -> Option<(Dialect, String)> {
    match value {
        Value::Object(map) => detect_object(map),
        Value::Array(items) => detect_list(items, false),
        _ => None,
    }
}

fn is_jsonrpc(value: &Value) -> bool {
    value.get("jsonrpc").is_some()
        || value
            .get("message")
            .is_some_and(|m| m.get("jsonrpc").is_some())
}

fn list<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Vec<Value>> {
    map.get(key)?.as_array()
}

fn detect_object(map: &Map<String, Value>) -> Option<(Dialect, String)> {
    if map.contains_key("jsonrpc") {
        return Some((Dialect::Mcp, "a JSON-RPC 2.0 message".into()));
    }
    if map.contains_key("resourceSpans") {
        return None;
    }
    for key in ["messages", "calls", "tools"] {
        if list(map, key).is_some_and(|items| items.iter().any(is_jsonrpc)) {
            return Some((
                Dialect::Mcp,
                format!("`{key}` holds JSON-RPC 2.0 messages (an MCP session)"),
            ));
        }
    }
    if map.get("format").and_then(Value::as_str) == Some("mcp") && map.contains_key("messages") {
        return Some((Dialect::Mcp, "`format: mcp` session recording".into()));
    }
    if list(map, "candidates").is_some() {
        return Some((Dialect::Gemini, "Gemini response with `candidates`".into()));
    }
    if list(map, "contents").is_some_and(|items| items.iter().any(|i| i.get("parts").is_some())) {
        return Some((
            Dialect::Gemini,
            "Gemini request with `contents` parts".into(),
        ));
    }
    if list(map, "choices").is_some_and(|c| c.iter().any(|c| c.get("message").is_some())) {
        return Some((
            Dialect::OpenAi,
            "OpenAI chat completion response (`choices[].message`)".into(),
        ));
    }
    if map.get("type").and_then(Value::as_str) == Some("message")
        && map.get("role").and_then(Value::as_str) == Some("assistant")
    {
        return Some((Dialect::Anthropic, "Anthropic Messages API response".into()));
    }
    if map.get("object").and_then(Value::as_str) == Some("response")
        && list(map, "output").is_some()
    {
        return Some((Dialect::OpenAi, "OpenAI Responses API response".into()));
    }
    if list(map, "intermediate_steps").is_some() {
        return Some((
            Dialect::LangChain,
            "LangChain agent output with `intermediate_steps`".into(),
        ));
    }
    if let Some(messages) = list(map, "messages") {
        let claude_hint = map.get("system").is_some_and(Value::is_string)
            || map
                .get("model")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("claude"));
        return detect_list(messages, claude_hint)
            .filter(|(d, _)| *d != Dialect::ToolscoreCustom)
            .map(|(d, why)| (d, format!("`messages`: {why}")));
    }
    if let Some(calls) = list(map, "calls") {
        if calls.iter().all(Value::is_object)
            && (calls.is_empty() || calls.iter().any(is_custom_call))
        {
            return Some((
                Dialect::ToolscoreCustom,
                "toolscore custom trace (`{\"calls\": [...]}`)".into(),
            ));
        }
        return None;
    }
    if !map.contains_key("role")
        && list(map, "tool_calls").is_some_and(|c| !c.is_empty() && c.iter().all(is_custom_call))
    {
        return Some((
            Dialect::ToolscoreCustom,
            "toolscore custom trace (`{\"tool_calls\": [...]}`)".into(),
        ));
    }
    if map.get("role").is_some_and(Value::is_string) {
        let one = [Value::Object(map.clone())];
        return detect_list(&one, false).map(|(d, why)| (d, format!("a single message: {why}")));
    }
    if map.get("tool").is_some_and(Value::is_string)
        && ["args", "arguments", "input", "result", "output"]
            .iter()
            .any(|k| map.contains_key(*k))
    {
        return Some((
            Dialect::ToolscoreCustom,
            "a single toolscore custom call".into(),
        ));
    }
    None
}

fn is_custom_call(item: &Value) -> bool {
    ["tool", "name", "function"]
        .iter()
        .any(|k| item.get(*k).is_some_and(|v| v.is_string()))
}

fn has_anthropic_block(item: &Value) -> bool {
    item.get("stop_reason").is_some()
        || item
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    b.get("type").and_then(Value::as_str).is_some_and(|t| {
                        ANTHROPIC_BLOCKS.contains(&t) || t.ends_with("_tool_result")
                    })
                })
            })
}

fn is_langchain_message(item: &Value) -> bool {
    if item.get("lc").is_some() && item.get("kwargs").is_some() {
        return true;
    }
    item.get("role").is_none()
        && item.get("message").is_none()
        && item
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| LANGCHAIN_MESSAGE_TYPES.contains(&t))
        && (item.get("content").is_some() || item.get("data").is_some())
}

fn is_intermediate_step(item: &Value) -> bool {
    item.as_array().is_some_and(|pair| {
        pair.len() == 2 && pair.first().is_some_and(|a| a.get("tool").is_some())
    })
}

fn detect_list(items: &[Value], claude_hint: bool) -> Option<(Dialect, String)> {
    if items.is_empty() {
        // toolscore scores `[]` as a trace with no calls; a CI gate wants "every call missing".
        return Some((
            Dialect::ToolscoreCustom,
            "an empty list: a toolscore trace with no calls".into(),
        ));
    }
    if items.iter().all(is_intermediate_step) {
        return Some((
            Dialect::LangChain,
            "LangChain intermediate steps ([AgentAction, observation] pairs)".into(),
        ));
    }
    if !items.iter().all(Value::is_object) {
        return has_custom_call(items).then(|| {
            (
                Dialect::ToolscoreCustom,
                "toolscore custom trace (`tool` calls among unusable items)".into(),
            )
        });
    }
    if items.iter().any(is_jsonrpc) {
        return Some((
            Dialect::Mcp,
            "JSON-RPC 2.0 messages (an MCP session)".into(),
        ));
    }
    if items.iter().any(|i| {
        i.get("parts").is_some() || i.get("content").is_some_and(|c| c.get("parts").is_some())
    }) {
        return Some((Dialect::Gemini, "Gemini contents with `parts`".into()));
    }
    if items.iter().any(|i| {
        i.get("message")
            .filter(|m| m.get("role").is_some())
            .is_some_and(has_anthropic_block)
    }) {
        return Some((
            Dialect::Anthropic,
            "agent transcript lines wrapping Anthropic messages in `message` (Claude Code style)"
                .into(),
        ));
    }
    if items.iter().any(is_langchain_message) {
        return Some((
            Dialect::LangChain,
            "LangChain messages (`type: ai/human/tool`)".into(),
        ));
    }
    if items.iter().any(has_anthropic_block) {
        return Some((
            Dialect::Anthropic,
            "Anthropic messages (tool_use / tool_result blocks or stop_reason)".into(),
        ));
    }
    if items.iter().any(super::openai_responses::is_responses_item) {
        return Some((
            Dialect::OpenAi,
            "OpenAI Responses API items (function_call / function_call_output)".into(),
        ));
    }
    let has_role = |i: &Value| {
        i.get("role")
            .and_then(Value::as_str)
            .is_some_and(|r| CHAT_ROLES.contains(&r))
    };
    if items.iter().all(has_role) {
        if items.iter().any(|i| {
            i.get("tool_calls").is_some_and(|v| !v.is_null())
                || i.get("function_call").is_some_and(|v| !v.is_null())
                || matches!(
                    i.get("role").and_then(Value::as_str),
                    Some("tool" | "function")
                )
        }) {
            return Some((
                Dialect::OpenAi,
                "OpenAI chat messages (tool_calls / function_call / tool role)".into(),
            ));
        }
        if claude_hint {
            return Some((
                Dialect::Anthropic,
                "chat messages with no tool markers, Anthropic wrapper (system / claude model)"
                    .into(),
            ));
        }
        return Some((
            Dialect::OpenAi,
            "chat messages with no tool markers, read as OpenAI".into(),
        ));
    }
    if items.iter().any(|i| {
        i.get("tool_input").is_some()
            || (i.get("action").is_some() && i.get("action_input").is_some())
    }) {
        return Some((
            Dialect::LangChain,
            "LangChain AgentAction list (`tool` + `tool_input`)".into(),
        ));
    }
    if items
        .iter()
        .any(|i| i.get("type").and_then(Value::as_str) == Some("tool_call"))
    {
        return Some((
            Dialect::LangChain,
            "LangChain ToolCall list (`type: tool_call`)".into(),
        ));
    }
    if items
        .iter()
        .all(|i| i.get("tool").is_some_and(Value::is_string))
    {
        return Some((
            Dialect::ToolscoreCustom,
            "toolscore custom trace (a list of `tool` calls)".into(),
        ));
    }
    if items
        .iter()
        .all(|i| i.get("name").is_some_and(Value::is_string) && i.get("args").is_some())
    {
        return Some((
            Dialect::LangChain,
            "LangChain ToolCall list (`name` + `args`)".into(),
        ));
    }
    has_custom_call(items).then(|| {
        (
            Dialect::ToolscoreCustom,
            "toolscore custom trace (`tool` calls among items without a name)".into(),
        )
    })
}

/// Some item is a toolscore custom call (a non-empty `tool` string).
fn has_custom_call(items: &[Value]) -> bool {
    items.iter().any(|i| {
        i.get("tool")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
    })
}
