//! One message model for the chat messages every format records: GenAI semantic conventions
//! (`role` and `parts`), OpenAI chat and responses items, Anthropic content blocks, Gemini
//! parts, LangChain messages (plain or serialized), a bare list of tool calls, and the request
//! objects that wrap them (`messages`, `contents`, `input`, `choices`). A payload of any other
//! shape is not messages: [`read_messages`] says `None` and views show it as JSON.

use serde_json::{Map, Value};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// A role as the formats name it (`human`, `ai`, `model`, `developer`, `function` …).
    fn parse(name: &str) -> Option<Role> {
        Some(match name.to_ascii_lowercase().as_str() {
            "system" | "developer" => Role::System,
            "user" | "human" | "humanmessage" | "humanmessagechunk" => Role::User,
            "assistant" | "ai" | "model" | "aimessage" | "aimessagechunk" | "bot" => {
                Role::Assistant
            }
            "tool" | "function" | "toolmessage" | "functionmessage" | "ipython" => Role::Tool,
            "systemmessage" => Role::System,
            _ => return None,
        })
    }
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Reasoning(String),
    /// A tool call the model asked for; `arguments` as recorded (an object, or a string that
    /// is meant to hold JSON and may not).
    ToolCall {
        id: Option<String>,
        name: String,
        arguments: Value,
    },
    /// What a tool gave back, tied to its call by `id` when the format records one.
    ToolResult {
        id: Option<String>,
        content: String,
        is_error: bool,
    },
    /// An image, audio or file: shown as a placeholder with its type and size.
    Media {
        kind: String,
        bytes: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    /// A name the message carries besides its role (an OpenAI `name`, a tool's function).
    pub name: Option<String>,
    pub parts: Vec<Part>,
    pub finish_reason: Option<String>,
}

/// Which side of a model call a payload is: a bare string is the model's answer only on the
/// output side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Input,
    Output,
}

/// Messages nested deeper than this are not looked for (a hostile payload may nest deeply).
const MAX_WRAPPER_DEPTH: usize = 4;

/// The chat messages in a payload's text, or `None` when it holds none that this model reads.
pub fn read_messages(text: &str, side: Side) -> Option<Vec<Message>> {
    let value: Value = serde_json::from_str(text).ok()?;
    from_value(&value, side, 0)
}

/// [`read_messages`] of a parsed payload.
pub fn from_value(value: &Value, side: Side, depth: usize) -> Option<Vec<Message>> {
    if depth > MAX_WRAPPER_DEPTH {
        return None;
    }
    match value {
        Value::Array(items) if !items.is_empty() => list(items),
        Value::Object(object) => {
            if let Some(message) = message(object) {
                return Some(vec![message]);
            }
            // Requests and responses that wrap the messages.
            for key in ["messages", "contents", "input", "output", "content"] {
                if let Some(inner @ Value::Array(_)) = object.get(key)
                    && let Some(found) = from_value(inner, side, depth + 1)
                {
                    return Some(found);
                }
            }
            if let Some(Value::Array(choices)) = object.get("choices") {
                let found: Vec<Message> = choices
                    .iter()
                    .filter_map(|choice| {
                        let inner = choice.get("message").or_else(|| choice.get("delta"))?;
                        let mut message = message(inner.as_object()?)?;
                        message.finish_reason = text(choice.get("finish_reason"));
                        Some(message)
                    })
                    .collect();
                return (!found.is_empty()).then_some(found);
            }
            if let Some(Value::Array(candidates)) = object.get("candidates") {
                let found: Vec<Message> = candidates
                    .iter()
                    .filter_map(|c| message(c.get("content")?.as_object()?))
                    .collect();
                return (!found.is_empty()).then_some(found);
            }
            None
        }
        Value::String(answer) if side == Side::Output && !answer.trim().is_empty() => {
            Some(vec![Message {
                role: Role::Assistant,
                name: None,
                parts: vec![Part::Text(answer.clone())],
                finish_reason: None,
            }])
        }
        _ => None,
    }
}

