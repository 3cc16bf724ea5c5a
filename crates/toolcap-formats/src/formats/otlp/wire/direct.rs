//! Reading a request the way exporters write it, straight from its bytes: camelCase fields,
//! field names without escapes, no nulls. serde's visitors spend their time per field and per
//! token rather than per byte; this reader compares a field name once and moves on.
//!
//! Anything else it leaves to serde ([`UnsupportedShape`]), possibly after handing on some
//! spans: the caller drops those and reads the request whole with
//! [`Request::parse`](super::Request::parse), whose verdict stands. What it accepts it reads
//! exactly as that model does: the same spans in the same order, the same texts (a string
//! with escapes is decoded by serde_json itself), the same numbers (any number but a plain
//! unsigned integer is read by serde_json), the same decode-budget charges. A field the model
//! ignores is checked and passed over here too; a field name with an underscore (the
//! snake_case aliases) is an unsupported shape, so no alias is ever taken for an unknown field.

use std::borrow::Cow;

use serde::de::IgnoredAny;

use super::{
    Event, Resource, ResourceSpans, Scalar, ScopeSpans, Span, Status, Text, count_request_decoded,
    plain_digits,
};
use crate::formats::otlp::decode_budget::{Budget, Growth};

mod values;

/// Takes each span with the position of the resource it is under and that resource.
pub type EachSpan<'f, 'a> = dyn FnMut(usize, Option<&Resource<'a>>, &Span<'a>) + 'f;

/// The request is not in the shape this reader reads; read it through serde.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedShape;

type Read<T> = Result<T, UnsupportedShape>;

/// Nesting of array and key-value-list values read here; deeper ones are left to serde.
const MAX_VALUE_DEPTH: usize = 16;

