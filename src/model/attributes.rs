//! A span's attributes: a plain list while a parser builds the span, packed into bytes once the
//! span is done ([`Attributes::pack`]).
//!
//! Unpacked, each attribute is 24 bytes (a shared key and a 16-byte value) whatever it holds,
//! and that list was a third of a loaded store. Packed, a key is the number of its text in
//! [`shared_texts`] (one or two bytes), a number or flag is written out (one to nine bytes),
//! and a repeated text is a number too. Only what cannot be packed stays a value, in a side
//! list: unique texts such as ids, lists, maps, bytes and payloads.
//!
//! Readers see the same pairs either way ([`Attributes::iter`]): a key's text and an
//! [`AttrView`] that reads as an [`AttrValue`].

use std::fmt;
use std::ops::Deref;

use thin_vec::ThinVec;

use super::{ArcStr, AttrValue, shared_texts};

#[derive(Clone, Default)]
pub struct Attributes(Repr);

#[derive(Clone)]
enum Repr {
    Open(Vec<(ArcStr, AttrValue)>),
    Packed {
        bytes: ThinVec<u8>,
        side: ThinVec<AttrValue>,
    },
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Open(Vec::new())
    }
}

// Value tags in the packed bytes.
const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const SHARED: u8 = 5;
const SIDE: u8 = 6;
/// A list of numbers, flags and shared texts (finish reasons): its length, then each item as a
/// value of the tags above.
const LIST: u8 = 7;
/// A key written out in place (the shared table was full): its length and bytes follow.
const KEY_IN_PLACE: u64 = 0;

/// What packing keeps per thread between spans.
#[derive(Default)]
struct Workshop {
    /// Packing writes here first, so the packed bytes are allocated once at their exact size.
    bytes: Vec<u8>,
    /// Lists packed earlier, emptied: a parser builds its next spans' lists in them
    /// ([`Attributes::spare_list`]) instead of allocating and freeing one per span. A batch
    /// line of 500 spans packs 500 lists at its end, and the next line takes them back.
    spares: Vec<Vec<(ArcStr, AttrValue)>>,
}

/// Lists with room for more than this are not kept for reuse.
const SPARE_LIST_MAX: usize = 64;
/// Lists kept per thread: a batch line's worth.
const SPARE_LISTS: usize = 512;

thread_local! {
    static WORKSHOP: std::cell::RefCell<Workshop> = std::cell::RefCell::default();
}

/// An attribute's value as a reader sees it: a number or flag decoded from the packed bytes,
/// or a reference to a held value. Reads as an [`AttrValue`] either way.
#[derive(Debug, Clone)]
pub enum AttrView<'a> {
    Decoded(AttrValue),
    Held(&'a AttrValue),
    /// A packed list, made into a value when first read: most walks over a span's attributes
    /// look at keys only.
    List(&'a [u8], std::cell::OnceCell<AttrValue>),
}

impl Deref for AttrView<'_> {
    type Target = AttrValue;
    fn deref(&self) -> &AttrValue {
        match self {
            AttrView::Decoded(value) => value,
            AttrView::Held(value) => value,
            AttrView::List(bytes, value) => value.get_or_init(|| {
                let mut reader = Reader::new(bytes);
                let count = (reader.varint() as usize).min(bytes.len());
                AttrValue::List((0..count).map(|_| (*reader.value(&[])).clone()).collect())
            }),
        }
    }
}

impl<'a> AttrView<'a> {
    /// The value borrowed for as long as the attributes, when it is held: texts, maps, bytes
    /// and payloads always are; numbers, flags, nulls and lists of them in a packed list are
    /// decoded instead (`None`).
    pub fn held(&self) -> Option<&'a AttrValue> {
        match self {
            AttrView::Held(value) => Some(value),
            AttrView::Decoded(_) | AttrView::List(..) => None,
        }
    }

    /// A plain text value (never a payload), borrowed for as long as the attributes.
    pub fn text(&self) -> Option<&'a str> {
        match self.held()? {
            AttrValue::Str(text) => Some(text),
            _ => None,
        }
    }
}

