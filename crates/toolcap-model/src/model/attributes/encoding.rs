//! The packed form of [`super::Attributes`]: value tags, the writer and the reader.

use std::sync::Arc;

use super::{AttrView, payloads};
use crate::model::packed::Block;
use crate::model::{ArcStr, AttrValue, Payload, PayloadRoles, interner};

pub(super) const NULL: u8 = 0;
pub(super) const FALSE: u8 = 1;
pub(super) const TRUE: u8 = 2;
pub(super) const INT: u8 = 3;
pub(super) const FLOAT: u8 = 4;
pub(super) const SHARED: u8 = 5;
pub(super) const SIDE: u8 = 6;
/// A list of numbers, flags and shared texts (finish reasons): its length, then each item as a
/// value of the tags above.
pub(super) const LIST: u8 = 7;
/// A payload left in its file (see `payloads.rs`): its length, flags, then its numbers.
pub(super) const PAYLOAD: u8 = 8;
/// A span's input or output taken from a text attribute: the payload as [`PAYLOAD`] writes
/// it, then the attribute's own value. The text reads as it did; the payload keeps its range.
pub(super) const MARKED: u8 = 9;
/// A short text no other span repeats (a call id, a conversation id): its length and bytes
/// follow. In place, it costs its bytes; held beside the list, it would cost a value's 16 bytes
/// and a block of its own.
pub(super) const TEXT: u8 = 10;
/// Longest text written in place; a longer one is held, so that the payload or error message
/// that is the same text can share its allocation.
pub(super) const TEXT_IN_PLACE_MAX: usize = 64;
/// A key written out in place (the shared table was full): its length and bytes follow.
pub(super) const KEY_IN_PLACE: u64 = 0;

/// A span's input and output, to be marked where the list holds them (see `payloads.rs`).
#[derive(Default, Clone, Copy)]
pub(super) struct Roles<'a> {
    pub(super) input: Option<&'a Arc<Payload>>,
    pub(super) output: Option<&'a Arc<Payload>>,
}

impl Roles<'_> {
    fn of(&self, payload: &Arc<Payload>) -> PayloadRoles {
        let is = |held: Option<&Arc<Payload>>| held.is_some_and(|held| Arc::ptr_eq(held, payload));
        let mut roles = PayloadRoles::NONE;
        if is(self.input) {
            roles = roles.with(PayloadRoles::INPUT);
        }
        if is(self.output) {
            roles = roles.with(PayloadRoles::OUTPUT);
        }
        roles
    }

    /// The input or output (with its roles) that came from the text attribute `key`, unless
    /// it is `placed` already.
    fn taken_from_text(
        &self,
        key: &str,
        placed: PayloadRoles,
    ) -> Option<(&Arc<Payload>, PayloadRoles)> {
        [self.input, self.output]
            .into_iter()
            .flatten()
            .find(|payload| payload.field.as_deref() == Some(key))
            .map(|payload| (payload, self.of(payload)))
            .filter(|(_, roles)| !placed.contains(*roles))
    }
}

/// Writes `list` packed into `bytes` (a scratch buffer) and returns its block, with the roles
/// of the payloads it wrote in place; `None` when the list is too long for one (it is left as
/// it was).
pub(super) fn pack(
    list: &[(ArcStr, AttrValue)],
    bytes: &mut Vec<u8>,
    roles: Roles<'_>,
) -> Option<(Block, PayloadRoles)> {
    let mut placed = PayloadRoles::NONE;
    let block = interner::numbering(|numbering| {
        write_varint(bytes, list.len() as u64);
        let mut held = smallvec::SmallVec::<[AttrValue; 4]>::new();
        for (key, value) in list {
            match numbering.number_of(key) {
                Some(number) => write_varint(bytes, u64::from(number) + 1),
                None => {
                    write_varint(bytes, KEY_IN_PLACE);
                    write_varint(bytes, key.len() as u64);
                    bytes.extend_from_slice(key.as_bytes());
                }
            }
            if let AttrValue::Payload(payload) = value {
                let its_roles = roles.of(payload);
                bytes.push(PAYLOAD);
                if payloads::write(bytes, numbering, payload, its_roles) {
                    placed = placed.with(its_roles);
                    continue;
                }
                bytes.pop();
            }
            if let AttrValue::Str(_) = value
                && let Some((payload, its_roles)) = roles.taken_from_text(key, placed)
            {
                bytes.push(MARKED);
                match payloads::write(bytes, numbering, payload, its_roles) {
                    true => placed = placed.with(its_roles),
                    false => _ = bytes.pop(),
                }
            }
            if !write_in_place(bytes, numbering, key, value) {
                bytes.push(SIDE);
                write_varint(bytes, held.len() as u64);
                held.push(value.clone());
            }
        }
        Block::new(held, bytes)
    })?;
    Some((block, placed))
}