/// Reads the request in `text`, handing each span to `each` in request order (see the module
/// notes for what happens on [`UnsupportedShape`]).
pub fn for_each_span<'a>(
    text: &'a str,
    each: &mut EachSpan<'_, 'a>,
) -> Result<(), UnsupportedShape> {
    let _budget = Budget::for_input(text.len());
    let mut cursor = Cursor {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    cursor.request(each)?;
    cursor.skip_whitespace();
    if cursor.at != text.len() {
        return Err(UnsupportedShape);
    }
    count_request_decoded();
    Ok(())
}

struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

/// Marks field `bit` read, giving up when it was read before (serde refuses a repeated field).
fn first_time(seen: &mut u16, bit: u16) -> Read<()> {
    if *seen & bit != 0 {
        return Err(UnsupportedShape);
    }
    *seen |= bit;
    Ok(())
}

fn charged(result: Result<(), crate::formats::otlp::decode_budget::OverBudget>) -> Read<()> {
    result.map_err(|_| UnsupportedShape)
}

impl<'a> Cursor<'a> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Read<()> {
        match self.peek() == Some(byte) {
            true => {
                self.at += 1;
                Ok(())
            }
            false => Err(UnsupportedShape),
        }
    }

    /// Reads each field of an object with `field(cursor, name)`, which reads its value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Read<()>) -> Read<()> {
        self.eat(b'{')?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            let name = self.string_token()?;
            if name.escaped() {
                return Err(UnsupportedShape);
            }
            self.eat(b':')?;
            field(self, &name.token[1..name.token.len() - 1])?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(UnsupportedShape),
            }
        }
    }

    /// Reads each item of an array with `item`, charging the budget for items of type `T`.
    fn array<T>(&mut self, mut item: impl FnMut(&mut Self) -> Read<()>) -> Read<()> {
        self.eat(b'[')?;
        let mut growth = Growth::of::<T>();
        if self.peek() == Some(b']') {
            self.at += 1;
        } else {
            loop {
                item(self)?;
                charged(growth.add())?;
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b']') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(UnsupportedShape),
                }
            }
        }
        charged(growth.finish())
    }

    /// A string token, quotes included, checked as serde_json checks the strings it reads (no
    /// control characters, known escapes only), with the length of its text once unescaped,
    /// counted from the escapes met on the way (a surrogate's `\u` escape is left uncounted:
    /// `None`).
    fn string_token(&mut self) -> Read<StringToken<'a>> {
        if self.peek() != Some(b'"') {
            return Err(UnsupportedShape);
        }
        let start = self.at;
        let mut at = start + 1;
        // Bytes the escapes so far give up once decoded.
        let mut shrunk = Some(0usize);
        loop {
            at += plain_run(&self.bytes[at..]);
            match self.bytes.get(at) {
                Some(b'"') => {
                    self.at = at + 1;
                    let body_len = at - start - 1;
                    return Ok(StringToken {
                        token: &self.text[start..at + 1],
                        decoded_len: shrunk.and_then(|s| u32::try_from(body_len - s).ok()),
                    });
                }
                Some(b'\\') => {}
                // A control character, or the end of the input inside the string.
                _ => return Err(UnsupportedShape),
            }
            let (taken, decoded) = match self.bytes.get(at + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => (2, Some(1)),
                Some(b'u') => match self
                    .bytes
                    .get(at + 2..at + 6)
                    .and_then(super::unescape::hex4)
                {
                    Some(0..=0x7f) => (6, Some(1)),
                    Some(0x80..=0x7ff) => (6, Some(2)),
                    Some(0xd800..=0xdfff) => (6, None),
                    Some(_) => (6, Some(3)),
                    None => return Err(UnsupportedShape),
                },
                _ => return Err(UnsupportedShape),
            };
            shrunk = shrunk.zip(decoded).map(|(s, d)| s + taken - d);
            at += taken;
        }
    }

    /// A string as serde reads it into a `Cow<str>`: borrowed without escapes, decoded by
    /// serde_json with them.
    fn text(&mut self) -> Read<Cow<'a, str>> {
        let string = self.string_token()?;
        let token = string.token;
        match string.escaped() {
            false => Ok(Cow::Borrowed(&token[1..token.len() - 1])),
            true => serde_json::from_str::<String>(token)
                .map(Cow::Owned)
                .map_err(|_| UnsupportedShape),
        }
    }

    fn number_token(&mut self) -> Read<&'a str> {
        self.skip_whitespace();
        let start = self.at;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
        }
        match self.at > start {
            true => Ok(&self.text[start..self.at]),
            false => Err(UnsupportedShape),
        }
    }

    /// A number or a string holding one, as [`Scalar`] reads it.
    fn scalar(&mut self) -> Read<Scalar<'a>> {
        match self.peek() {
            Some(b'"') => self.text().map(Scalar::Str),
            Some(b'-' | b'0'..=b'9') => {
                let token = self.number_token()?;
                match plain_unsigned(token) {
                    Some(number) => Ok(Scalar::UInt(number)),
                    None => serde_json::from_str::<Scalar>(token).map_err(|_| UnsupportedShape),
                }
            }
            _ => Err(UnsupportedShape),
        }
    }

    fn boolean(&mut self) -> Read<bool> {
        for (word, value) in [("true", true), ("false", false)] {
            if self.bytes[self.at..].starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(UnsupportedShape)
    }

    /// Passes over the value of a field the model ignores, checked as serde checks it.
    fn ignore(&mut self, name: &str) -> Read<()> {
        if name.contains('_') || name == "instrumentationLibrarySpans" {
            return Err(UnsupportedShape);
        }
        match self.peek().ok_or(UnsupportedShape)? {
            b'"' => self.string_token().map(drop),
            b'-' | b'0'..=b'9' => {
                let token = self.number_token()?;
                match plain_unsigned(token) {
                    Some(_) => Ok(()),
                    None => serde_json::from_str::<IgnoredAny>(token)
                        .map(drop)
                        .map_err(|_| UnsupportedShape),
                }
            }
            b't' | b'f' => self.boolean().map(drop),
            b'n' if self.bytes[self.at..].starts_with(b"null") => {
                self.at += 4;
                Ok(())
            }
            b'{' | b'[' => {
                let rest = &self.text[self.at..];
                let mut values = serde_json::Deserializer::from_str(rest).into_iter::<IgnoredAny>();
                match values.next() {
                    Some(Ok(_)) => {
                        self.at += values.byte_offset();
                        Ok(())
                    }
                    _ => Err(UnsupportedShape),
                }
            }
            _ => Err(UnsupportedShape),
        }
    }

    fn request(&mut self, each: &mut EachSpan<'_, 'a>) -> Read<()> {
        let mut seen = 0;
        let mut resources = 0usize;
        self.object(|cursor, name| match name {
            "resourceSpans" => {
                first_time(&mut seen, 1)?;
                cursor.array::<ResourceSpans>(|cursor| {
                    cursor.resource_spans(resources, each)?;
                    resources += 1;
                    Ok(())
                })
            }
            other => cursor.ignore(other),
        })
    }

    fn resource_spans(&mut self, index: usize, each: &mut EachSpan<'_, 'a>) -> Read<()> {
        let mut seen = 0;
        let mut resource: Option<Resource<'a>> = None;
        // Spans met before their resource, handed on once it is read.
        let mut kept: Vec<Span<'a>> = Vec::new();
        self.object(|cursor, name| match name {
            "resource" => {
                first_time(&mut seen, 1)?;
                resource = Some(cursor.resource()?);
                Ok(())
            }
            "scopeSpans" => {
                first_time(&mut seen, 2)?;
                let known = seen & 1 != 0;
                let mut span = Span::default();
                cursor.array::<ScopeSpans>(|cursor| {
                    cursor.scope_spans(|cursor| {
                        cursor.span_into(&mut span)?;
                        match known {
                            true => each(index, resource.as_ref(), &span),
                            false => kept.push(std::mem::take(&mut span)),
                        }
                        Ok(())
                    })
                })
            }
            other => cursor.ignore(other),
        })?;
        for span in &kept {
            each(index, resource.as_ref(), span);
        }
        Ok(())
    }

    fn resource(&mut self) -> Read<Resource<'a>> {
        let mut seen = 0;
        let mut resource = Resource::default();
        self.object(|cursor, name| match name {
            "attributes" => {
                first_time(&mut seen, 1)?;
                cursor.key_values_into(&mut resource.attributes)
            }
            other => cursor.ignore(other),
        })?;
        Ok(resource)
    }

    /// A scope's spans, each read by `span`; the scope itself is checked as the model checks
    /// it, and dropped.
    fn scope_spans(&mut self, mut span: impl FnMut(&mut Self) -> Read<()>) -> Read<()> {
        let mut seen = 0;
        self.object(|cursor, name| match name {
            "scope" => {
                first_time(&mut seen, 1)?;
                cursor.scope()
            }
            "spans" => {
                first_time(&mut seen, 2)?;
                cursor.array::<Span>(&mut span)
            }
            other => cursor.ignore(other),
        })
    }

    fn scope(&mut self) -> Read<()> {
        let mut seen = 0;
        self.object(|cursor, name| match name {
            "name" => {
                first_time(&mut seen, 1)?;
                cursor.text().map(drop)
            }
            "version" => {
                first_time(&mut seen, 2)?;
                cursor.text().map(drop)
            }
            other => cursor.ignore(other),
        })
    }

    /// Reads a span into `span`, which may hold the previous one: its lists' room is reused.
    fn span_into(&mut self, span: &mut Span<'a>) -> Read<()> {
        let mut attributes = std::mem::take(&mut span.attributes);
        let mut events = std::mem::take(&mut span.events);
        attributes.clear();
        events.clear();
        *span = Span::default();
        let mut seen = 0;
        self.object(|cursor, name| {
            match name {
                "traceId" => {
                    first_time(&mut seen, 1)?;
                    span.trace_id = Some(cursor.text()?);
                }
                "spanId" => {
                    first_time(&mut seen, 1 << 1)?;
                    span.span_id = Some(cursor.text()?);
                }
                "parentSpanId" => {
                    first_time(&mut seen, 1 << 2)?;
                    span.parent_span_id = Some(cursor.text()?);
                }
                "name" => {
                    first_time(&mut seen, 1 << 3)?;
                    span.name = cursor.text()?;
                }
                "kind" => {
                    first_time(&mut seen, 1 << 4)?;
                    span.kind = Some(cursor.scalar()?);
                }
                "startTimeUnixNano" => {
                    first_time(&mut seen, 1 << 5)?;
                    span.start_time_unix_nano = Some(cursor.scalar()?);
                }
                "endTimeUnixNano" => {
                    first_time(&mut seen, 1 << 6)?;
                    span.end_time_unix_nano = Some(cursor.scalar()?);
                }
                "attributes" => {
                    first_time(&mut seen, 1 << 7)?;
                    cursor.key_values_into(&mut attributes)?;
                }
                "events" => {
                    first_time(&mut seen, 1 << 8)?;
                    cursor.array::<Event>(|cursor| {
                        events.push(cursor.event()?);
                        Ok(())
                    })?;
                }
                "status" => {
                    first_time(&mut seen, 1 << 9)?;
                    span.status = Some(cursor.status()?);
                }
                other => cursor.ignore(other)?,
            }
            Ok(())
        })?;
        span.attributes = attributes;
        span.events = events;
        Ok(())
    }

    fn event(&mut self) -> Read<Event<'a>> {
        let mut seen = 0;
        let mut event = Event::default();
        self.object(|cursor, name| match name {
            "timeUnixNano" => {
                first_time(&mut seen, 1)?;
                event.time_unix_nano = Some(cursor.scalar()?);
                Ok(())
            }
            "name" => {
                first_time(&mut seen, 2)?;
                event.name = cursor.text()?;
                Ok(())
            }
            "attributes" => {
                first_time(&mut seen, 4)?;
                cursor.key_values_into(&mut event.attributes)
            }
            other => cursor.ignore(other),
        })?;
        Ok(event)
    }

    fn status(&mut self) -> Read<Status<'a>> {
        let mut seen = 0;
        let mut status = Status::default();
        self.object(|cursor, name| match name {
            "code" => {
                first_time(&mut seen, 1)?;
                status.code = Some(cursor.scalar()?);
                Ok(())
            }
            "message" => {
                first_time(&mut seen, 2)?;
                status.message = Some(cursor.text()?);
                Ok(())
            }
            other => cursor.ignore(other),
        })?;
        Ok(status)
    }
}

