//! [`TraceId`]: a span's trace id in one word. An [`Id`] takes two (its 8 inline bytes of a span
//! id beside the tag saying which form it holds), but a trace id is always an allocation shared
//! by the spans of its trace — OTLP's 16 bytes, or another format's text — so the pointer alone
//! can carry the form, in its low bits (every form's allocation is 8-aligned). The rare trace id
//! of 16 hex digits, which an `Id` holds inline, gets an allocation of its own.

use std::sync::Arc;

use super::{Id, IdText, Repr};
use crate::model::packed::{TraceOwned, TraceView, TraceWord};

#[derive(Clone)]
pub struct TraceId(TraceWord);

/// What a [`TraceId`] holds, borrowed.
#[derive(PartialEq)]
enum View<'a> {
    SixteenBytes(&'a [u8; 16]),
    Text(&'a str),
    EightBytes(&'a [u8; 8]),
}

impl TraceId {
    fn view(&self) -> View<'_> {
        match self.0.view() {
            TraceView::SixteenBytes(bytes) => View::SixteenBytes(bytes),
            TraceView::Text(text) => View::Text(text),
            TraceView::EightBytes(bytes) => View::EightBytes(bytes),
        }
    }

    /// The id, sharing this one's allocation.
    pub fn id(&self) -> Id {
        if let View::EightBytes(bytes) = self.view() {
            return Id(Repr::Span(*bytes));
        }
        Id(match self.0.owned() {
            TraceOwned::SixteenBytes(bytes) => Repr::Trace(bytes),
            TraceOwned::Text(text) => Repr::Text(text),
            TraceOwned::EightBytes(bytes) => Repr::Span(*bytes),
        })
    }

    /// The id's text, on the stack when it is held as bytes.
    pub fn text(&self) -> IdText<'_> {
        match self.view() {
            View::SixteenBytes(bytes) => IdText::hex(bytes),
            View::EightBytes(bytes) => IdText::hex(bytes),
            View::Text(text) => IdText::Borrowed(text),
        }
    }
}

impl From<Id> for TraceId {
    fn from(id: Id) -> TraceId {
        TraceId(TraceWord::new(match id.0 {
            Repr::Trace(bytes) => TraceOwned::SixteenBytes(bytes),
            Repr::Text(text) => TraceOwned::Text(text),
            Repr::Span(bytes) => TraceOwned::EightBytes(Arc::new(bytes)),
        }))
    }
}

impl PartialEq for TraceId {
    /// As the ids' texts compare: each text has one form (see [`Id`]), so ids of different
    /// forms differ, and one allocation is one text.
    fn eq(&self, other: &Self) -> bool {
        self.0.same_bits(&other.0) || self.view() == other.view()
    }
}

impl Eq for TraceId {}

impl PartialEq<Id> for TraceId {
    fn eq(&self, other: &Id) -> bool {
        match (self.view(), &other.0) {
            (View::SixteenBytes(a), Repr::Trace(b)) => a == &**b,
            (View::EightBytes(a), Repr::Span(b)) => a == b,
            (View::Text(a), Repr::Text(b)) => a == b.as_str(),
            _ => false,
        }
    }
}

impl PartialEq<TraceId> for Id {
    fn eq(&self, other: &TraceId) -> bool {
        other == self
    }
}

compact_id_conversions!(TraceId);

#[cfg(test)]
mod tests {
    use super::*;

    const FORMS: [&str; 4] = [
        "5b8efff798038103d269b633813fc60c",
        "00f067aa0ba902b7",
        "trace_abc",
        "",
    ];

    #[test]
    fn every_form_reads_back_as_the_id_it_was_made_from() {
        for text in FORMS {
            let id = Id::new(text);
            let trace = TraceId::from(id.clone());
            assert_eq!(trace.id(), id, "{text}");
            assert_eq!(&*trace.text(), text);
            assert_eq!(trace.to_string(), text);
            assert_eq!(format!("{trace:?}"), format!("{id:?}"));
            assert!(trace == id, "{text}: the trace id equals the id");
            assert!(id == trace, "{text}: and the id the trace id");
        }
        assert_eq!(std::mem::size_of::<TraceId>(), 8);
    }

    #[test]
    fn equality_is_the_texts_whatever_the_allocation() {
        for a in FORMS {
            for b in FORMS {
                let (x, y) = (TraceId::from(a), TraceId::from(b.to_owned()));
                assert_eq!(x == y, a == b, "{a} against {b}");
                assert_eq!(x == Id::new(b), a == b);
            }
        }
    }
}
