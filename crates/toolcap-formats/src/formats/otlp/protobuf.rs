//! Decodes protobuf `ExportTraceServiceRequest` bytes straight into the borrowed [`wire`]
//! model: strings borrow from the input, so a payload's position in the input is known (and
//! kept as its byte range) and nothing is copied until a pane shows it.
//!
//! Only what the builder reads is decoded; other fields (trace state, links, flags, dropped
//! counts, schema URLs) are skipped by wire type. Malformed input is an error, never a panic.

use std::borrow::Cow;

use super::decode_budget::{self, Budget};
use super::wire::{self, Scalar, Text};
use crate::Malformed;

/// Nested `AnyValue`s deeper than this are refused (prost's own limit is 100).
const MAX_DEPTH: usize = 64;

pub type Result<T> = std::result::Result<T, Malformed>;

/// Every vector is filled through here: its growth is charged to the decode budget.
fn push<T>(items: &mut Vec<T>, item: T) -> Result<()> {
    Ok(decode_budget::push(items, item)?)
}

/// One field's value, by wire type.
pub(super) enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    /// No field read here is a fixed32 (span `flags` is one): its four bytes are skipped.
    Fixed32,
}

/// The project's one protobuf wire reader.
pub(super) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    fn varint(&mut self) -> Result<u64> {
        Ok(prost::encoding::decode_varint(&mut self.rest)?)
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.rest.len() {
            return Err(Malformed::PastTheEnd);
        }
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Ok(head)
    }

    /// The next field's number and value; `None` at the end of the message.
    pub(super) fn next(&mut self) -> Result<Option<(u32, Field<'a>)>> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| Malformed::FieldNumberOutOfRange)?;
        if number == 0 {
            return Err(Malformed::FieldNumberZero);
        }
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => Field::Fixed64(u64::from_le_bytes(
                self.take(8)?
                    .try_into()
                    .map_err(|_| Malformed::ShortFixed("fixed64"))?,
            )),
            2 => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| Malformed::LengthOutOfRange)?;
                Field::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Field::Fixed32
            }
            other => return Err(Malformed::WireType(other)),
        };
        Ok(Some((number, field)))
    }
}

pub(super) fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| Malformed::NotUtf8)
}

fn hex_id(bytes: &[u8]) -> Option<Cow<'static, str>> {
    (!bytes.is_empty()).then(|| Cow::Owned(hex::encode(bytes)))
}

/// A whole request.
pub fn request(bytes: &[u8]) -> Result<wire::Request<'_>> {
    wire::count_request_decoded();
    let _budget = Budget::for_input(bytes.len());
    let mut out = wire::Request::default();
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        if let (1, Field::Bytes(body)) = (number, field) {
            push(&mut out.resource_spans, resource_spans(body)?)?;
        }
    }
    Ok(out)
}

/// One `ResourceSpans` message body.
pub fn resource_spans(bytes: &[u8]) -> Result<wire::ResourceSpans<'_>> {
    let mut out = wire::ResourceSpans::default();
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(body)) => {
                let mut resource = wire::Resource::default();
                let mut inner = Reader::new(body);
                while let Some((n, f)) = inner.next()? {
                    if let (1, Field::Bytes(kv)) = (n, f) {
                        push(&mut resource.attributes, key_value(kv, 0)?)?;
                    }
                }
                out.resource = Some(resource);
            }
            (2, Field::Bytes(body)) => push(&mut out.scope_spans, scope_spans(body)?)?,
            _ => {}
        }
    }
    Ok(out)
}

fn scope_spans(bytes: &[u8]) -> Result<wire::ScopeSpans<'_>> {
    let mut out = wire::ScopeSpans::default();
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(body)) => {
                let mut scope = wire::Scope {
                    name: Some(Cow::Borrowed("")),
                    version: Some(Cow::Borrowed("")),
                };
                let mut inner = Reader::new(body);
                while let Some((n, f)) = inner.next()? {
                    match (n, f) {
                        (1, Field::Bytes(s)) => scope.name = Some(Cow::Borrowed(text(s)?)),
                        (2, Field::Bytes(s)) => scope.version = Some(Cow::Borrowed(text(s)?)),
                        _ => {}
                    }
                }
                out.scope = Some(scope);
            }
            (2, Field::Bytes(body)) => push(&mut out.spans, span(body)?)?,
            _ => {}
        }
    }
    Ok(out)
}

fn span(bytes: &[u8]) -> Result<wire::Span<'_>> {
    let mut out = wire::Span {
        kind: Some(Scalar::Int(0)),
        start_time_unix_nano: Some(Scalar::UInt(0)),
        end_time_unix_nano: Some(Scalar::UInt(0)),
        ..Default::default()
    };
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(b)) => out.trace_id = hex_id(b),
            (2, Field::Bytes(b)) => out.span_id = hex_id(b),
            (4, Field::Bytes(b)) => out.parent_span_id = hex_id(b),
            (5, Field::Bytes(b)) => out.name = Cow::Borrowed(text(b)?),
            (6, Field::Varint(v)) => out.kind = Some(Scalar::Int(i64::from(v as i32))),
            (7, Field::Fixed64(v)) => out.start_time_unix_nano = Some(Scalar::UInt(v)),
            (8, Field::Fixed64(v)) => out.end_time_unix_nano = Some(Scalar::UInt(v)),
            (9, Field::Bytes(b)) => push(&mut out.attributes, key_value(b, 0)?)?,
            (11, Field::Bytes(b)) => push(&mut out.events, event(b)?)?,
            (15, Field::Bytes(b)) => out.status = Some(status(b)?),
            _ => {}
        }
    }
    Ok(out)
}

