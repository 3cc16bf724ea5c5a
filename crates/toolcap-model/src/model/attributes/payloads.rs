//! Payloads written into a packed list's bytes. A payload left in its file is a few numbers
//! (its file's number, offset, length, size, state) and the name of the field it came from:
//! about fifteen bytes packed, where as a held value it would be a shared allocation of its own
//! (80 bytes with the allocator's) and a 16-byte slot. Payloads held in memory (inline texts,
//! records) stay held values.
//!
//! A span's input or output is usually one of its attributes; the entry says so in its flags
//! ([`PayloadRoles`]), and the span reads it back from here (`Span::input`). When it was taken
//! from a text attribute (a short message or arguments, kept as text), the payload is written
//! as a mark ahead of that entry's value (`encoding::MARKED`): the text reads as it did, and
//! the input keeps its range.

use super::encoding::{Reader, write_varint};
use crate::model::{
    Payload, PayloadBody, PayloadRange, PayloadRoles, PayloadState, RawEncoding, file_numbers,
    interner,
};

const ENCODING_BITS: u8 = 0b11;
const GZIP: u8 = 1 << 2;
const STATE_SHIFT: u8 = 3;
const STATE_BITS: u8 = 0b11 << STATE_SHIFT;
const ROLE_SHIFT: u8 = 5;

const NOT_CAPTURED: u8 = 0;
const EMPTY: u8 = 1;
const PRESENT: u8 = 2;
const TRUNCATED: u8 = 3;

fn encoding_bits(encoding: RawEncoding) -> u8 {
    match encoding {
        RawEncoding::JsonString => 0,
        RawEncoding::RawJson => 1,
        RawEncoding::JsonValue => 2,
        RawEncoding::Utf8 => 3,
    }
}

fn encoding_of(bits: u8) -> RawEncoding {
    match bits & ENCODING_BITS {
        0 => RawEncoding::JsonString,
        1 => RawEncoding::RawJson,
        2 => RawEncoding::JsonValue,
        _ => RawEncoding::Utf8,
    }
}

/// Writes `payload` (after its tag) when it is a range whose file and field can be numbered,
/// and says whether it did; otherwise nothing is written and the caller holds the value.
pub(super) fn write(
    bytes: &mut Vec<u8>,
    numbering: &mut interner::Numbering<'_>,
    payload: &Payload,
    roles: PayloadRoles,
) -> bool {
    let PayloadBody::Range(range) = &payload.body else {
        return false;
    };
    let field = match &payload.field {
        None => 0,
        Some(field) => match numbering.number_of(field) {
            Some(number) => u64::from(number) + 1,
            None => return false,
        },
    };
    let Some(file) = file_numbers::number_of(&range.path) else {
        return false;
    };
    let (state, truncated_total) = match payload.state {
        PayloadState::NotCaptured => (NOT_CAPTURED, None),
        PayloadState::Empty => (EMPTY, None),
        PayloadState::Present => (PRESENT, None),
        PayloadState::Truncated { total_bytes } => (TRUNCATED, Some(total_bytes)),
    };
    // Its length first, so that lookups by key pass over it in one step.
    let length_at = bytes.len();
    bytes.push(0);
    let mut flags = encoding_bits(range.encoding) | (state << STATE_SHIFT);
    if range.gzip {
        flags |= GZIP;
    }
    flags |= roles.bits() << ROLE_SHIFT;
    bytes.push(flags);
    write_varint(bytes, field);
    write_varint(bytes, payload.bytes);
    if let Some(total) = truncated_total {
        write_varint(bytes, total);
    }
    write_varint(bytes, u64::from(file));
    write_varint(bytes, range.offset);
    write_varint(bytes, u64::from(range.len));
    // Six numbers of ten bytes at most and the flags: the length fits a byte.
    bytes[length_at] = (bytes.len() - length_at - 1) as u8;
    true
}

/// The roles of the payload in `bytes` (as [`write`] wrote them after the tag), without reading
/// the rest.
pub(super) fn roles(bytes: &[u8]) -> PayloadRoles {
    PayloadRoles::from_bits(bytes.get(1).map_or(0, |flags| flags >> ROLE_SHIFT))
}

/// Reads a payload [`write`] wrote (after its tag). Bytes that do not read as one give an
/// absent payload, never a panic.
pub(super) fn read(outer: &mut Reader<'_>) -> Payload {
    let length = outer.byte();
    let reader = &mut Reader::new(outer.take(usize::from(length)));
    let flags = reader.byte();
    let field = match reader.varint() {
        0 => None,
        number => match interner::numbered_value((number - 1).min(u64::from(u32::MAX)) as u32) {
            Some(crate::model::AttrValue::Str(text)) => Some(text.clone()),
            _ => None,
        },
    };
    let bytes = reader.varint();
    let state = match (flags & STATE_BITS) >> STATE_SHIFT {
        NOT_CAPTURED => PayloadState::NotCaptured,
        EMPTY => PayloadState::Empty,
        PRESENT => PayloadState::Present,
        _ => PayloadState::Truncated {
            total_bytes: reader.varint(),
        },
    };
    let file = reader.varint();
    let offset = reader.varint();
    let len = reader.varint();
    let path = u32::try_from(file).ok().and_then(file_numbers::path);
    let body = match (path, u32::try_from(len)) {
        (Some(path), Ok(len)) => PayloadBody::Range(PayloadRange {
            path,
            offset,
            len,
            encoding: encoding_of(flags),
            gzip: flags & GZIP != 0,
        }),
        _ => PayloadBody::Absent,
    };
    Payload {
        state,
        bytes,
        field,
        body,
    }
}

/// Passes over a payload (after its tag).
pub(super) fn skip(reader: &mut Reader<'_>) {
    let length = reader.byte();
    reader.take(usize::from(length));
}
