//! The line `serve` spools for a protobuf body, written straight from the body's bytes in one
//! pass: byte for byte what `serde_json::to_vec(&CheckedRequest::to_owned_request())` writes,
//! without decoding the body a second time into opentelemetry-proto's owned request.
//!
//! The encoding is opentelemetry-proto's serde encoding (`with-serde`): every field in
//! declaration order, defaults included (only a zero `keyStrindex` is left out), a missing
//! message as `null`; ids as lowercase hex, 64-bit times and `intValue` as decimal strings,
//! bytes as padded base64, a non-finite double as `null`, strings escaped by serde_json.
//!
//! The body is read as prost reads it: unknown fields are skipped, the last occurrence of a
//! singular scalar field wins, every field is checked even in spans left out. Where prost would
//! refuse the body (a known field with another wire type, a string that is not UTF-8, a field
//! number prost refuses, deep nesting), or would merge two occurrences of a singular message,
//! nothing is written: the caller takes the owned path, which handles those bodies.

use base64::Engine as _;

use super::protobuf::{Field, Reader};

/// A body this module leaves to the owned path.
struct Unsupported;

type Step<T = ()> = Result<T, Unsupported>;

/// Above this prost refuses the key (it must fit in 32 bits with the wire type).
const MAX_FIELD_NUMBER: u32 = u32::MAX >> 3;

/// Messages nested deeper than this are left to the owned path; prost's own limit is 100, so
/// everything written here is something prost decodes.
const MAX_NESTING: usize = 64;

/// The spool line for `body` with the spans at `rejected_at` (ascending positions over all
/// spans in request order) left out, and scopes and resources left without spans dropped.
/// `None` when the body is one the owned path must handle, or holds other than `spans` spans.
pub(super) fn line(body: &[u8], rejected_at: &[usize], spans: usize) -> Option<Vec<u8>> {
    let mut transcoder = Transcoder {
        out: Vec::with_capacity(body.len().saturating_mul(2).saturating_add(64)),
        rejected_at,
        rejected_seen: 0,
        position: 0,
    };
    transcoder.request(body).ok()?;
    (transcoder.position == spans && transcoder.rejected_seen == rejected_at.len())
        .then_some(transcoder.out)
}

struct Transcoder<'r> {
    out: Vec<u8>,
    rejected_at: &'r [usize],
    /// How many of `rejected_at` were passed.
    rejected_seen: usize,
    /// Spans passed so far, kept or not.
    position: usize,
}

/// Visits each field of one message, as prost's decoder would see it.
fn each_field<'a>(bytes: &'a [u8], mut visit: impl FnMut(u32, Field<'a>) -> Step) -> Step {
    let mut reader = Reader::new(bytes);
    while let Some((number, field)) = reader.next().map_err(|_| Unsupported)? {
        if number > MAX_FIELD_NUMBER {
            return Err(Unsupported);
        }
        visit(number, field)?;
    }
    Ok(())
}

fn message(field: Field<'_>) -> Step<&[u8]> {
    match field {
        Field::Bytes(bytes) => Ok(bytes),
        _ => Err(Unsupported),
    }
}

fn string(field: Field<'_>) -> Step<&str> {
    std::str::from_utf8(message(field)?).map_err(|_| Unsupported)
}

fn varint(field: Field<'_>) -> Step<u64> {
    match field {
        Field::Varint(value) => Ok(value),
        _ => Err(Unsupported),
    }
}

fn fixed64(field: Field<'_>) -> Step<u64> {
    match field {
        Field::Fixed64(value) => Ok(value),
        _ => Err(Unsupported),
    }
}

fn fixed32(field: Field<'_>) -> Step<u32> {
    match field {
        Field::Fixed32(value) => Ok(value),
        _ => Err(Unsupported),
    }
}

