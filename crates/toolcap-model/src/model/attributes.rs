//! A span's attributes: a plain list while a parser builds the span, packed into bytes once the
//! span is done ([`Attributes::pack`]; the format is in `encoding.rs`).
//!
//! Unpacked, each attribute is 24 bytes (a shared key and a 16-byte value) whatever it holds,
//! which makes such lists a large part of a loaded store. Packed, a key is the number of its
//! text in [`interner`](super::interner) (one or two bytes), a number or flag is
//! written out (one to nine bytes), and a repeated text or a list of such values is written out
//! too. Only what cannot be packed stays a value, in a side list: one-off and long texts, maps,
//! bytes, payloads and other lists.
//!
//! Readers see the same pairs either way ([`Attributes::iter`]): a key's text and an
//! [`AttrView`] that reads as an [`AttrValue`].

use std::fmt;
use std::ops::Deref;

use std::sync::Arc;

use super::{ArcStr, AttrValue, Payload, PayloadRoles};

mod encoding;
mod payloads;
mod slot;
use super::packed::Block;
use encoding::*;
use slot::{Repr, Slot, View};

/// One word: every span and event holds one (see [`slot`]). The open list is boxed; a span
/// holds it only while a parser builds it (or when it is too long to pack, see [`Block`]).
#[derive(Clone)]
pub struct Attributes(Slot);

impl Default for Attributes {
    /// An empty list is packed: it needs no allocation that way.
    fn default() -> Self {
        Attributes(Slot::new(Repr::Packed(Block::empty())))
    }
}

/// What packing keeps per thread between spans.
#[derive(Default)]
struct PackingBuffers {
    /// Packing writes here first, so the packed bytes are allocated once at their exact size.
    bytes: Vec<u8>,
    /// Lists packed earlier, emptied: a parser builds its next spans' lists in them
    /// ([`Attributes::spare`]) instead of allocating and freeing one per span. A batch
    /// line of 500 spans packs 500 lists at its end, and the next line takes them back.
    /// Boxed as a span's open list is, so that taking one back allocates nothing.
    #[allow(clippy::vec_box)]
    spares: Vec<Box<Vec<(ArcStr, AttrValue)>>>,
}

/// Lists with room for more than this are not kept for reuse.
const SPARE_LIST_MAX: usize = 64;
/// Lists kept per thread: a batch line's worth.
const SPARE_LISTS: usize = 512;

thread_local! {
    static PACKING_BUFFERS: std::cell::RefCell<PackingBuffers> = std::cell::RefCell::default();
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
    /// A payload written into the packed bytes (see `payloads.rs`), made into a value when
    /// first read.
    Payload(&'a [u8], std::cell::OnceCell<AttrValue>),
    /// A short text written into the packed bytes, made into a value when first read as one
    /// ([`AttrView::text`] borrows it without that).
    Text(&'a str, std::cell::OnceCell<AttrValue>),
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
            AttrView::Payload(bytes, value) => value.get_or_init(|| {
                AttrValue::Payload(Arc::new(payloads::read(&mut Reader::new(bytes))))
            }),
            AttrView::Text(text, value) => value.get_or_init(|| AttrValue::Str((*text).into())),
        }
    }
}