/// A plain unsigned integer token's value, as serde_json reads it (`visit_u64`); `None` for any
/// other number (leading zeros, signs, fractions, exponents, past 19 digits): serde reads it.
fn plain_unsigned(token: &str) -> Option<u64> {
    if token.len() > 1 && token.starts_with('0') {
        return None;
    }
    plain_digits(token)
}

/// A string token as [`Cursor::string_token`] reads it.
struct StringToken<'a> {
    token: &'a str,
    decoded_len: Option<u32>,
}

impl<'a> StringToken<'a> {
    /// Whether the token holds an escape.
    fn escaped(&self) -> bool {
        Text::json_body(self.token, self.decoded_len).1
    }

    fn text(self) -> Text<'a> {
        Text::Json {
            token: self.token,
            decoded_len: self.decoded_len,
        }
    }
}

/// How many bytes from the start of `bytes` are plain string content: neither a quote, a
/// backslash nor a control character. Eight bytes at a time: most strings are field names
/// and short values, where a call into a search routine cost more than the search.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let has_zero_byte = |word: u64| word.wrapping_sub(ONES) & !word;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let control = word.wrapping_sub(ONES * 0x20) & !word;
        let quote = has_zero_byte(word ^ (ONES * u64::from(b'"')));
        let backslash = has_zero_byte(word ^ (ONES * u64::from(b'\\')));
        // Exact for the lowest flagged byte: a false flag only ever sits above a true one.
        let flagged = (control | quote | backslash) & HIGH;
        if flagged != 0 {
            return at + flagged.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    at + bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(bytes.len() - at)
}

#[cfg(test)]
#[path = "direct_tests.rs"]
mod tests;