/// Keeps the first occurrence of a singular message field; a second one prost would merge
/// into it, which is left to the owned path.
fn only_once<'a>(slot: &mut Option<&'a [u8]>, field: Field<'a>) -> Step {
    match slot.replace(message(field)?) {
        None => Ok(()),
        Some(_) => Err(Unsupported),
    }
}

impl Transcoder<'_> {
    fn raw(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    /// A number or string as serde_json writes it.
    fn json(&mut self, value: &(impl serde::Serialize + ?Sized)) -> Step {
        serde_json::to_writer(&mut self.out, value).map_err(|_| Unsupported)
    }

    /// A 64-bit integer as a JSON string.
    fn quoted(&mut self, value: impl serde::Serialize) -> Step {
        self.out.push(b'"');
        self.json(&value)?;
        self.out.push(b'"');
        Ok(())
    }

    fn hex(&mut self, bytes: &[u8]) -> Step {
        self.out.push(b'"');
        let start = self.out.len();
        self.out.resize(start + 2 * bytes.len(), 0);
        hex::encode_to_slice(bytes, &mut self.out[start..]).map_err(|_| Unsupported)?;
        self.out.push(b'"');
        Ok(())
    }

    /// A singular message field: the message, or `null` when the body has none.
    fn optional(
        &mut self,
        body: Option<&[u8]>,
        depth: usize,
        item: fn(&mut Self, &[u8], usize) -> Step,
    ) -> Step {
        match body {
            Some(body) => item(self, body, depth),
            None => {
                self.raw("null");
                Ok(())
            }
        }
    }

    /// A JSON array of every field `number` of the message `bytes`, written by `item`.
    fn list(
        &mut self,
        bytes: &[u8],
        number: u32,
        depth: usize,
        item: fn(&mut Self, &[u8], usize) -> Step,
    ) -> Step {
        self.out.push(b'[');
        let mut first = true;
        each_field(bytes, |n, field| {
            if n != number {
                return Ok(());
            }
            let body = message(field)?;
            if !first {
                self.out.push(b',');
            }
            first = false;
            item(self, body, depth)
        })?;
        self.out.push(b']');
        Ok(())
    }

    fn string_list(&mut self, bytes: &[u8], number: u32) -> Step {
        self.out.push(b'[');
        let mut first = true;
        each_field(bytes, |n, field| {
            if n != number {
                return Ok(());
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.json(string(field)?)
        })?;
        self.out.push(b']');
        Ok(())
    }

    /// Writes the members of `bytes` with `item`, separated by commas, and keeps only those
    /// for which it says true (the output is cut back for the others). Whether any was kept.
    fn kept_members(
        &mut self,
        bytes: &[u8],
        number: u32,
        depth: usize,
        item: fn(&mut Self, &[u8], usize) -> Step<bool>,
    ) -> Step<bool> {
        let mut kept = false;
        each_field(bytes, |n, field| {
            if n != number {
                return Ok(());
            }
            let body = message(field)?;
            let start = self.out.len();
            if kept {
                self.out.push(b',');
            }
            if item(self, body, depth)? {
                kept = true;
            } else {
                self.out.truncate(start);
            }
            Ok(())
        })?;
        Ok(kept)
    }

    fn request(&mut self, bytes: &[u8]) -> Step {
        self.raw(r#"{"resourceSpans":["#);
        self.kept_members(bytes, 1, 1, Self::resource_spans)?;
        self.raw("]}");
        Ok(())
    }

    /// Whether the resource kept a scope with spans (else `to_owned_request` drops it).
    fn resource_spans(&mut self, bytes: &[u8], depth: usize) -> Step<bool> {
        let (mut resource, mut schema_url) = (None, "");
        each_field(bytes, |n, field| {
            match n {
                1 => only_once(&mut resource, field)?,
                3 => schema_url = string(field)?,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"resource":"#);
        self.optional(resource, depth + 1, Self::resource)?;
        self.raw(r#","scopeSpans":["#);
        let kept = self.kept_members(bytes, 2, depth + 1, Self::scope_spans)?;
        self.raw(r#"],"schemaUrl":"#);
        self.json(schema_url)?;
        self.out.push(b'}');
        Ok(kept)
    }

    fn resource(&mut self, bytes: &[u8], depth: usize) -> Step {
        let mut dropped_attributes = 0u32;
        each_field(bytes, |n, field| {
            if n == 2 {
                dropped_attributes = varint(field)? as u32;
            }
            Ok(())
        })?;
        self.raw(r#"{"attributes":"#);
        self.list(bytes, 1, depth + 1, Self::key_value)?;
        self.raw(r#","droppedAttributesCount":"#);
        self.json(&dropped_attributes)?;
        self.raw(r#","entityRefs":"#);
        self.list(bytes, 3, depth + 1, Self::entity_ref)?;
        self.out.push(b'}');
        Ok(())
    }

    fn entity_ref(&mut self, bytes: &[u8], _depth: usize) -> Step {
        let (mut schema_url, mut kind) = ("", "");
        each_field(bytes, |n, field| {
            match n {
                1 => schema_url = string(field)?,
                2 => kind = string(field)?,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"schemaUrl":"#);
        self.json(schema_url)?;
        self.raw(r#","type":"#);
        self.json(kind)?;
        self.raw(r#","idKeys":"#);
        self.string_list(bytes, 3)?;
        self.raw(r#","descriptionKeys":"#);
        self.string_list(bytes, 4)?;
        self.out.push(b'}');
        Ok(())
    }

    /// Whether the scope kept a span (else `to_owned_request` drops it).
    fn scope_spans(&mut self, bytes: &[u8], depth: usize) -> Step<bool> {
        let (mut scope, mut schema_url) = (None, "");
        each_field(bytes, |n, field| {
            match n {
                1 => only_once(&mut scope, field)?,
                3 => schema_url = string(field)?,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"scope":"#);
        self.optional(scope, depth + 1, Self::scope)?;
        self.raw(r#","spans":["#);
        let kept = self.kept_members(bytes, 2, depth + 1, Self::judged_span)?;
        self.raw(r#"],"schemaUrl":"#);
        self.json(schema_url)?;
        self.out.push(b'}');
        Ok(kept)
    }

    fn scope(&mut self, bytes: &[u8], depth: usize) -> Step {
        let (mut name, mut version, mut dropped_attributes) = ("", "", 0u32);
        each_field(bytes, |n, field| {
            match n {
                1 => name = string(field)?,
                2 => version = string(field)?,
                4 => dropped_attributes = varint(field)? as u32,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"name":"#);
        self.json(name)?;
        self.raw(r#","version":"#);
        self.json(version)?;
        self.raw(r#","attributes":"#);
        self.list(bytes, 3, depth + 1, Self::key_value)?;
        self.raw(r#","droppedAttributesCount":"#);
        self.json(&dropped_attributes)?;
        self.out.push(b'}');
        Ok(())
    }

    /// Writes the span, rejected or not, so that prost's checks apply to every span; whether
    /// it is kept.
    fn judged_span(&mut self, bytes: &[u8], depth: usize) -> Step<bool> {
        self.span(bytes, depth)?;
        let rejected = self.rejected_at.get(self.rejected_seen) == Some(&self.position);
        self.position += 1;
        if rejected {
            self.rejected_seen += 1;
        }
        Ok(!rejected)
    }

    fn span(&mut self, bytes: &[u8], depth: usize) -> Step {
        let mut span = SpanScalars::default();
        each_field(bytes, |n, field| span.read(n, field))?;
        self.raw(r#"{"traceId":"#);
        self.hex(span.trace_id)?;
        self.raw(r#","spanId":"#);
        self.hex(span.span_id)?;
        self.raw(r#","traceState":"#);
        self.json(span.trace_state)?;
        self.raw(r#","parentSpanId":"#);
        self.hex(span.parent_span_id)?;
        self.raw(r#","flags":"#);
        self.json(&span.flags)?;
        self.raw(r#","name":"#);
        self.json(span.name)?;
        self.raw(r#","kind":"#);
        self.json(&span.kind)?;
        self.raw(r#","startTimeUnixNano":"#);
        self.quoted(span.start_time)?;
        self.raw(r#","endTimeUnixNano":"#);
        self.quoted(span.end_time)?;
        self.raw(r#","attributes":"#);
        self.list(bytes, 9, depth + 1, Self::key_value)?;
        self.raw(r#","droppedAttributesCount":"#);
        self.json(&span.dropped_attributes)?;
        self.raw(r#","events":"#);
        self.list(bytes, 11, depth + 1, Self::event)?;
        self.raw(r#","droppedEventsCount":"#);
        self.json(&span.dropped_events)?;
        self.raw(r#","links":"#);
        self.list(bytes, 13, depth + 1, Self::link)?;
        self.raw(r#","droppedLinksCount":"#);
        self.json(&span.dropped_links)?;
        self.raw(r#","status":"#);
        self.optional(span.status, depth + 1, Self::status)?;
        self.out.push(b'}');
        Ok(())
    }

    fn event(&mut self, bytes: &[u8], depth: usize) -> Step {
        let (mut time, mut name, mut dropped_attributes) = (0u64, "", 0u32);
        each_field(bytes, |n, field| {
            match n {
                1 => time = fixed64(field)?,
                2 => name = string(field)?,
                4 => dropped_attributes = varint(field)? as u32,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"timeUnixNano":"#);
        self.quoted(time)?;
        self.raw(r#","name":"#);
        self.json(name)?;
        self.raw(r#","attributes":"#);
        self.list(bytes, 3, depth + 1, Self::key_value)?;
        self.raw(r#","droppedAttributesCount":"#);
        self.json(&dropped_attributes)?;
        self.out.push(b'}');
        Ok(())
    }

    fn link(&mut self, bytes: &[u8], depth: usize) -> Step {
        let (mut trace_id, mut span_id, mut trace_state): (&[u8], &[u8], &str) = (&[], &[], "");
        let (mut dropped_attributes, mut flags) = (0u32, 0u32);
        each_field(bytes, |n, field| {
            match n {
                1 => trace_id = message(field)?,
                2 => span_id = message(field)?,
                3 => trace_state = string(field)?,
                5 => dropped_attributes = varint(field)? as u32,
                6 => flags = fixed32(field)?,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"traceId":"#);
        self.hex(trace_id)?;
        self.raw(r#","spanId":"#);
        self.hex(span_id)?;
        self.raw(r#","traceState":"#);
        self.json(trace_state)?;
        self.raw(r#","attributes":"#);
        self.list(bytes, 4, depth + 1, Self::key_value)?;
        self.raw(r#","droppedAttributesCount":"#);
        self.json(&dropped_attributes)?;
        self.raw(r#","flags":"#);
        self.json(&flags)?;
        self.out.push(b'}');
        Ok(())
    }

    fn status(&mut self, bytes: &[u8], _depth: usize) -> Step {
        let (mut message_text, mut code) = ("", 0i32);
        each_field(bytes, |n, field| {
            match n {
                2 => message_text = string(field)?,
                3 => code = varint(field)? as i32,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"message":"#);
        self.json(message_text)?;
        self.raw(r#","code":"#);
        self.json(&code)?;
        self.out.push(b'}');
        Ok(())
    }

    fn key_value(&mut self, bytes: &[u8], depth: usize) -> Step {
        if depth > MAX_NESTING {
            return Err(Unsupported);
        }
        let (mut key, mut value, mut key_strindex) = ("", None, 0i32);
        each_field(bytes, |n, field| {
            match n {
                1 => key = string(field)?,
                2 => only_once(&mut value, field)?,
                3 => key_strindex = varint(field)? as i32,
                _ => {}
            }
            Ok(())
        })?;
        self.raw(r#"{"key":"#);
        self.json(key)?;
        self.raw(r#","value":"#);
        self.optional(value, depth + 1, Self::any_value)?;
        if key_strindex != 0 {
            self.raw(r#","keyStrindex":"#);
            self.json(&key_strindex)?;
        }
        self.out.push(b'}');
        Ok(())
    }

    /// A oneof: each member is written over the one before it, so the last one on the wire
    /// stays and every one is checked, as prost checks it.
    fn any_value(&mut self, bytes: &[u8], depth: usize) -> Step {
        if depth > MAX_NESTING {
            return Err(Unsupported);
        }
        self.out.push(b'{');
        let start = self.out.len();
        let mut previous = 0;
        each_field(bytes, |n, field| {
            if !(1..=8).contains(&n) {
                return Ok(());
            }
            // Prost merges an array or kvlist into the one just before it.
            if n == previous && matches!(n, 5 | 6) {
                return Err(Unsupported);
            }
            previous = n;
            self.out.truncate(start);
            match n {
                1 => {
                    self.raw(r#""stringValue":"#);
                    self.json(string(field)?)
                }
                2 => {
                    self.raw(r#""boolValue":"#);
                    self.raw(if varint(field)? != 0 { "true" } else { "false" });
                    Ok(())
                }
                3 => {
                    self.raw(r#""intValue":"#);
                    self.quoted(varint(field)? as i64)
                }
                4 => {
                    self.raw(r#""doubleValue":"#);
                    self.json(&f64::from_bits(fixed64(field)?))
                }
                5 => {
                    self.raw(r#""arrayValue":{"values":"#);
                    self.list(message(field)?, 1, depth + 2, Self::any_value)?;
                    self.out.push(b'}');
                    Ok(())
                }
                6 => {
                    self.raw(r#""kvlistValue":{"values":"#);
                    self.list(message(field)?, 1, depth + 2, Self::key_value)?;
                    self.out.push(b'}');
                    Ok(())
                }
                7 => {
                    self.raw(r#""bytesValue":""#);
                    let encoded = base64::engine::general_purpose::STANDARD.encode(message(field)?);
                    self.raw(&encoded);
                    self.out.push(b'"');
                    Ok(())
                }
                _ => {
                    self.raw(r#""stringValueStrindex":"#);
                    self.json(&(varint(field)? as i32))
                }
            }
        })?;
        self.out.push(b'}');
        Ok(())
    }
}

/// A span's singular fields, the last occurrence of each.
#[derive(Default)]
struct SpanScalars<'a> {
    trace_id: &'a [u8],
    span_id: &'a [u8],
    trace_state: &'a str,
    parent_span_id: &'a [u8],
    flags: u32,
    name: &'a str,
    kind: i32,
    start_time: u64,
    end_time: u64,
    dropped_attributes: u32,
    dropped_events: u32,
    dropped_links: u32,
    status: Option<&'a [u8]>,
}

impl<'a> SpanScalars<'a> {
    fn read(&mut self, number: u32, field: Field<'a>) -> Step {
        match number {
            1 => self.trace_id = message(field)?,
            2 => self.span_id = message(field)?,
            3 => self.trace_state = string(field)?,
            4 => self.parent_span_id = message(field)?,
            5 => self.name = string(field)?,
            6 => self.kind = varint(field)? as i32,
            7 => self.start_time = fixed64(field)?,
            8 => self.end_time = fixed64(field)?,
            10 => self.dropped_attributes = varint(field)? as u32,
            12 => self.dropped_events = varint(field)? as u32,
            14 => self.dropped_links = varint(field)? as u32,
            15 => only_once(&mut self.status, field)?,
            16 => self.flags = fixed32(field)?,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "spool_json_tests.rs"]
mod tests;