impl<'a> AttrView<'a> {
    /// The value borrowed for as long as the attributes, when it is held: maps, bytes, long
    /// or repeated texts and payloads always are; numbers, flags, nulls, lists of them and
    /// short texts in a packed list are decoded instead (`None`; read a text with
    /// [`AttrView::text`]).
    pub fn held(&self) -> Option<&'a AttrValue> {
        match self {
            AttrView::Held(value) => Some(value),
            AttrView::Decoded(_) | AttrView::List(..) | AttrView::Payload(..) => None,
            AttrView::Text(..) => None,
        }
    }

    /// Whether the value is a payload, without reading it: a payload written into the packed
    /// bytes is decoded (a shared allocation, its file looked up) only when read.
    pub fn is_payload(&self) -> bool {
        matches!(
            self,
            AttrView::Payload(..) | AttrView::Held(AttrValue::Payload(_))
        )
    }

    /// A plain text value (never a payload), borrowed for as long as the attributes.
    pub fn text(&self) -> Option<&'a str> {
        match self {
            AttrView::Text(text, _) => Some(text),
            _ => match self.held()? {
                AttrValue::Str(text) => Some(text),
                _ => None,
            },
        }
    }

    /// A plain text value as a shared text: the held one, or a new one for a text written
    /// in place.
    pub fn shared_text(&self) -> Option<ArcStr> {
        match self.held() {
            Some(AttrValue::Str(text)) => Some(text.clone()),
            Some(_) => None,
            None => self.text().map(ArcStr::from),
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
        match self.0.view() {
            View::Open(list) => list.len(),
            View::Packed(block) => Reader::new(block.bytes()).varint() as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_packed(&self) -> bool {
        !self.0.is_open()
    }

    pub fn iter(&self) -> Iter<'_> {
        match self.0.view() {
            View::Open(list) => Iter(Walk::Open(list.iter())),
            View::Packed(block) => {
                let (reader, left) = Reader::entries(block.bytes());
                let side = block.held();
                Iter(Walk::Packed { reader, side, left })
            }
        }
    }

    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<AttrView<'_>> {
        match self.0.view() {
            View::Open(list) => list
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| AttrView::Held(v)),
            View::Packed(block) => {
                let (mut reader, count) = Reader::entries(block.bytes());
                for _ in 0..count {
                    if reader.key() == key {
                        return Some(reader.value(block.held()));
                    }
                    reader.skip_value();
                }
                None
            }
        }
    }

    /// For each of `texts`, the shared number of a key whose first entry holds that plain text
    /// (not a payload): what [`Attributes::text_under_key`] reads it back by. `None` for a
    /// text no such entry holds, and for all while unpacked. One pass over the entries, however
    /// many texts.
    pub fn keys_holding<const N: usize>(&self, texts: [Option<&str>; N]) -> [Option<u32>; N] {
        let mut keys = [None; N];
        let View::Packed(block) = self.0.view() else {
            return keys;
        };
        let (mut reader, count) = Reader::entries(block.bytes());
        // A key met again is read back as its first entry: only first entries count.
        let mut met = smallvec::SmallVec::<[u32; 16]>::new();
        for _ in 0..count {
            let Some(key) = reader.key_number() else {
                reader.skip_value();
                continue;
            };
            if met.contains(&key) {
                reader.skip_value();
                continue;
            }
            met.push(key);
            let value = reader.value(block.held());
            let Some(text) = value.text().filter(|_| !value.is_payload()) else {
                continue;
            };
            for (wanted, found) in texts.iter().zip(keys.iter_mut()) {
                if found.is_none() && *wanted == Some(text) {
                    *found = Some(key);
                }
            }
        }
        keys
    }

    /// The plain text of the first entry whose key is numbered `key` in the shared table.
    pub fn text_under_key(&self, key: u32) -> Option<&str> {
        self.value_under_key(key)?.text()
    }

    /// [`Attributes::text_under_key`] for each of `keys`, in one pass over the entries.
    pub fn texts_under_keys<const N: usize>(&self, keys: [Option<u32>; N]) -> [Option<&str>; N] {
        self.values_under_keys(keys)
            .map(|value| value.and_then(|value| value.text()))
    }

    /// [`Attributes::value_under_key`] for each of `keys`, in one pass over the entries: only
    /// the values asked for are read.
    pub fn values_under_keys<const N: usize>(
        &self,
        keys: [Option<u32>; N],
    ) -> [Option<AttrView<'_>>; N] {
        let mut values = [const { None }; N];
        let block = match self.0.view() {
            View::Packed(block) => block,
            View::Open(_) => return keys.map(|key| self.value_under_key(key?)),
        };
        // Most lists hold none of the keys: a search of their bytes says so without a walk.
        let keys = keys.map(|key| key.filter(|&key| may_hold_key(block.bytes(), key)));
        let mut left = keys.iter().filter(|key| key.is_some()).count();
        // Most entries are none of the keys: their number is refused by one bit test.
        let bit = |key: u32| 1u64 << (key % 64);
        let sought = keys.iter().flatten().fold(0, |bits, &key| bits | bit(key));
        let mut done = [false; N];
        let (mut reader, count) = Reader::entries(block.bytes());
        for _ in 0..count {
            if left == 0 {
                break;
            }
            let Some(key) = reader.key_number() else {
                reader.skip_value();
                continue;
            };
            let wanted = |i: usize, done: &[bool; N]| !done[i] && keys[i] == Some(key);
            if sought & bit(key) == 0 || !(0..N).any(|i| wanted(i, &done)) {
                reader.skip_value();
                continue;
            }
            let value = reader.value(block.held());
            let value = (!value.is_payload()).then_some(value);
            for i in 0..N {
                if wanted(i, &done) {
                    values[i] = value.clone();
                    done[i] = true;
                    left -= 1;
                }
            }
        }
        values
    }

    /// The value of the first entry whose key is numbered `key` in the shared table, unless it
    /// is a payload.
    pub fn value_under_key(&self, key: u32) -> Option<AttrView<'_>> {
        let block = match self.0.view() {
            View::Packed(block) => block,
            // Unpacked again after its keys were taken (a parser changing it).
            View::Open(_) => {
                let value = self.get(crate::model::interner::handed_out_text(key)?)?;
                return (!value.is_payload()).then_some(value);
            }
        };
        if !may_hold_key(block.bytes(), key) {
            return None;
        }
        let (mut reader, count) = Reader::entries(block.bytes());
        for _ in 0..count {
            if reader.key_number() == Some(key) {
                let value = reader.value(block.held());
                return (!value.is_payload()).then_some(value);
            }
            reader.skip_value();
        }
        None
    }

    pub fn first(&self) -> Option<(&str, AttrView<'_>)> {
        self.iter().next()
    }

    /// The list while unpacked.
    pub fn as_open(&self) -> Option<&[(ArcStr, AttrValue)]> {
        match self.0.view() {
            View::Open(list) => Some(list.as_slice()),
            View::Packed(_) => None,
        }
    }

    /// The list, for a parser to change; a packed list is unpacked first.
    pub fn open_mut(&mut self) -> &mut Vec<(ArcStr, AttrValue)> {
        if !self.0.is_open() {
            let list = self.to_vec();
            self.0.replace(Repr::Open(Box::new(list)));
        }
        self.0.open_mut().expect("unpacked above")
    }

    pub fn push(&mut self, entry: (ArcStr, AttrValue)) {
        self.open_mut().push(entry);
    }

    pub fn retain(&mut self, keep: impl FnMut(&(ArcStr, AttrValue)) -> bool) {
        self.open_mut().retain(keep);
    }

    pub fn clear(&mut self) {
        *self = Attributes::default();
    }

    /// Owned copies of the pairs, in order.
    pub fn to_vec(&self) -> Vec<(ArcStr, AttrValue)> {
        match self.0.view() {
            View::Open(list) => list.to_vec(),
            View::Packed(_) => self
                .iter()
                .map(|(key, value)| (ArcStr::from(key), (*value).clone()))
                .collect(),
        }
    }

    /// Packs the list (see the module's doc). Reads give the same pairs after as before.
    pub fn pack(&mut self) {
        self.pack_marking(Roles::default());
    }

    /// Packs the list as [`Attributes::pack`] does, marking the entries that hold `input` or
    /// `output` (a span's, shared with the entry); says which of them it wrote into the packed
    /// bytes, where [`Attributes::payload_in_role`] finds them again.
    pub fn pack_with_payloads(
        &mut self,
        input: Option<&Arc<Payload>>,
        output: Option<&Arc<Payload>>,
    ) -> PayloadRoles {
        self.pack_marking(Roles { input, output })
    }

    fn pack_marking(&mut self, roles: Roles<'_>) -> PayloadRoles {
        if !self.0.is_open() {
            return PayloadRoles::NONE;
        }
        PACKING_BUFFERS.with(|buffers| {
            let buffers = &mut *buffers.borrow_mut();
            let View::Open(list) = self.0.view() else {
                return PayloadRoles::NONE;
            };
            buffers.bytes.clear();
            let (packed, placed) = match list.is_empty() {
                true => (Block::empty(), PayloadRoles::NONE),
                false => match pack(list, &mut buffers.bytes, roles) {
                    Some(packed) => packed,
                    // Too long for a block: it stays open.
                    None => return PayloadRoles::NONE,
                },
            };
            let Repr::Open(mut list) = self.0.replace(Repr::Packed(packed)) else {
                unreachable!("open, as matched above");
            };
            if list.capacity() <= SPARE_LIST_MAX && buffers.spares.len() < SPARE_LISTS {
                list.clear();
                buffers.spares.push(list);
            }
            placed
        })
    }

    /// The payload packing marked as holding `role` (see [`Attributes::pack_with_payloads`]): a
    /// payload entry, or the mark on the text entry it was taken from;
    /// `None` when no entry is marked, or the list is open.
    pub fn payload_in_role(&self, role: PayloadRoles) -> Option<Payload> {
        let View::Packed(block) = self.0.view() else {
            return None;
        };
        let (mut reader, count) = Reader::entries(block.bytes());
        for _ in 0..count {
            reader.key();
            let payload = match reader.mark() {
                Some(mark) => {
                    reader.skip_value();
                    Some(mark)
                }
                None => match reader.value(block.held()) {
                    AttrView::Payload(bytes, _) => Some(bytes),
                    _ => None,
                },
            };
            if let Some(bytes) = payload
                && payloads::roles(bytes).contains(role)
            {
                return Some(payloads::read(&mut Reader::new(bytes)));
            }
        }
        None
    }

    /// An empty open list for a parser to fill, reusing the room of one packed earlier on this
    /// thread when there is one.
    pub fn spare() -> Attributes {
        let list = PACKING_BUFFERS.with(|buffers| buffers.borrow_mut().spares.pop());
        Attributes(Slot::new(Repr::Open(list.unwrap_or_default())))
    }

    /// Heap bytes: the list's or the packed bytes' room, and the side list's. Values' own
    /// allocations are not included.
    pub fn own_heap_bytes(&self) -> u64 {
        match self.0.view() {
            View::Open(list) => (list.capacity() * size_of::<(ArcStr, AttrValue)>()) as u64,
            View::Packed(block) => block.heap_bytes(),
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
        match self.0.view() {
            View::Open(list) => list
                .iter()
                .map(|(key, value)| key.len() as u64 + value_bytes(value))
                .sum(),
            View::Packed(block) => {
                block.bytes().len() as u64 + block.held().iter().map(value_bytes).sum::<u64>()
            }
        }
    }

    /// The values held in full (all of them while unpacked), for counting their allocations.
    pub fn held_values(&self) -> Box<dyn Iterator<Item = &AttrValue> + '_> {
        match self.0.view() {
            View::Open(list) => Box::new(list.iter().map(|(_, v)| v)),
            View::Packed(block) => Box::new(block.held().iter()),
        }
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
        match list.capacity() {
            0 => Attributes::default(),
            _ => Attributes(Slot::new(Repr::Open(Box::new(list)))),
        }
    }
}

impl FromIterator<(ArcStr, AttrValue)> for Attributes {
    fn from_iter<I: IntoIterator<Item = (ArcStr, AttrValue)>>(iter: I) -> Self {
        Attributes::from(iter.into_iter().collect::<Vec<_>>())
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
mod payload_tests;
#[cfg(test)]
mod tests;