/// A list of messages, of response items, or of tool calls. Every item must read, or the
/// list is not messages (a list of documents is shown as JSON, not half as chat).
fn list(items: &[Value]) -> Option<Vec<Message>> {
    let objects: Vec<&Map<String, Value>> =
        items.iter().map(Value::as_object).collect::<Option<_>>()?;
    if objects.iter().all(|o| is_tool_call_record(o)) {
        let calls = objects.iter().filter_map(|o| tool_call(o)).collect();
        return Some(vec![Message {
            role: Role::Assistant,
            name: None,
            parts: calls,
            finish_reason: None,
        }]);
    }
    let mut out: Vec<Message> = Vec::new();
    for object in objects {
        if let Some(message) = message(object) {
            out.push(message);
            continue;
        }
        // OpenAI responses items that are not messages join the message they belong to.
        let part = response_item(object)?;
        let role = match part {
            Part::ToolResult { .. } => Role::Tool,
            _ => Role::Assistant,
        };
        match out.last_mut() {
            Some(last) if last.role == role && role == Role::Assistant => last.parts.push(part),
            _ => out.push(Message {
                role,
                name: None,
                parts: vec![part],
                finish_reason: None,
            }),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `{id, name, arguments}` with no role: a tool call as some exporters list a model's calls.
fn is_tool_call_record(object: &Map<String, Value>) -> bool {
    !object.contains_key("role")
        && !object.contains_key("type")
        && object.get("name").is_some_and(Value::is_string)
        && (object.contains_key("arguments") || object.contains_key("args"))
}

/// One message object of any known shape.
fn message(object: &Map<String, Value>) -> Option<Message> {
    // LangChain's serialized form: {"lc": 1, "type": "constructor", "id": [..., "HumanMessage"], "kwargs": {...}}
    if object.get("lc").is_some()
        && let Some(kwargs) = object.get("kwargs").and_then(Value::as_object)
    {
        let class = object
            .get("id")
            .and_then(Value::as_array)
            .and_then(|id| id.last())
            .and_then(Value::as_str)?;
        let mut inner = kwargs.clone();
        inner.insert("type".into(), Value::String(class.to_owned()));
        return message(&inner);
    }
    // The role, else a LangChain `type` (a responses item's `type` is "message" beside its
    // role, so the role comes first).
    let role_name = object
        .get("role")
        .and_then(Value::as_str)
        .or_else(|| object.get("type").and_then(Value::as_str))?;
    with_role(object, Role::parse(role_name)?)
}

fn with_role(object: &Map<String, Value>, role: Role) -> Option<Message> {
    let mut parts = Vec::new();
    if let Some(Value::Array(genai)) = object.get("parts") {
        for part in genai {
            parts.push(genai_or_gemini_part(part)?);
        }
    }
    match object.get("content") {
        Some(Value::String(text)) if role == Role::Tool => parts.push(Part::ToolResult {
            id: text_of(object, &["tool_call_id", "tool_use_id", "call_id"]),
            content: text.clone(),
            is_error: object.get("status").and_then(Value::as_str) == Some("error"),
        }),
        Some(Value::String(text)) if !text.is_empty() => parts.push(Part::Text(text.clone())),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                parts.extend(content_block(block, role)?);
            }
        }
        _ => {}
    }
    for call in object
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parts.push(tool_call(call.as_object()?)?);
    }
    if let Some(call) = object.get("function_call").and_then(Value::as_object) {
        parts.push(tool_call(call)?);
    }
    let finish_reason = text(object.get("finish_reason"))
        .or_else(|| text(object.get("stop_reason")))
        .or_else(|| {
            object
                .get("response_metadata")
                .and_then(|m| text(m.get("finish_reason")))
        });
    Some(Message {
        role,
        name: text(object.get("name")),
        parts,
        finish_reason,
    })
}

/// A GenAI semantic-conventions part (`{"type": "text", "content": ...}`) or a Gemini part
/// (`{"text": ...}`, `{"functionCall": ...}`).
fn genai_or_gemini_part(part: &Value) -> Option<Part> {
    let object = part.as_object()?;
    match object.get("type").and_then(Value::as_str) {
        Some("text") => Some(Part::Text(text(object.get("content")).unwrap_or_default())),
        Some("reasoning" | "thinking") => Some(Part::Reasoning(
            text(object.get("content")).unwrap_or_default(),
        )),
        Some("tool_call") => Some(Part::ToolCall {
            id: text(object.get("id")),
            name: text(object.get("name")).unwrap_or_default(),
            arguments: object.get("arguments").cloned().unwrap_or(Value::Null),
        }),
        Some("tool_call_response") => {
            let response = object.get("response").cloned().unwrap_or(Value::Null);
            let is_error = response.get("error").is_some_and(|e| !e.is_null());
            let content = match &response {
                Value::String(text) => text.clone(),
                Value::Object(o) if is_error => o
                    .get("error")
                    .and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| response.to_string()),
                other => other.to_string(),
            };
            Some(Part::ToolResult {
                id: text(object.get("id")),
                content,
                is_error,
            })
        }
        Some(kind @ ("blob" | "uri" | "file" | "image" | "audio" | "video")) => {
            Some(media(object, kind))
        }
        Some(_) => None,
        None => gemini_part(object),
    }
}

fn gemini_part(object: &Map<String, Value>) -> Option<Part> {
    if let Some(text) = object.get("text").and_then(Value::as_str) {
        return Some(if object.get("thought") == Some(&Value::Bool(true)) {
            Part::Reasoning(text.to_owned())
        } else {
            Part::Text(text.to_owned())
        });
    }
    if let Some(call) = object
        .get("functionCall")
        .or_else(|| object.get("function_call"))
        .and_then(Value::as_object)
    {
        return Some(Part::ToolCall {
            id: text(call.get("id")),
            name: text(call.get("name")).unwrap_or_default(),
            arguments: call.get("args").cloned().unwrap_or(Value::Null),
        });
    }
    if let Some(response) = object
        .get("functionResponse")
        .or_else(|| object.get("function_response"))
        .and_then(Value::as_object)
    {
        let body = response.get("response").cloned().unwrap_or(Value::Null);
        return Some(Part::ToolResult {
            id: text(response.get("id")).or_else(|| text(response.get("name"))),
            is_error: body.get("error").is_some_and(|e| !e.is_null()),
            content: match body {
                Value::String(text) => text,
                other => other.to_string(),
            },
        });
    }
    for key in ["inlineData", "inline_data", "fileData", "file_data"] {
        if let Some(data) = object.get(key).and_then(Value::as_object) {
            return Some(media(data, "file"));
        }
    }
    None
}

