//! [`TraceId`]: a span's trace id in one word. An [`Id`] takes two (its 8 inline bytes of a span
//! id beside the tag saying which form it holds), but a trace id is always an allocation shared
//! by the spans of its trace — OTLP's 16 bytes, or another format's text — so the pointer alone
//! can carry the form, in its low bits (every form's allocation is 8-aligned). The rare trace id
//! of 16 hex digits, which an `Id` holds inline, gets an allocation of its own.

use std::ptr::NonNull;
use std::sync::Arc;

use super::shared_raw::{self, SharedForm, SharedView};
use super::{Id, IdText, Repr};

pub struct TraceId(NonNull<u8>);

const SIXTEEN_BYTES: usize = 0;
const TEXT: usize = 1;
const EIGHT_BYTES: usize = 2;
const FORM_BITS: usize = 0b11;

// SAFETY: it owns one reference to an `Arc<[u8; 16]>`, an `ArcStr` or an `Arc<[u8; 8]>`, all
// of which may cross threads and be shared between them.
unsafe impl Send for TraceId {}
unsafe impl Sync for TraceId {}

/// What a [`TraceId`] holds, borrowed.
#[derive(PartialEq)]
enum View<'a> {
    SixteenBytes(&'a [u8; 16]),
    Text(&'a str),
    EightBytes(&'a [u8; 8]),
}

fn tagged(pointer: NonNull<u8>, form: usize) -> NonNull<u8> {
    assert_eq!(
        pointer.addr().get() & FORM_BITS,
        0,
        "an 8-aligned allocation"
    );
    pointer.map_addr(|addr| addr | form)
}

impl TraceId {
    fn form(&self) -> usize {
        self.0.addr().get() & FORM_BITS
    }

    fn pointer(&self) -> NonNull<u8> {
        self.0.map_addr(|addr| {
            std::num::NonZeroUsize::new(addr.get() & !FORM_BITS).expect("an aligned address")
        })
    }

    /// The allocation an `Id` shares (all forms but eight bytes): its form.
    fn shared_form(&self) -> Option<SharedForm> {
        match self.form() {
            SIXTEEN_BYTES => Some(SharedForm::TraceBytes),
            TEXT => Some(SharedForm::Text),
            _ => None,
        }
    }

    /// The eight-byte form's allocation, this id's own (an `Id` holds those bytes inline).
    fn eight_bytes(&self) -> *const [u8; 8] {
        self.pointer().as_ptr().cast::<[u8; 8]>().cast_const()
    }

    fn view(&self) -> View<'_> {
        match self.shared_form() {
            // SAFETY: the pointer is what `shared_raw::into_raw` gave for this form, and this
            // id holds its reference for as long as it is borrowed.
            Some(form) => match unsafe { shared_raw::view(form, self.pointer()) } {
                SharedView::TraceBytes(bytes) => View::SixteenBytes(bytes),
                SharedView::Text(text) => View::Text(text),
            },
            // SAFETY: the live `Arc<[u8; 8]>` this id owns, borrowed for as long as it.
            None => View::EightBytes(unsafe { &*self.eight_bytes() }),
        }
    }

    /// The id, sharing this one's allocation.
    pub fn id(&self) -> Id {
        match self.shared_form() {
            // SAFETY: as in `view`; the id takes a reference of its own.
            Some(form) => unsafe { shared_raw::to_id(form, self.pointer()) },
            // SAFETY: as in `view`.
            None => Id(Repr::Span(unsafe { *self.eight_bytes() })),
        }
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
        TraceId(match shared_raw::into_raw(id) {
            Ok((SharedForm::TraceBytes, pointer)) => tagged(pointer, SIXTEEN_BYTES),
            Ok((SharedForm::Text, pointer)) => tagged(pointer, TEXT),
            Err(bytes) => tagged(
                NonNull::new(Arc::into_raw(Arc::new(bytes)).cast_mut().cast())
                    .expect("an allocation"),
                EIGHT_BYTES,
            ),
        })
    }
}

impl Clone for TraceId {
    fn clone(&self) -> Self {
        match self.shared_form() {
            // SAFETY: as in `view`; the copy holds the reference taken here.
            Some(form) => unsafe { shared_raw::retain(form, self.pointer()) },
            // SAFETY: this id holds a reference to its `Arc<[u8; 8]>`; the copy takes one more.
            None => unsafe { Arc::increment_strong_count(self.eight_bytes()) },
        }
        TraceId(self.0)
    }
}

impl Drop for TraceId {
    fn drop(&mut self) {
        match self.shared_form() {
            // SAFETY: as in `view`; this id's own reference, given back once.
            Some(form) => unsafe { shared_raw::release(form, self.pointer()) },
            // SAFETY: this id's own reference to its `Arc<[u8; 8]>`, given back once.
            None => unsafe { drop(Arc::from_raw(self.eight_bytes())) },
        }
    }
}

impl PartialEq for TraceId {
    /// As the ids' texts compare: each text has one form (see [`Id`]), so ids of different
    /// forms differ, and one allocation is one text.
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || self.view() == other.view()
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