impl PartialEq for AttrView<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Attributes {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Open(list) => list.len(),
            Repr::Packed { bytes, .. } => Reader::new(bytes).varint() as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_packed(&self) -> bool {
        matches!(self.0, Repr::Packed { .. })
    }

    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Open(list) => Iter(Walk::Open(list.iter())),
            Repr::Packed { bytes, side } => {
                let mut reader = Reader::new(bytes);
                // Every entry takes two bytes at least: a count beyond that is not believed.
                let left = (reader.varint() as usize).min(bytes.len() / 2);
                Iter(Walk::Packed { reader, side, left })
            }
        }
    }

    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<AttrView<'_>> {
        match &self.0 {
            Repr::Open(list) => list
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| AttrView::Held(v)),
            Repr::Packed { bytes, side } => {
                let mut reader = Reader::new(bytes);
                for _ in 0..reader.varint() {
                    if reader.bytes.is_empty() {
                        break;
                    }
                    if reader.key() == key {
                        return Some(reader.value(side));
                    }
                    reader.skip_value();
                }
                None
            }
        }
    }

    pub fn first(&self) -> Option<(&str, AttrView<'_>)> {
        self.iter().next()
    }

    /// The list while unpacked.
    pub fn as_open(&self) -> Option<&[(ArcStr, AttrValue)]> {
        match &self.0 {
            Repr::Open(list) => Some(list),
            Repr::Packed { .. } => None,
        }
    }

    /// The list, for a parser to change; a packed list is unpacked first.
    pub fn open_mut(&mut self) -> &mut Vec<(ArcStr, AttrValue)> {
        if let Repr::Packed { .. } = self.0 {
            let list = self.to_vec();
            self.0 = Repr::Open(list);
        }
        match &mut self.0 {
            Repr::Open(list) => list,
            Repr::Packed { .. } => unreachable!("unpacked above"),
        }
    }

    pub fn push(&mut self, entry: (ArcStr, AttrValue)) {
        self.open_mut().push(entry);
    }

    pub fn retain(&mut self, keep: impl FnMut(&(ArcStr, AttrValue)) -> bool) {
        self.open_mut().retain(keep);
    }

    pub fn clear(&mut self) {
        self.0 = Repr::default();
    }

    /// Owned copies of the pairs, in order.
    pub fn to_vec(&self) -> Vec<(ArcStr, AttrValue)> {
        match &self.0 {
            Repr::Open(list) => list.clone(),
            Repr::Packed { .. } => self
                .iter()
                .map(|(key, value)| (ArcStr::from(key), (*value).clone()))
                .collect(),
        }
    }

    /// Packs the list (see the module's doc). Reads give the same pairs after as before.
    pub fn pack(&mut self) {
        let Repr::Open(list) = &mut self.0 else {
            return;
        };
        let list = std::mem::take(list);
        if list.is_empty() {
            self.0 = Repr::Packed {
                bytes: ThinVec::new(),
                side: ThinVec::new(),
            };
            return;
        }
        WORKSHOP.with(|workshop| {
            let workshop = &mut *workshop.borrow_mut();
            workshop.bytes.clear();
            let mut list = list;
            self.0 = pack(&mut list, &mut workshop.bytes);
            if list.capacity() <= SPARE_LIST_MAX && workshop.spares.len() < SPARE_LISTS {
                workshop.spares.push(list);
            }
        });
    }

    /// An empty list for a parser to fill, reusing the room of one packed earlier on this
    /// thread when there is one.
    pub fn spare_list() -> Vec<(ArcStr, AttrValue)> {
        WORKSHOP.with(|workshop| workshop.borrow_mut().spares.pop().unwrap_or_default())
    }

    /// Heap bytes: the list's or the packed bytes' room, and the side list's. Values' own
    /// allocations are not included.
    pub fn own_heap_bytes(&self) -> u64 {
        let thin = |capacity: usize, each: usize| match capacity {
            0 => 0,
            _ => (16 + capacity * each) as u64,
        };
        match &self.0 {
            Repr::Open(list) => (list.capacity() * size_of::<(ArcStr, AttrValue)>()) as u64,
            Repr::Packed { bytes, side } => {
                thin(bytes.capacity(), 1) + thin(side.capacity(), size_of::<AttrValue>())
            }
        }
    }

    /// About what the list costs, for the store's memory budget: packed bytes, and the texts
    /// of the values held in full; unpacked, keys' and texts' lengths, 16 bytes for any other
    /// value. Payloads count their inline text only (others are in their files).
    pub fn approx_bytes(&self) -> u64 {
        let value_bytes = |value: &AttrValue| match value {
            AttrValue::Str(text) => text.len() as u64,
            AttrValue::Payload(payload) => match &payload.body {
                super::PayloadBody::Inline(text) => text.len() as u64,
                _ => 0,
            },
            _ => 16,
        };
        match &self.0 {
            Repr::Open(list) => list
                .iter()
                .map(|(key, value)| key.len() as u64 + value_bytes(value))
                .sum(),
            Repr::Packed { bytes, side } => {
                bytes.len() as u64 + side.iter().map(value_bytes).sum::<u64>()
            }
        }
    }

    /// The values held in full (all of them while unpacked), for counting their allocations.
    pub fn held_values(&self) -> Box<dyn Iterator<Item = &AttrValue> + '_> {
        match &self.0 {
            Repr::Open(list) => Box::new(list.iter().map(|(_, v)| v)),
            Repr::Packed { side, .. } => Box::new(side.iter()),
        }
    }

    pub fn shrink_to_fit(&mut self) {
        if let Repr::Open(list) = &mut self.0 {
            list.shrink_to_fit();
        }
    }
}

