//! The tool calls an LLM response asked for (ids + names), read from whichever convention
//! records them. They stay available with payload capture off when the convention has an
//! identity attribute (OpenArmature's `tool_calls.ids` / `.names`).

use std::borrow::Cow;

use serde_json::Value;

use super::{AttrSource, Attrs, family};
use crate::model::interner;
use crate::model::{RequestedCalls, RequestedToolCall};

/// The tool calls an LLM response asked for, from whichever convention records them.
/// Call ids are shared texts (`interner::value`) as the calling span's `gen_ai.tool.call.id`
/// attribute is: the request and the tool span answering it, usually a few spans apart in one
/// batch, then hold one copy of the id between them.
pub(super) fn requested_tool_calls(attrs: &Attrs, source: &dyn AttrSource) -> RequestedCalls {
    let names = attrs.strings("openarmature.llm.output.tool_calls.names");
    if !names.is_empty() {
        let ids = attrs.strings("openarmature.llm.output.tool_calls.ids");
        return names
            .into_iter()
            .enumerate()
            .map(|(i, name)| RequestedToolCall {
                id: ids.get(i).map(|id| interner::value(id)),
                name: interner::value(&name),
            })
            .collect();
    }
    let json = |key: &str| -> Option<Value> {
        if !attrs.has(key) {
            return None;
        }
        serde_json::from_str(&source.full_text(key)?).ok()
    };
    if attrs.has("gen_ai.output.messages")
        && let Some(text) = source.full_text("gen_ai.output.messages")
    {
        let calls = genai_parts_tool_calls(&text);
        if !calls.is_empty() {
            return calls;
        }
    }
    let flattened = openinference_tool_calls(attrs);
    if !flattened.is_empty() {
        return flattened;
    }
    for key in [
        "openarmature.llm.output.tool_calls",
        "langfuse.observation.output",
    ] {
        if let Some(value) = json(key) {
            let calls = openai_tool_calls(&value);
            if !calls.is_empty() {
                return calls;
            }
        }
    }
    RequestedCalls::default()
}

/// `[{role, parts: [{type: "tool_call", id, name}]}]` (GenAI semconv messages). Parsed into
/// borrowed structs that skip message content, since every chat span carries these.
fn genai_parts_tool_calls(text: &str) -> RequestedCalls {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        parts: Vec<Part<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Part<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        name: Option<Cow<'a, str>>,
    }
    let Ok(messages) = serde_json::from_str::<Vec<Message>>(text) else {
        return RequestedCalls::default();
    };
    messages
        .into_iter()
        .flat_map(|m| m.parts)
        .filter(|p| p.kind.as_deref() == Some("tool_call"))
        .filter_map(|p| {
            Some(RequestedToolCall {
                id: p.id.as_deref().map(interner::value),
                name: interner::value(&p.name?),
            })
        })
        .collect()
}

/// OpenAI-shaped calls: `[{id, name}]`, `[{id, function: {name}}]`, a message with
/// `tool_calls`, or a list of such messages.
fn openai_tool_calls(value: &Value) -> RequestedCalls {
    let call = |c: &Value| -> Option<RequestedToolCall> {
        let name = c
            .get("name")
            .or_else(|| c.get("function")?.get("name"))?
            .as_str()?;
        Some(RequestedToolCall {
            id: c.get("id").and_then(Value::as_str).map(interner::value),
            name: interner::value(name),
        })
    };
    let from_message = |m: &Value| -> Vec<RequestedToolCall> {
        m.get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| calls.iter().filter_map(call).collect())
            .unwrap_or_default()
    };
    match value {
        Value::Object(_) => from_message(value).into(),
        Value::Array(items) if items.iter().any(|i| i.get("tool_calls").is_some()) => {
            items.iter().flat_map(from_message).collect()
        }
        Value::Array(items) => items.iter().filter_map(call).collect(),
        _ => RequestedCalls::default(),
    }
}

/// `llm.output_messages.N.message.tool_calls.M.tool_call.{id,function.name}` (OpenInference).
fn openinference_tool_calls(attrs: &Attrs) -> RequestedCalls {
    const PREFIX: &str = "llm.output_messages.";
    if attrs.families & family(PREFIX) == 0 {
        return RequestedCalls::default();
    }
    let mut found: Vec<((u32, u32), RequestedToolCall)> = Vec::new();
    for (key, value) in attrs.first_entries() {
        let Some(rest) = key.strip_prefix(PREFIX) else {
            continue;
        };
        let Some(rest) = rest.strip_suffix(".tool_call.function.name") else {
            continue;
        };
        let Some((message, call)) = rest.split_once(".message.tool_calls.") else {
            continue;
        };
        let (Ok(message), Ok(call)) = (message.parse::<u32>(), call.parse::<u32>()) else {
            continue;
        };
        let Some(name) = value.as_str() else { continue };
        let id_key = format!("{PREFIX}{message}.message.tool_calls.{call}.tool_call.id");
        found.push((
            (message, call),
            RequestedToolCall {
                id: attrs.str(&id_key).map(interner::value),
                name: interner::value(name),
            },
        ));
    }
    found.sort_by_key(|(position, _)| *position);
    found.into_iter().map(|(_, call)| call).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shaped_tool_calls_are_read_from_messages_and_lists() {
        let message: Value = serde_json::from_str(
            r#"{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            openai_tool_calls(&message),
            [RequestedToolCall {
                id: Some("c1".into()),
                name: "f".into()
            }]
        );
        let list: Value = serde_json::from_str(r#"[{"id":"c2","name":"g"}]"#).unwrap();
        assert_eq!(openai_tool_calls(&list)[0].name, "g");
    }
}
