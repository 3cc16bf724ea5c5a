//! Small helpers shared by the JSON-based agent formats (openai-agents, OpenArmature events,
//! arksim, A2A): JSONL records with their byte positions, payloads that stay on disk when big,
//! and JSON values as attributes.

use std::sync::Arc;

use serde_json::Value;

use crate::formats::Input;
use crate::model::{AttrValue, Origin, PROVISIONAL_ATTR, Payload, RecordRef, Span};

/// Payload texts up to this size are kept in memory; bigger ones of a file are read from their
/// byte range when shown ([`super::ranges`]).
pub const INLINE_MAX_BYTES: usize = 256;

/// One non-blank line of a JSONL input.
pub struct Line<'a> {
    /// 1-based line number within the source file.
    pub number: u64,
    /// Byte offset of the line within the source file.
    pub offset: u64,
    pub bytes: &'a [u8],
}

/// The non-blank lines of the input, with their file positions.
pub fn lines<'a>(input: &'a Input) -> impl Iterator<Item = Line<'a>> + 'a {
    let mut offset = 0u64;
    input
        .bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter_map(move |(i, raw)| {
            let start = offset;
            offset += raw.len() as u64 + 1;
            let trimmed = raw.trim_ascii();
            (!trimmed.is_empty()).then(|| Line {
                number: input.base_line + i as u64 + 1,
                offset: input.base_offset + start,
                bytes: raw,
            })
        })
}

/// A reference to a record of the input, when payloads can be re-read from it later
/// (a plain file; gzip and network inputs keep their payloads inline instead).
pub fn record_ref(
    input: &Input,
    offset: u64,
    len: u64,
    format: &'static str,
) -> Option<Arc<RecordRef>> {
    match input.origin {
        Origin::File(path) if !input.was_gzip => Some(Arc::new(RecordRef {
            path: path.clone(),
            offset,
            len,
            gzip: false,
            format,
        })),
        _ => None,
    }
}

/// The whole input as one record (for single-document formats).
pub fn whole_record(input: &Input, format: &'static str) -> Option<Arc<RecordRef>> {
    record_ref(input, input.base_offset, input.bytes.len() as u64, format)
}

/// The text form of a JSON value: strings as they are, anything else as compact JSON.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A payload from a JSON value found at `pointer` inside `record`. An absent value is
/// *not captured*; a present one is inline when small, else left in its record.
pub fn payload(
    field: &str,
    value: Option<&Value>,
    record: Option<&Arc<RecordRef>>,
    pointer: &str,
) -> Payload {
    let Some(value) = value else {
        return Payload::not_captured();
    };
    let text = text_of(value);
    match record {
        Some(record) if text.len() > INLINE_MAX_BYTES => {
            Payload::in_record(field, &text, record.clone(), pointer)
        }
        _ => Payload::inline(field, text),
    }
}

/// Like [`payload`], but JSON null counts as *not captured* (exporters that null out
/// sensitive data).
pub fn payload_null_is_absent(
    field: &str,
    value: Option<&Value>,
    record: Option<&Arc<RecordRef>>,
    pointer: &str,
) -> Payload {
    payload(field, value.filter(|v| !v.is_null()), record, pointer)
}

/// Finds a payload again: parses the record and follows the JSON pointer.
pub fn load_pointer(record: &[u8], pointer: &str) -> Option<String> {
    let value: Value = serde_json::from_slice(record.trim_ascii()).ok()?;
    value.pointer(pointer).map(text_of)
}

/// Escapes one JSON-pointer reference token.
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Marks a span as a stand-in that a later non-provisional span with the same id replaces.
pub fn mark_provisional(span: &mut Span) {
    if !span.is_provisional() {
        span.attributes
            .push((PROVISIONAL_ATTR.into(), AttrValue::Bool(true)));
    }
}

/// A small JSON value as an attribute (objects and arrays become compact JSON text).
pub fn attr_of(value: &Value) -> AttrValue {
    match value {
        Value::Null => AttrValue::Null,
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(AttrValue::Int)
            .unwrap_or_else(|| AttrValue::Float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => AttrValue::Str(s.clone().into()),
        other => AttrValue::Str(other.to_string().into()),
    }
}

pub fn str_at<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

pub fn u64_at(value: &Value, key: &str) -> Option<u64> {
    let v = value.get(key)?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

/// A token count from a usage object: the first of `keys` present, as an LLM span holds it
/// ([`crate::model::token_count`]).
pub fn tokens_at(usage: Option<&Value>, keys: &[&str]) -> crate::model::TokenCount {
    usage
        .and_then(|usage| keys.iter().find_map(|k| u64_at(usage, k)))
        .map(crate::model::token_count)
        .into()
}

/// An id that may be written as a string or a number (`turn_id: 0` or `"0"`).
pub fn id_at(value: &Value, key: &str) -> Option<String> {
    match value.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