/// Writes `value` into `bytes` when it can be written there (a number, flag, null, shared text,
/// or a list of those) and says whether it did; otherwise the caller holds it.
fn write_in_place(
    bytes: &mut Vec<u8>,
    numbering: &mut interner::Numbering<'_>,
    key: &str,
    value: &AttrValue,
) -> bool {
    match value {
        AttrValue::Null => bytes.push(NULL),
        AttrValue::Bool(flag) => bytes.push(if *flag { TRUE } else { FALSE }),
        AttrValue::Int(number) => {
            bytes.push(INT);
            write_varint(bytes, zigzag(*number));
        }
        AttrValue::Float(number) => {
            bytes.push(FLOAT);
            bytes.extend_from_slice(&number.to_bits().to_le_bytes());
        }
        AttrValue::Str(text) => {
            let number = shareable(key, text)
                .then(|| numbering.number_of(text))
                .flatten();
            match number {
                Some(number) => {
                    bytes.push(SHARED);
                    write_varint(bytes, u64::from(number));
                }
                None if text.len() <= TEXT_IN_PLACE_MAX => {
                    bytes.push(TEXT);
                    write_varint(bytes, text.len() as u64);
                    bytes.extend_from_slice(text.as_bytes());
                }
                None => return false,
            }
        }
        AttrValue::List(items) => {
            let start = bytes.len();
            bytes.push(LIST);
            write_varint(bytes, items.len() as u64);
            for item in items {
                let nested = matches!(item, AttrValue::List(_));
                if nested || !write_in_place(bytes, numbering, key, item) {
                    bytes.truncate(start);
                    return false;
                }
            }
        }
        _ => return false,
    }
    true
}

/// Whether a text value is worth sharing: short, and not a one-off id. A key ending in `id`
/// names one (a response or call id is unique, and sharing each would fill the table with
/// texts seen once), unless other spans hold the same text right now: a run's correlation id
/// or a conversation id repeats on every span of its run.
pub(super) fn shareable(key: &str, text: &ArcStr) -> bool {
    if text.len() > interner::MAX_TEXT_BYTES {
        return false;
    }
    let key = key.as_bytes();
    let names_an_id = key.len() >= 2 && key[key.len() - 2..].eq_ignore_ascii_case(b"id");
    // Seen on one span so far, the text has four holders at most: this value, the interner's
    // table of values, the span's facts (a tool's call id, a run's correlation id), and
    // the model call that asked for the tool call (its requested call's id).
    !names_an_id || ArcStr::strong_count(text).is_none_or(|holders| holders > 4)
}

/// Whether packed `bytes` may hold an entry keyed by shared number `key`: such an entry holds
/// the key's varint, so bytes without those bytes hold none (bytes with them may, or a value
/// holds them). A search of a list's hundred-odd bytes costs less than walking its entries.
pub(super) fn may_hold_key(bytes: &[u8], key: u32) -> bool {
    let number = u64::from(key) + 1;
    if number < 0x80 {
        return memchr::memchr(number as u8, bytes).is_some();
    }
    let (first, second) = (number as u8 | 0x80, (number >> 7) as u8);
    // Three bytes and more (numbers past 16,382) are not searched for: the list may hold them.
    number >= 1 << 14
        || memchr::memchr_iter(first, bytes).any(|at| bytes.get(at + 1) == Some(&second))
}

pub(super) fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

pub(super) fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

