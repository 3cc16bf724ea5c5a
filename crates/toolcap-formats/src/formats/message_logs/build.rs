//! Spans from a conversation: the root, one `llm` span per turn, one `tool` span per call,
//! and big payloads left on disk (see the module docs of [`super`]).

use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::{Call, Conversation, Doc, Item, payload_text, read_or_fail};
use crate::formats::{Format, Input};
use crate::model::{
    ArcStr, AttrValue, Batch, Origin, Payload, PayloadBody, RecordRef, RequestedToolCall, Span,
    SpanKind, SpanStatus, ToolFacts,
};

fn payload_of(field: &str, value: Option<&Value>) -> Payload {
    match value {
        Some(v) => Payload::inline(field, payload_text(v)),
        None => Payload::not_captured(),
    }
}

/// The invocation id: the log's own id, else the source path as given (see module docs).
pub fn invocation_id(input: &Input, native: Option<&str>) -> String {
    if let Some(id) = native.filter(|id| !id.trim().is_empty()) {
        return id.to_owned();
    }
    match input.origin {
        Origin::File(path) => path.display().to_string(),
        Origin::Endpoint(endpoint) => {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            input.bytes.hash(&mut hasher);
            format!("{endpoint}#{:016x}", hasher.finish())
        }
    }
}

/// A short display name: the label plus the last two path components.
fn root_name(input: &Input, label: &str) -> String {
    match input.origin {
        Origin::File(path) => {
            let parts: Vec<String> = path
                .components()
                .rev()
                .take(2)
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let short: Vec<&str> = parts.iter().rev().map(String::as_str).collect();
            format!("{label} · {}", short.join("/"))
        }
        Origin::Endpoint(endpoint) => format!("{label} · {endpoint}"),
    }
}