/// Writes `list` packed into `bytes` (a scratch buffer) and returns it with its side list.
fn pack(list: &mut Vec<(ArcStr, AttrValue)>, bytes: &mut Vec<u8>) -> Repr {
    shared_texts::numbering(|numbering| {
        write_varint(bytes, list.len() as u64);
        let mut held = smallvec::SmallVec::<[AttrValue; 4]>::new();
        for (key, value) in list.drain(..) {
            match numbering.number_of(&key) {
                Some(number) => write_varint(bytes, u64::from(number) + 1),
                None => {
                    write_varint(bytes, KEY_IN_PLACE);
                    write_varint(bytes, key.len() as u64);
                    bytes.extend_from_slice(key.as_bytes());
                }
            }
            if !write_in_place(bytes, numbering, &key, &value) {
                bytes.push(SIDE);
                write_varint(bytes, held.len() as u64);
                held.push(value);
            }
        }
        let mut packed = ThinVec::with_capacity(bytes.len());
        packed.extend_from_slice(bytes);
        let mut side = ThinVec::with_capacity(held.len());
        side.extend(held);
        Repr::Packed {
            bytes: packed,
            side,
        }
    })
}

/// Writes `value` into `bytes` when it can be written there (a number, flag, null, shared text,
/// or a list of those) and says whether it did; otherwise the caller holds it.
fn write_in_place(
    bytes: &mut Vec<u8>,
    numbering: &mut shared_texts::Numbering<'_>,
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
            let Some(number) = number else {
                return false;
            };
            bytes.push(SHARED);
            write_varint(bytes, u64::from(number));
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
fn shareable(key: &str, text: &ArcStr) -> bool {
    if text.len() > shared_texts::MAX_TEXT_BYTES {
        return false;
    }
    let key = key.as_bytes();
    let names_an_id = key.len() >= 2 && key[key.len() - 2..].eq_ignore_ascii_case(b"id");
    // Seen once so far, the text has three holders at most: this value, the parser's table of
    // shared values, and the span's facts (a tool's call id, a run's correlation id).
    !names_an_id || ArcStr::strong_count(text).is_none_or(|holders| holders > 3)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads packed bytes this module wrote; a short read gives zeros rather than a panic.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    fn varint(&mut self) -> u64 {
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

    fn key(&mut self) -> &'a str {
        match self.varint() {
            KEY_IN_PLACE => {
                let len = self.varint() as usize;
                std::str::from_utf8(self.take(len)).unwrap_or("")
            }
            number => shared_texts::text((number - 1) as u32),
        }
    }

    fn value(&mut self, side: &'a [AttrValue]) -> AttrView<'a> {
        const NULL_VALUE: &AttrValue = &AttrValue::Null;
        match self.byte() {
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
                AttrView::Held(shared_texts::value(self.varint() as u32).unwrap_or(NULL_VALUE))
            }
            SIDE => AttrView::Held(side.get(self.varint() as usize).unwrap_or(NULL_VALUE)),
            LIST => {
                let list = self.bytes;
                let count = self.varint();
                for _ in 0..count.min(list.len() as u64) {
                    self.skip_value();
                }
                let taken = list.len() - self.bytes.len();
                AttrView::List(&list[..taken], std::cell::OnceCell::new())
            }
            _ => AttrView::Held(NULL_VALUE),
        }
    }

    /// Passes over a value without reading it (a lookup by key reads only the one it wants).
    fn skip_value(&mut self) {
        match self.byte() {
            INT | SHARED | SIDE => while self.byte() & 0x80 != 0 {},
            LIST => {
                let count = self.varint();
                for _ in 0..count.min(self.bytes.len() as u64) {
                    self.skip_value();
                }
            }
            FLOAT => {
                self.take(8);
            }
            _ => {}
        }
    }

    fn take(&mut self, len: usize) -> &'a [u8] {
        let len = len.min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }
}