pub(super) fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads packed bytes this module wrote; a short read gives zeros rather than a panic.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the first entry of a packed list, and the number of entries.
    pub(super) fn entries(bytes: &'a [u8]) -> (Self, usize) {
        let mut reader = Reader::new(bytes);
        // Every entry takes two bytes at least: a count beyond that is not believed.
        let count = (reader.varint() as usize).min(bytes.len() / 2);
        (reader, count)
    }

    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    pub(super) fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    pub(super) fn varint(&mut self) -> u64 {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte();
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        n
    }

    /// The payload a value is marked with ([`MARKED`]), passing over the mark; `None`, reading
    /// nothing, when the value is not marked.
    pub(super) fn mark(&mut self) -> Option<&'a [u8]> {
        if self.bytes.first() != Some(&MARKED) {
            return None;
        }
        self.byte();
        Some(self.passed_over(payloads::skip))
    }

    /// The bytes `pass` passes over.
    fn passed_over(&mut self, pass: impl FnOnce(&mut Self)) -> &'a [u8] {
        let start = self.bytes;
        pass(self);
        &start[..start.len() - self.bytes.len()]
    }

    /// A value's tag, past the marks ahead of it (a mark says what the value is a payload of).
    fn tag(&mut self) -> u8 {
        let mut tag = self.byte();
        while tag == MARKED {
            payloads::skip(self);
            tag = self.byte();
        }
        tag
    }

    pub(super) fn key(&mut self) -> &'a str {
        match self.varint() {
            KEY_IN_PLACE => self.text_in_place(),
            number => interner::numbered_text((number - 1) as u32),
        }
    }

    /// A key's number in the shared table, passing over it; `None` for a key written out in
    /// place.
    pub(super) fn key_number(&mut self) -> Option<u32> {
        match self.varint() {
            KEY_IN_PLACE => {
                self.skip_text();
                None
            }
            number => u32::try_from(number - 1).ok(),
        }
    }

    pub(super) fn value(&mut self, side: &'a [AttrValue]) -> AttrView<'a> {
        const NULL_VALUE: &AttrValue = &AttrValue::Null;
        match self.tag() {
            NULL => AttrView::Decoded(AttrValue::Null),
            FALSE => AttrView::Decoded(AttrValue::Bool(false)),
            TRUE => AttrView::Decoded(AttrValue::Bool(true)),
            INT => AttrView::Decoded(AttrValue::Int(unzigzag(self.varint()))),
            FLOAT => {
                let mut raw = [0u8; 8];
                let taken = self.take(8);
                raw[..taken.len()].copy_from_slice(taken);
                AttrView::Decoded(AttrValue::Float(f64::from_bits(u64::from_le_bytes(raw))))
            }
            SHARED => {
                AttrView::Held(interner::numbered_value(self.varint() as u32).unwrap_or(NULL_VALUE))
            }
            SIDE => AttrView::Held(side.get(self.varint() as usize).unwrap_or(NULL_VALUE)),
            TEXT => AttrView::Text(self.text_in_place(), std::cell::OnceCell::new()),
            LIST => AttrView::List(
                self.passed_over(Reader::skip_list),
                std::cell::OnceCell::new(),
            ),
            PAYLOAD => {
                AttrView::Payload(self.passed_over(payloads::skip), std::cell::OnceCell::new())
            }
            _ => AttrView::Held(NULL_VALUE),
        }
    }

    /// Passes over a value without reading it (a lookup by key reads only the one it wants).
    pub(super) fn skip_value(&mut self) {
        match self.tag() {
            INT | SHARED | SIDE => while self.byte() & 0x80 != 0 {},
            TEXT => self.skip_text(),
            LIST => self.skip_list(),
            FLOAT => {
                self.take(8);
            }
            PAYLOAD => payloads::skip(self),
            _ => {}
        }
    }

    /// Passes over a list's count and items (after its tag).
    fn skip_list(&mut self) {
        let count = self.varint();
        for _ in 0..count.min(self.bytes.len() as u64) {
            self.skip_value();
        }
    }

    /// A text written out in place (a key, or a [`TEXT`] value): its length, then its bytes;
    /// `""` for bytes that are not UTF-8.
    fn text_in_place(&mut self) -> &'a str {
        let len = self.varint() as usize;
        std::str::from_utf8(self.take(len)).unwrap_or("")
    }

    /// Passes over a text written out in place, unread: checking it is UTF-8 is for readers.
    fn skip_text(&mut self) {
        let len = self.varint() as usize;
        self.take(len);
    }

    pub(super) fn take(&mut self, len: usize) -> &'a [u8] {
        let len = len.min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }
}
