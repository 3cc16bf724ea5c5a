//! [`Id`]: a trace, span or run id held compactly, in 16 bytes. OTLP ids are 16 or 8 bytes
//! written as lower-case hex. A span id is held as its 8 bytes. A trace id is held as a shared
//! pointer to its 16 bytes: every span of a trace names it, and one allocation serves them all
//! (see [`shared_trace`]). Other formats' native ids (`trace_abc…`, arksim ids) and hex that
//! would not read back the same (upper case, odd lengths) stay text, shared the same way.

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use arcstr::ArcStr;

/// What an id held another way than [`Id`] shares with it: made from text as an `Id` is (then
/// converted with its `From<Id>`), the empty text by default, and printed as its `text()`.
macro_rules! compact_id_conversions {
    ($name:ident) => {
        impl From<&str> for $name {
            fn from(text: &str) -> $name {
                Id::new(text).into()
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> $name {
                Id::from(text).into()
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Id::default().into()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(&self.text())
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&*self.text(), f)
            }
        }
    };
}

mod compact;
mod trace_id;
pub use compact::CompactId;
pub use trace_id::TraceId;

/// An id as text reads it: equality, hashing and order are those of its text, and `Display`
/// writes the text exactly as it arrived.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Id(Repr);

/// One representation per text (only lower-case hex of 32 or 16 digits is held as bytes, and
/// always so), which makes the derived equality and hash agree with the text's.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Trace(Arc<[u8; 16]>),
    Span([u8; 8]),
    Text(ArcStr),
}

impl Default for Id {
    fn default() -> Self {
        Id(Repr::Text(ArcStr::default()))
    }
}

/// Recently met trace ids, by their first byte: the spans of a trace arrive together (one
/// request, one batch line), so a trace id is almost always one of those just seen.
const RECENT_TRACES: usize = 64;

thread_local! {
    static RECENT: RefCell<[Option<Arc<[u8; 16]>>; RECENT_TRACES]> =
        const { RefCell::new([const { None }; RECENT_TRACES]) };
}

/// The shared allocation of trace id `bytes`: the one a recent span of this thread holds, else
/// a new one. Equality never depends on it; only memory does.
fn shared_trace(bytes: [u8; 16]) -> Arc<[u8; 16]> {
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        let slot = &mut recent[usize::from(bytes[15]) % RECENT_TRACES];
        match slot {
            Some(held) if **held == bytes => held.clone(),
            _ => slot.insert(Arc::new(bytes)).clone(),
        }
    })
}

/// The bytes of `text` when it is lower-case hex of exactly `N` bytes.
fn lower_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

impl Id {
    /// The id whose text is `text`.
    pub fn new(text: &str) -> Id {
        Id::compact(text).unwrap_or_else(|| Id(Repr::Text(text.into())))
    }

    fn compact(text: &str) -> Option<Id> {
        if let Some(bytes) = lower_hex::<16>(text) {
            return Some(Id(Repr::Trace(shared_trace(bytes))));
        }
        lower_hex::<8>(text).map(|bytes| Id(Repr::Span(bytes)))
    }

    /// The id whose text is the lower-case hex of `bytes` (what OTLP ids read as).
    pub fn from_bytes(bytes: &[u8]) -> Id {
        if let Ok(trace) = <[u8; 16]>::try_from(bytes) {
            Id(Repr::Trace(shared_trace(trace)))
        } else if let Ok(span) = <[u8; 8]>::try_from(bytes) {
            Id(Repr::Span(span))
        } else {
            Id(Repr::Text(hex::encode(bytes).into()))
        }
    }

    /// The id's text, on the stack when it is held as bytes.
    pub fn text(&self) -> IdText<'_> {
        match &self.0 {
            Repr::Trace(bytes) => IdText::hex(&bytes[..]),
            Repr::Span(bytes) => IdText::hex(bytes),
            Repr::Text(text) => IdText::Borrowed(text),
        }
    }

    /// The text, when the id is held as text: an id held as bytes is plain hex, which no
    /// search for a separator (`/turn-`) needs to look into.
    pub fn as_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Text(text) => Some(text),
            Repr::Trace(_) | Repr::Span(_) => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(&self.0, Repr::Text(text) if text.is_empty())
    }

    /// The first 16 bytes of the text, zero-padded, as one number: ids order as their keys
    /// do, and as themselves where keys tie (see [`sort_ids_by`]). A sort of many ids compares
    /// keys held beside them instead of reaching each id's allocation at every comparison.
    pub fn order_key(&self) -> u128 {
        let mut first = [0u8; 16];
        let text = self.text();
        let len = text.len().min(16);
        first[..len].copy_from_slice(&text.as_bytes()[..len]);
        u128::from_be_bytes(first)
    }

    /// The heap allocation behind this id, as its address and size: shared by every clone
    /// (all the spans of a trace), so a count of memory counts each address once. None for a
    /// span id, held inline.
    pub fn allocation(&self) -> Option<(usize, usize)> {
        match &self.0 {
            Repr::Text(text) if !text.is_empty() => Some((text.as_ptr() as usize, text.len() + 16)),
            Repr::Trace(bytes) => Some((Arc::as_ptr(bytes) as usize, 16 + 16)),
            Repr::Text(_) | Repr::Span(_) => None,
        }
    }
}

