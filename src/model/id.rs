//! [`Id`]: a trace, span or run id held compactly. OTLP ids are 16 or 8 bytes written as
//! lower-case hex; held as their bytes they need no allocation of their own, where a `String`
//! costs an allocation per id per span. Other formats' native ids (`trace_abc…`, arksim ids)
//! and hex that would not read back the same (upper case, odd lengths) stay text.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;

/// An id as text reads it: equality, hashing and order are those of its text, and `Display`
/// writes the text exactly as it arrived.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Id(Repr);

/// One representation per text (only lower-case hex of 32 or 16 digits is held as bytes, and
/// always so), which makes the derived equality and hash agree with the text's.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Trace([u8; 16]),
    Span([u8; 8]),
    Text(Box<str>),
}

impl Default for Id {
    fn default() -> Self {
        Id(Repr::Text(Box::default()))
    }
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
            return Some(Id(Repr::Trace(bytes)));
        }
        lower_hex::<8>(text).map(|bytes| Id(Repr::Span(bytes)))
    }

    /// The id whose text is the lower-case hex of `bytes` (what OTLP ids read as).
    pub fn from_bytes(bytes: &[u8]) -> Id {
        if let Ok(trace) = <[u8; 16]>::try_from(bytes) {
            Id(Repr::Trace(trace))
        } else if let Ok(span) = <[u8; 8]>::try_from(bytes) {
            Id(Repr::Span(span))
        } else {
            Id(Repr::Text(hex::encode(bytes).into()))
        }
    }

    /// The id's text, on the stack when it is held as bytes.
    pub fn text(&self) -> IdText<'_> {
        match &self.0 {
            Repr::Trace(bytes) => IdText::hex(bytes),
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

    /// Bytes held on the heap for this id (0 when it is held as bytes).
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Text(text) => text.len(),
            Repr::Trace(_) | Repr::Span(_) => 0,
        }
    }
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

/// As a `String` would print, so debug output reads the same as before ids were compact.
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
        Id::compact(&text).unwrap_or_else(|| Id(Repr::Text(text.into_boxed_str())))
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
            Repr::Trace(bytes) => lower_hex::<16>(other).is_some_and(|o| o == *bytes),
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

impl<T: AsId + ?Sized> AsId for &T {
    fn as_id(&self) -> Cow<'_, Id> {
        (**self).as_id()
    }
}

#[cfg(test)]
mod tests {
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
            let compact = matches!(id.0, Repr::Trace(_) | Repr::Span(_));
            assert_eq!(compact, id.heap_bytes() == 0 && !text.is_empty(), "{text}");
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
    fn held_as_bytes_an_id_takes_no_more_room_than_a_string() {
        assert_eq!(std::mem::size_of::<Id>(), 24);
        assert_eq!(std::mem::size_of::<Option<Id>>(), 24);
    }
}