/// The pairs of [`Attributes`], in order.
pub struct Iter<'a>(Walk<'a>);

enum Walk<'a> {
    Open(std::slice::Iter<'a, (ArcStr, AttrValue)>),
    Packed {
        reader: Reader<'a>,
        side: &'a [AttrValue],
        left: usize,
    },
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, AttrView<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Walk::Open(list) => list.next().map(|(k, v)| (k.as_str(), AttrView::Held(v))),
            Walk::Packed { reader, side, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let key = reader.key();
                Some((key, reader.value(side)))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Walk::Open(list) => list.size_hint(),
            Walk::Packed { left, .. } => (*left, Some(*left)),
        }
    }
}

impl<'a> IntoIterator for &'a Attributes {
    type Item = (&'a str, AttrView<'a>);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl From<Vec<(ArcStr, AttrValue)>> for Attributes {
    fn from(list: Vec<(ArcStr, AttrValue)>) -> Self {
        Attributes(Repr::Open(list))
    }
}

impl FromIterator<(ArcStr, AttrValue)> for Attributes {
    fn from_iter<I: IntoIterator<Item = (ArcStr, AttrValue)>>(iter: I) -> Self {
        Attributes(Repr::Open(iter.into_iter().collect()))
    }
}

impl Extend<(ArcStr, AttrValue)> for Attributes {
    fn extend<I: IntoIterator<Item = (ArcStr, AttrValue)>>(&mut self, iter: I) {
        self.open_mut().extend(iter);
    }
}

/// Equal when they read as the same pairs in the same order, packed or not.
impl PartialEq for Attributes {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|((ka, va), (kb, vb))| ka == kb && *va == *vb)
    }
}

impl fmt::Debug for Attributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(k, v)| (k, (*v).clone())))
            .finish()
    }
}

#[cfg(test)]
mod tests;