/// `items` in the order of their ids (by [`Id::order_key`], then by the ids where keys tie);
/// items with equal ids end in no particular order among themselves.
pub fn sort_by_id<T>(items: Vec<T>, id: impl Fn(&T) -> &Id) -> Vec<T> {
    let mut keyed: Vec<(u128, T)> = items
        .into_iter()
        .map(|item| (id(&item).order_key(), item))
        .collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| id(&a.1).cmp(id(&b.1))));
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// An id's text: formatted into a buffer when the id is held as bytes, borrowed otherwise.
pub enum IdText<'a> {
    Hex { digits: [u8; 32], len: u8 },
    Borrowed(&'a str),
}

impl IdText<'_> {
    fn hex(bytes: &[u8]) -> IdText<'static> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut digits = [0u8; 32];
        for (pair, byte) in digits.chunks_exact_mut(2).zip(bytes) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0xf)];
        }
        IdText::Hex {
            digits,
            len: (bytes.len() * 2) as u8,
        }
    }
}

impl Deref for IdText<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            IdText::Hex { digits, len } => {
                std::str::from_utf8(&digits[..usize::from(*len)]).expect("hex digits are ASCII")
            }
            IdText::Borrowed(text) => text,
        }
    }
}

impl fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.text())
    }
}

/// As a `String` would print, so debug output shows the id's text whatever form holds it.
impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

impl Ord for Id {
    /// Text order. Lower-case hex digits sort as the bytes they spell, so two ids held as bytes
    /// of the same length compare without formatting.
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (Repr::Trace(a), Repr::Trace(b)) => a.cmp(b),
            (Repr::Span(a), Repr::Span(b)) => a.cmp(b),
            (Repr::Text(a), Repr::Text(b)) => a.cmp(b),
            _ => (*self.text()).cmp(&*other.text()),
        }
    }
}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<&str> for Id {
    fn from(text: &str) -> Id {
        Id::new(text)
    }
}

impl From<&String> for Id {
    fn from(text: &String) -> Id {
        Id::new(text)
    }
}

impl From<String> for Id {
    /// Keeps the string's allocation when the id stays text.
    fn from(text: String) -> Id {
        Id::compact(&text).unwrap_or_else(|| Id(Repr::Text(ArcStr::from(text))))
    }
}

impl From<&Id> for String {
    fn from(id: &Id) -> String {
        id.text().to_owned()
    }
}

impl PartialEq<str> for Id {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Repr::Text(text) => **text == *other,
            Repr::Trace(bytes) => lower_hex::<16>(other).is_some_and(|o| o == **bytes),
            Repr::Span(bytes) => lower_hex::<8>(other).is_some_and(|o| o == *bytes),
        }
    }
}

impl PartialEq<&str> for Id {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl PartialEq<String> for Id {
    fn eq(&self, other: &String) -> bool {
        *self == **other
    }
}

impl PartialEq<Id> for str {
    fn eq(&self, other: &Id) -> bool {
        *other == *self
    }
}

impl PartialEq<Id> for &str {
    fn eq(&self, other: &Id) -> bool {
        *other == **self
    }
}

impl PartialEq<Id> for String {
    fn eq(&self, other: &Id) -> bool {
        *other == **self
    }
}

impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

impl serde::Serialize for CompactId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

/// Anything a run or span can be looked up by: an [`Id`], or text, which becomes one.
pub trait AsId {
    fn as_id(&self) -> Cow<'_, Id>;
}

impl AsId for Id {
    fn as_id(&self) -> Cow<'_, Id> {
        Cow::Borrowed(self)
    }
}

impl AsId for str {
    fn as_id(&self) -> Cow<'_, Id> {
        Cow::Owned(Id::new(self))
    }
}

impl AsId for String {
    fn as_id(&self) -> Cow<'_, Id> {
        Cow::Owned(Id::new(self))
    }
}

impl AsId for CompactId {
    fn as_id(&self) -> Cow<'_, Id> {
        Cow::Owned(self.id())
    }
}

impl<T: AsId + ?Sized> AsId for &T {
    fn as_id(&self) -> Cow<'_, Id> {
        (**self).as_id()
    }
}