/// A content block of an OpenAI or Anthropic message, or a responses content item.
fn content_block(block: &Value, role: Role) -> Option<Vec<Part>> {
    let object = match block {
        Value::String(text) => return Some(vec![Part::Text(text.clone())]),
        Value::Object(object) => object,
        _ => return None,
    };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    Some(vec![match kind {
        "text" | "input_text" | "output_text" => {
            Part::Text(text(object.get("text")).unwrap_or_default())
        }
        "thinking" | "redacted_thinking" | "reasoning" => Part::Reasoning(
            text(object.get("thinking"))
                .or_else(|| text(object.get("reasoning")))
                .unwrap_or_default(),
        ),
        "tool_use" | "server_tool_use" => Part::ToolCall {
            id: text(object.get("id")),
            name: text(object.get("name")).unwrap_or_default(),
            arguments: object.get("input").cloned().unwrap_or(Value::Null),
        },
        "tool_result" => Part::ToolResult {
            id: text(object.get("tool_use_id")),
            content: block_text(object.get("content")),
            is_error: object.get("is_error") == Some(&Value::Bool(true)),
        },
        "image" | "image_url" | "input_image" | "audio" | "input_audio" | "document" | "file"
        | "input_file" => media(object, kind),
        "refusal" => Part::Text(text(object.get("refusal")).unwrap_or_default()),
        "" if role == Role::Tool => Part::ToolResult {
            id: None,
            content: block_text(Some(block)),
            is_error: false,
        },
        _ => return None,
    }])
}

/// A responses item that is not a message: a function call, its output, reasoning.
fn response_item(object: &Map<String, Value>) -> Option<Part> {
    match object.get("type").and_then(Value::as_str)? {
        "function_call" | "custom_tool_call" => Some(Part::ToolCall {
            id: text(object.get("call_id")).or_else(|| text(object.get("id"))),
            name: text(object.get("name")).unwrap_or_default(),
            arguments: object
                .get("arguments")
                .or_else(|| object.get("input"))
                .cloned()
                .unwrap_or(Value::Null),
        }),
        "function_call_output" | "custom_tool_call_output" => Some(Part::ToolResult {
            id: text(object.get("call_id")),
            content: block_text(object.get("output")),
            is_error: false,
        }),
        "reasoning" => {
            let summary = object
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            Some(Part::Reasoning(summary))
        }
        _ => None,
    }
}

/// An OpenAI `tool_calls` entry (`{id, function: {name, arguments}}`), a LangChain one
/// (`{id, name, args}`), a legacy `function_call`, or a bare `{id, name, arguments}`.
fn tool_call(object: &Map<String, Value>) -> Option<Part> {
    let function = object
        .get("function")
        .and_then(Value::as_object)
        .unwrap_or(object);
    let name = text(function.get("name"))?;
    Some(Part::ToolCall {
        id: text(object.get("id")).or_else(|| text(object.get("call_id"))),
        name,
        arguments: function
            .get("arguments")
            .or_else(|| function.get("args"))
            .or_else(|| function.get("input"))
            .cloned()
            .unwrap_or(Value::Null),
    })
}

fn media(object: &Map<String, Value>, kind: &str) -> Part {
    let mime = text(object.get("mime_type"))
        .or_else(|| text(object.get("mimeType")))
        .or_else(|| text(object.get("media_type")))
        .or_else(|| object.get("source").and_then(|s| text(s.get("media_type"))));
    let data = ["data", "content", "image_url", "url", "uri"]
        .iter()
        .find_map(|key| object.get(*key))
        .or_else(|| object.get("source").and_then(|s| s.get("data")));
    let bytes = data.and_then(|data| match data {
        Value::String(text) => Some(text.len() as u64),
        Value::Object(inner) => inner
            .get("url")
            .and_then(Value::as_str)
            .map(|u| u.len() as u64),
        _ => None,
    });
    Part::Media {
        kind: mime.unwrap_or_else(|| kind.to_owned()),
        bytes,
    }
}

/// A tool result's content as text: a string, or the text blocks of a list, or JSON.
fn block_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => {
            let texts: Option<Vec<&str>> = blocks
                .iter()
                .map(|b| b.as_str().or_else(|| b.get("text")?.as_str()))
                .collect();
            match texts {
                Some(texts) => texts.join("\n"),
                None => Value::Array(blocks.clone()).to_string(),
            }
        }
        Some(other) => other.to_string(),
    }
}

fn text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn text_of(object: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| text(object.get(*key)))
}

#[cfg(test)]
mod tests;