/// The whole parse of a message log: read the document (an unreadable one is the batch's only
/// problem), let the dialect's reader turn it into a conversation with a label, build spans.
/// The read problems come first, before anything the dialect's reader warns.
pub fn parse_conversation(
    input: &Input,
    format: &'static str,
    read_conversation: impl FnOnce(&Doc) -> (Conversation, &'static str),
) -> Batch {
    let (doc, problems) = match read_or_fail(input) {
        Ok(read) => read,
        Err(batch) => return *batch,
    };
    let (mut conversation, label) = read_conversation(&doc);
    conversation.problems.splice(0..0, problems);
    build(input, format, label, conversation)
}

/// Turns a conversation into spans: root, one `llm` span per turn, one `tool` span per call.
/// Warns "0 tool calls found" when the log holds none.
pub fn build(
    input: &Input,
    format: &'static str,
    label: &str,
    mut conversation: Conversation,
) -> Batch {
    let trace_id = invocation_id(input, conversation.native_id.as_deref());
    if conversation.call_count() == 0 && input.base_line == 0 {
        conversation.warn(input, None, "0 tool calls found");
    }
    let base = |span_id: String, parent: Option<&str>, name: String, kind: SpanKind| Span {
        trace_id: trace_id.clone().into(),
        span_id: span_id.into(),
        parent_span_id: parent.map(str::to_owned).map(Into::into),
        name: name.into(),
        kind,
        provenance: input.span_provenance(format.into()),
        ..Default::default()
    };
    let root_id = "root".to_owned();
    // A tailed file hands over later chunks on their own: their spans get ids of their own
    // (prefixed with the chunk's first line) so they add to the run instead of colliding.
    let chunk = if input.base_line > 0 {
        format!("L{}:", input.base_line + 1)
    } else {
        String::new()
    };
    let mut spans = Vec::new();
    let mut turn_number = 0usize;
    for (index, item) in conversation.items.into_iter().enumerate() {
        match item {
            Item::Call(call) => spans.push(tool_span(
                &base,
                &root_id,
                format!("{chunk}call-{index}"),
                call,
            )),
            Item::Turn(turn) => {
                turn_number += 1;
                let turn_id = format!("{chunk}turn-{turn_number}");
                let name = match &turn.llm.model {
                    Some(model) => format!("chat {model}"),
                    None => format!("assistant turn {turn_number}"),
                };
                let mut span = base(turn_id.clone(), Some(&root_id), name, SpanKind::Llm);
                span.start_unix_nano = turn.start;
                span.line = turn.line.and_then(crate::model::LineNumber::new);
                span.set_output(Payload::inline("message", payload_text(&turn.message)).into());
                if !turn.prompt.is_empty() {
                    span.set_input(
                        Payload::inline("messages", Value::Array(turn.prompt).to_string()).into(),
                    );
                }
                span.attributes = crate::model::shared_keys(turn.attributes);
                let mut llm = turn.llm;
                llm.requested_tool_calls = turn
                    .calls
                    .iter()
                    .map(|c| RequestedToolCall {
                        id: c.call_id.as_deref().map(ArcStr::from),
                        name: crate::model::interner::value(&c.name),
                    })
                    .collect();
                span.set_llm(Some(Box::new(llm)));
                let mut end = span.start_unix_nano + 1;
                let first_child = spans.len() + 1;
                spans.push(span);
                for (call_index, call) in turn.calls.into_iter().enumerate() {
                    let child = tool_span(
                        &base,
                        &turn_id,
                        format!("{chunk}call-{index}.{call_index}"),
                        call,
                    );
                    end = end.max(child.end_unix_nano);
                    spans.push(child);
                }
                if let Some(turn_span) = spans.get_mut(first_child - 1) {
                    turn_span.end_unix_nano = end;
                }
            }
        }
    }
    let start = spans.iter().map(|s| s.start_unix_nano).min().unwrap_or(1);
    let end = spans
        .iter()
        .map(|s| s.end_unix_nano)
        .max()
        .unwrap_or(start + 1)
        .max(start + 1);
    let mut root = base(root_id, None, root_name(input, label), SpanKind::Agent);
    root.start_unix_nano = start;
    root.end_unix_nano = end;
    root.attributes = crate::model::shared_keys(conversation.root_attributes);
    root.attributes
        .push(("log.format".into(), AttrValue::Str(format.into())));
    root.set_events(conversation.root_events.into());
    spans.insert(0, root);
    leave_big_payloads_on_disk(input, format, &chunk, &mut spans);
    Batch {
        spans,
        problems: conversation.problems,
        ..Default::default()
    }
}

/// Payloads above this size stay in the file and are re-read when a pane shows them.
pub const INLINE_PAYLOAD_LIMIT: u64 = 16 * 1024;

/// Swaps big inline payloads of a plain file for references: the record is the parsed bytes
/// and the locator `<span id>#input|output` names the payload, found again by re-parsing
/// (see [`reload_payload`]). Span ids in the locator drop the chunk prefix, because the record
/// re-parses as its own chunk.
fn leave_big_payloads_on_disk(
    input: &Input,
    format: &'static str,
    chunk: &str,
    spans: &mut [Span],
) {
    let Origin::File(path) = input.origin else {
        return;
    };
    if input.was_gzip {
        return;
    }
    let record = std::sync::Arc::new(RecordRef {
        path: path.clone(),
        offset: input.base_offset,
        len: input.bytes.len() as u64,
        gzip: false,
        format,
    });
    for span in spans {
        if span.extras.is_unset() {
            continue;
        }
        let span_id = span.span_id.text();
        let local_id = span_id.strip_prefix(chunk).unwrap_or(&span_id).to_owned();
        let extras = &mut *span.extras;
        for (which, payload) in [("input", &mut extras.input), ("output", &mut extras.output)] {
            let set = payload.as_set();
            if set.bytes > INLINE_PAYLOAD_LIMIT && set.inline_text().is_some() {
                payload.to_change().body = PayloadBody::InRecord {
                    record: record.clone(),
                    locator: format!("{local_id}#{which}").into(),
                };
            }
        }
    }
}

/// Finds a payload left on disk again: re-parses its record with the same format and takes
/// the named span's input or output. `None` when the file no longer holds it.
pub fn reload_payload(format: &dyn Format, record: &[u8], locator: &str) -> Option<String> {
    let (span_id, which) = locator.rsplit_once('#')?;
    // A non-file origin keeps every payload inline in the re-parse.
    let origin = Origin::endpoint("payload reload");
    let input = Input::new(&origin, record, None);
    let batch = format.parse(&input);
    let span = batch.spans.iter().find(|s| s.span_id == span_id)?;
    let payload = match which {
        "input" => span.input(),
        "output" => span.output(),
        _ => return None,
    };
    payload.inline_text().map(str::to_owned)
}

fn tool_span(
    base: &impl Fn(String, Option<&str>, String, SpanKind) -> Span,
    parent: &str,
    span_id: String,
    call: Call,
) -> Span {
    let mut span = base(span_id, Some(parent), call.name.clone(), SpanKind::Tool);
    span.start_unix_nano = call.start;
    span.end_unix_nano = call.end.unwrap_or(call.start + 1).max(call.start);
    span.line = call.line.and_then(crate::model::LineNumber::new);
    span.set_tool(Some(Box::new(ToolFacts {
        name: Some(call.name.into()),
        call_id: call.call_id.map(Into::into),
    })));
    span.set_input(payload_of(call.args_field, call.args.as_ref()).into());
    span.set_output(payload_of(call.result_field, call.result.as_ref()).into());
    span.status = if call.error.is_some() {
        SpanStatus::Error
    } else if call.result.is_some() {
        SpanStatus::Ok
    } else {
        SpanStatus::Unset
    };
    span.set_error(call.error);
    span.attributes = crate::model::shared_keys(call.attributes);
    span
}