fn event(bytes: &[u8]) -> Result<wire::Event<'_>> {
    let mut out = wire::Event {
        time_unix_nano: Some(Scalar::UInt(0)),
        ..Default::default()
    };
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Fixed64(v)) => out.time_unix_nano = Some(Scalar::UInt(v)),
            (2, Field::Bytes(b)) => out.name = Cow::Borrowed(text(b)?),
            (3, Field::Bytes(b)) => push(&mut out.attributes, key_value(b, 0)?)?,
            _ => {}
        }
    }
    Ok(out)
}

fn status(bytes: &[u8]) -> Result<wire::Status<'_>> {
    let mut out = wire::Status {
        code: Some(Scalar::Int(0)),
        message: Some(Cow::Borrowed("")),
    };
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (2, Field::Bytes(b)) => out.message = Some(Cow::Borrowed(text(b)?)),
            (3, Field::Varint(v)) => out.code = Some(Scalar::Int(i64::from(v as i32))),
            _ => {}
        }
    }
    Ok(out)
}

fn key_value(bytes: &[u8], depth: usize) -> Result<wire::KeyValue<'_>> {
    let mut out = wire::KeyValue::default();
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(b)) => out.key = Cow::Borrowed(text(b)?),
            (2, Field::Bytes(b)) => out.value = Some(any_value(b, depth + 1)?),
            _ => {}
        }
    }
    Ok(out)
}

fn any_value(bytes: &[u8], depth: usize) -> Result<wire::AnyValue<'_>> {
    if depth > MAX_DEPTH {
        return Err(Malformed::TooDeep(MAX_DEPTH));
    }
    let mut out = wire::AnyValue::default();
    let mut reader = Reader::new(bytes);
    // A oneof: the last member on the wire wins, as in any protobuf decoder.
    while let Some((number, field)) = reader.next()? {
        let mut value = wire::AnyValue::default();
        match (number, field) {
            (1, Field::Bytes(b)) => {
                value.string_value = Some(Text::Plain(Cow::Borrowed(text(b)?)));
            }
            (2, Field::Varint(v)) => value.bool_value = Some(v != 0),
            (3, Field::Varint(v)) => value.int_value = Some(Scalar::Int(v as i64)),
            (4, Field::Fixed64(v)) => value.double_value = Some(Scalar::Float(f64::from_bits(v))),
            (5, Field::Bytes(b)) => {
                let mut values = Vec::new();
                let mut inner = Reader::new(b);
                while let Some((n, f)) = inner.next()? {
                    if let (1, Field::Bytes(item)) = (n, f) {
                        push(&mut values, any_value(item, depth + 1)?)?;
                    }
                }
                value.array_value = Some(Box::new(wire::ArrayValue { values }));
            }
            (6, Field::Bytes(b)) => {
                let mut values = Vec::new();
                let mut inner = Reader::new(b);
                while let Some((n, f)) = inner.next()? {
                    if let (1, Field::Bytes(kv)) = (n, f) {
                        push(&mut values, key_value(kv, depth + 1)?)?;
                    }
                }
                value.kvlist_value = Some(Box::new(wire::KvList { values }));
            }
            (7, Field::Bytes(b)) => {
                use base64::Engine as _;
                value.bytes_value = Some(Box::new(Cow::Owned(
                    base64::engine::general_purpose::STANDARD.encode(b),
                )));
            }
            _ => continue,
        }
        out = value;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// The borrowed decoder and prost agree on every protobuf fixture.
    #[test]
    fn agrees_with_prost_on_the_fixtures() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/corpus/otlp-python-sdk/http-protobuf");
        let mut seen = 0;
        for entry in std::fs::read_dir(root).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("pb") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let owned = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(
                bytes.as_slice(),
            )
            .unwrap();
            let expected = format!("{:?}", super::super::proto::request_to_wire(&owned));
            let borrowed = format!("{:?}", request(&bytes).unwrap());
            assert_eq!(borrowed, expected, "{}", path.display());
            seen += 1;
        }
        assert!(seen >= 5);
    }

    #[test]
    fn truncated_and_hostile_input_is_an_error() {
        assert!(request(&[0x0a, 0x05, 0x01]).is_err());
        assert!(request(&[0x0b]).is_err());
        // 100 nested array values.
        let mut value = vec![0x0a, 0x00];
        let field = |tag: u8, body: &[u8]| {
            let mut out = vec![tag];
            prost::encoding::encode_varint(body.len() as u64, &mut out);
            out.extend(body);
            out
        };
        for _ in 0..100 {
            // AnyValue { array_value: ArrayValue { values: [value] } }
            value = field(0x2a, &field(0x0a, &value));
        }
        assert!(any_value(&value, 0).is_err());
    }
}
