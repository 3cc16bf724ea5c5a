//! Small helpers shared by the JSON-based agent formats (openai-agents, OpenArmature events,
//! arksim, A2A): JSONL records with their byte positions, payloads that stay on disk when big,
//! and RFC 3339 timestamps.

use std::sync::Arc;

use serde_json::Value;

use crate::formats::Input;
use crate::model::{AttrValue, Origin, PROVISIONAL_ATTR, Payload, RecordRef, Span};

/// Payload texts up to this size are kept in memory; bigger ones are re-read from their record.
pub const INLINE_MAX_BYTES: usize = 8 * 1024;

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
        Value::String(s) => AttrValue::Str(s.clone()),
        other => AttrValue::Str(other.to_string()),
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

/// An id that may be written as a string or a number (`turn_id: 0` or `"0"`).
pub fn id_at(value: &Value, key: &str) -> Option<String> {
    match value.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parses an RFC 3339 / ISO-8601 timestamp (`2026-11-30T12:49:33.818158+00:00`, `…Z`) into
/// unix nanoseconds. Dates before 1970 or malformed text give `None`.
pub fn rfc3339_nanos(text: &str) -> Option<u64> {
    let text = text.trim();
    let (date, rest) = text.split_at_checked(10)?;
    let mut date_parts = date.split('-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: u32 = date_parts.next()?.parse().ok()?;
    let day: u32 = date_parts.next()?.parse().ok()?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (hms, mut tail) = rest.split_at_checked(8)?;
    let mut hms_parts = hms.split(':');
    let hour: i64 = hms_parts.next()?.parse().ok()?;
    let minute: i64 = hms_parts.next()?.parse().ok()?;
    let second: i64 = hms_parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut nanos: i64 = 0;
    if let Some(frac) = tail.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        let (frac_digits, after) = frac.split_at(digits);
        let mut scaled = String::from(frac_digits);
        scaled.truncate(9);
        while scaled.len() < 9 {
            scaled.push('0');
        }
        nanos = scaled.parse().ok()?;
        tail = after;
    }
    let offset_seconds: i64 = match tail {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match tail.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let body = &tail[1..];
            let (h, m) = body
                .split_once(':')
                .unwrap_or((body.get(..2)?, body.get(2..)?));
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().unwrap_or(0) * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    let total = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    u64::try_from(total).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_offsets_and_fractions() {
        assert_eq!(rfc3339_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            rfc3339_nanos("1970-01-01T00:00:01.5+00:00"),
            Some(1_500_000_000)
        );
        assert_eq!(rfc3339_nanos("1970-01-01T01:00:00+01:00"), Some(0));
        // 2026-11-30T12:49:33Z, checked with `date -u -d ... +%s`.
        assert_eq!(
            rfc3339_nanos("2026-11-30T12:49:33.818158+00:00"),
            Some(1_796_042_973_818_158_000)
        );
        assert_eq!(rfc3339_nanos("not a date"), None);
        assert_eq!(rfc3339_nanos("2026-13-01T00:00:00Z"), None);
        assert_eq!(rfc3339_nanos("1969-12-31T23:59:59Z"), None);
    }
}