#[cfg(test)]
mod tests {
    /// Ids of every form, sorted by their order keys, come out as sorting the ids themselves
    /// puts them: hex held as bytes among texts, texts alike in their first 16 bytes, prefixes
    /// of one another, the empty id.
    #[test]
    fn sorting_by_order_keys_keeps_the_order_of_ids() {
        let texts = [
            "5b8efff798038103d269b633813fc60c",
            "5b8efff798038103",
            "5b8efff798038103d269b633813fc60c/turn-2",
            "5b8efff798038103d269b633813fc60c/turn-10",
            "5B8EFFF798038103",
            "conversation-0001-turn-0001-long",
            "conversation-0001-turn-0001-lone",
            "conversation-0001",
            "conversation-0001\0",
            "ffffffffffffffffffffffffffffffff",
            "0000000000000000",
            "",
            "z",
            "é-non-ascii-text-id",
        ];
        let ids: Vec<Id> = texts.iter().map(|t| Id::new(t)).collect();
        let mut by_ord = ids.clone();
        by_ord.sort();
        let reversed: Vec<Id> = ids.iter().rev().cloned().collect();
        for input in [ids, reversed] {
            assert_eq!(sort_by_id(input, |id| id), by_ord);
        }
    }

    /// Clones share the allocation, and every reference an id held another way takes is
    /// given back: for each form that points to an allocation (trace bytes, text).
    fn references_are_given_back<T: From<Id> + Clone>(id_of: impl Fn(&T) -> Id) {
        let id = Id::new("5b8efff798038103d269b633813fc60c");
        let Repr::Trace(bytes) = &id.0 else {
            panic!("held as bytes");
        };
        let before = Arc::strong_count(bytes);
        let held = T::from(id.clone());
        let copies: Vec<T> = (0..3).map(|_| held.clone()).collect();
        let as_id = id_of(&copies[0]);
        assert_eq!(Arc::strong_count(bytes), before + 5);
        drop((held, copies, as_id));
        assert_eq!(Arc::strong_count(bytes), before);

        let text = ArcStr::from("span_abc");
        let held = T::from(Id(Repr::Text(text.clone())));
        let again = held.clone();
        assert_eq!(ArcStr::strong_count(&text), Some(3));
        drop((held, again));
        assert_eq!(ArcStr::strong_count(&text), Some(1));
    }

    #[test]
    fn compact_and_trace_ids_give_back_each_reference_they_take() {
        references_are_given_back::<CompactId>(CompactId::id);
        references_are_given_back::<TraceId>(TraceId::id);
    }

    use super::*;

    const TEXTS: [&str; 9] = [
        "",
        "0af7651916cd43dd8448eb211c80319c",
        "00f067aa0ba902b7",
        "0AF7651916CD43DD8448EB211C80319C",
        "00f067aa0ba902b",
        "trace_abc123",
        "b7ad6b7169203331",
        "ff",
        "00f067aa0ba902b7ff",
    ];

    #[test]
    fn text_reads_back_exactly_and_only_lower_case_hex_of_id_lengths_is_compact() {
        for text in TEXTS {
            let id = Id::new(text);
            assert_eq!(&*id.text(), text);
            assert_eq!(id.to_string(), text);
            assert_eq!(format!("{id:?}"), format!("{text:?}"));
            assert_eq!(Id::from(text.to_owned()), id);
            assert_eq!(id, text);
            assert_eq!(text, id);
            assert_eq!(id.is_empty(), text.is_empty());
            let text_held = matches!(id.0, Repr::Text(_));
            assert_eq!(text_held, id.as_text().is_some(), "{text}");
        }
        assert!(matches!(Id::new(TEXTS[1]).0, Repr::Trace(_)));
        assert!(matches!(Id::new(TEXTS[2]).0, Repr::Span(_)));
        assert!(matches!(Id::new(TEXTS[3]).0, Repr::Text(_)));
        assert_ne!(Id::new(TEXTS[1]), Id::new(TEXTS[3]));
        assert!(Id::new(TEXTS[2]) != "00f067aa0ba902b8");
    }

    #[test]
    fn bytes_read_as_their_lower_case_hex() {
        let trace = hex::decode(TEXTS[1]).unwrap();
        assert_eq!(Id::from_bytes(&trace), Id::new(TEXTS[1]));
        assert_eq!(Id::from_bytes(&[0xab; 3]).to_string(), "ababab");
        assert_eq!(Id::from_bytes(&[0; 8]).to_string(), "0000000000000000");
    }

    #[test]
    fn order_is_the_order_of_the_texts() {
        for a in TEXTS {
            for b in TEXTS {
                assert_eq!(Id::new(a).cmp(&Id::new(b)), a.cmp(b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn an_id_takes_two_words_even_when_optional() {
        assert_eq!(std::mem::size_of::<Id>(), 16);
        assert_eq!(std::mem::size_of::<Option<Id>>(), 16);
    }

    #[test]
    fn the_spans_of_a_trace_share_one_allocation_of_its_id() {
        let bytes = hex::decode(TEXTS[1]).unwrap();
        let first = Id::from_bytes(&bytes);
        let second = Id::new(TEXTS[1]);
        assert_eq!(first.allocation(), second.allocation());
        assert!(first.allocation().is_some());
        let other = Id::new("1af7651916cd43dd8448eb211c80319c");
        assert_ne!(first.allocation(), other.allocation());
        assert_ne!(first, other);
        assert_eq!(Id::new(TEXTS[2]).allocation(), None);
        assert_eq!(Id::default().allocation(), None);
    }
}
