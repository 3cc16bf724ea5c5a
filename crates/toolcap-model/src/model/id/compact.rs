//! [`CompactId`]: an [`Id`] in nine bytes with no alignment. A span id is eight bytes, and a
//! longer id is a shared allocation whose pointer is eight bytes too; one more byte says which.
//! A span holds its own id and its parent's this way, beside its one-byte fields, where an `Id`
//! (whose tag cannot share its bytes) took sixteen bytes each.

use super::{Id, IdText, Repr};
use crate::model::packed::{CompactOwned, CompactView as View, CompactWord};

#[derive(Clone)]
pub struct CompactId(CompactWord);

impl CompactId {
    fn view(&self) -> View<'_> {
        self.0.view()
    }

    /// The id, sharing this one's allocation.
    pub fn id(&self) -> Id {
        Id(match self.0.owned() {
            CompactOwned::SpanBytes(bytes) => Repr::Span(bytes),
            CompactOwned::TraceBytes(bytes) => Repr::Trace(bytes),
            CompactOwned::Text(text) => Repr::Text(text),
        })
    }

    /// An empty text id (what a missing id reads as in some formats).
    pub fn is_empty(&self) -> bool {
        matches!(self.view(), View::Text(""))
    }

    /// The id's text, on the stack when it is held as bytes.
    pub fn text(&self) -> IdText<'_> {
        match self.view() {
            View::SpanBytes(bytes) => IdText::hex(&bytes),
            View::TraceBytes(bytes) => IdText::hex(bytes),
            View::Text(text) => IdText::Borrowed(text),
        }
    }
}

impl From<Id> for CompactId {
    fn from(id: Id) -> CompactId {
        CompactId(CompactWord::new(match id.0 {
            Repr::Span(bytes) => CompactOwned::SpanBytes(bytes),
            Repr::Trace(bytes) => CompactOwned::TraceBytes(bytes),
            Repr::Text(text) => CompactOwned::Text(text),
        }))
    }
}

impl From<&Id> for CompactId {
    fn from(id: &Id) -> CompactId {
        id.clone().into()
    }
}

impl PartialEq for CompactId {
    /// As the ids' texts compare: each text has one form (see [`Id`]).
    fn eq(&self, other: &Self) -> bool {
        self.0.same_bits(&other.0) || self.view() == other.view()
    }
}

impl Eq for CompactId {}

impl PartialEq<Id> for CompactId {
    fn eq(&self, other: &Id) -> bool {
        match (self.view(), &other.0) {
            (View::SpanBytes(a), Repr::Span(b)) => a == *b,
            (View::TraceBytes(a), Repr::Trace(b)) => a == &**b,
            (View::Text(a), Repr::Text(b)) => a == b.as_str(),
            _ => false,
        }
    }
}

impl PartialEq<CompactId> for Id {
    fn eq(&self, other: &CompactId) -> bool {
        other == self
    }
}

impl PartialEq<str> for CompactId {
    fn eq(&self, other: &str) -> bool {
        *self.text() == *other
    }
}

impl PartialEq<&str> for CompactId {
    fn eq(&self, other: &&str) -> bool {
        *self.text() == **other
    }
}

impl Ord for CompactId {
    /// Text order, as [`Id`]'s: ids of one form compare without formatting.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self.view(), other.view()) {
            (View::SpanBytes(a), View::SpanBytes(b)) => a.cmp(&b),
            (View::TraceBytes(a), View::TraceBytes(b)) => a.cmp(b),
            (View::Text(a), View::Text(b)) => a.cmp(b),
            _ => (*self.text()).cmp(&*other.text()),
        }
    }
}

impl PartialOrd for CompactId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

compact_id_conversions!(CompactId);

#[cfg(test)]
mod tests {
    use super::*;

    const FORMS: [&str; 4] = [
        "00f067aa0ba902b7",
        "5b8efff798038103d269b633813fc60c",
        "span_abc",
        "",
    ];

    #[test]
    fn nine_bytes_and_none_costs_nothing_more() {
        assert_eq!(std::mem::size_of::<CompactId>(), 9);
        assert_eq!(std::mem::size_of::<Option<CompactId>>(), 9);
        assert_eq!(std::mem::align_of::<CompactId>(), 1);
    }

    #[test]
    fn every_form_reads_back_and_compares_as_its_text() {
        for a in FORMS {
            let id = Id::new(a);
            let compact = CompactId::from(id.clone());
            assert_eq!(compact.id(), id, "{a}");
            assert_eq!(&*compact.text(), a);
            assert_eq!(compact.to_string(), a);
            assert_eq!(format!("{compact:?}"), format!("{id:?}"));
            for b in FORMS {
                let other = CompactId::from(b.to_owned());
                assert_eq!(compact == other, a == b, "{a} against {b}");
                assert_eq!(compact == Id::new(b), a == b);
                assert_eq!(Id::new(b) == compact, a == b);
            }
        }
    }
}
