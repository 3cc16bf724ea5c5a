//! [`TraceId`]: a span's trace id in one word. An [`Id`] takes two (its 8 inline bytes of a span
//! id beside the tag saying which form it holds), but a trace id is always an allocation shared
//! by the spans of its trace — OTLP's 16 bytes, or another format's text — so the pointer alone
//! can carry the form, in its low bits (every form's allocation is 8-aligned). The rare trace id
//! of 16 hex digits, which an `Id` holds inline, gets an allocation of its own.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use arcstr::ArcStr;

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

fn tagged(pointer: *const u8, form: usize) -> NonNull<u8> {
    assert_eq!(pointer as usize & FORM_BITS, 0, "an 8-aligned allocation");
    NonNull::new(pointer.cast_mut())
        .expect("an allocation")
        .map_addr(|addr| addr | form)
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

    /// The text form's `ArcStr`, borrowed: not dropped, the reference stays this id's.
    fn text_arc(&self) -> ManuallyDrop<ArcStr> {
        // SAFETY: in the text form the pointer is what `ArcStr::into_raw` gave, and this id
        // still owns that reference (the `ManuallyDrop` never releases it).
        ManuallyDrop::new(unsafe { ArcStr::from_raw(self.pointer().cast()) })
    }

    fn view(&self) -> View<'_> {
        let pointer = self.pointer();
        // SAFETY: the pointer is the live allocation of this id's form, owned (one reference)
        // by this id, and borrowed for as long as it.
        unsafe {
            match self.form() {
                SIXTEEN_BYTES => View::SixteenBytes(pointer.cast().as_ref()),
                EIGHT_BYTES => View::EightBytes(pointer.cast().as_ref()),
                _ => {
                    let text: *const str = self.text_arc().as_str();
                    View::Text(&*text)
                }
            }
        }
    }

    /// The id, sharing this one's allocation.
    pub fn id(&self) -> Id {
        match self.view() {
            View::SixteenBytes(_) => {
                let pointer = self.pointer().as_ptr().cast::<[u8; 16]>().cast_const();
                // SAFETY: the pointer came from `Arc::into_raw` of an `Arc<[u8; 16]>` that this
                // id holds a reference to; the new `Arc` takes a reference of its own.
                let shared = unsafe {
                    Arc::increment_strong_count(pointer);
                    Arc::from_raw(pointer)
                };
                Id(Repr::Trace(shared))
            }
            View::EightBytes(bytes) => Id(Repr::Span(*bytes)),
            View::Text(_) => Id(Repr::Text((*self.text_arc()).clone())),
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
        TraceId(match id.0 {
            Repr::Trace(bytes) => tagged(Arc::into_raw(bytes).cast(), SIXTEEN_BYTES),
            Repr::Text(text) => tagged(ArcStr::into_raw(text).as_ptr().cast(), TEXT),
            Repr::Span(bytes) => tagged(Arc::into_raw(Arc::new(bytes)).cast(), EIGHT_BYTES),
        })
    }
}

impl Clone for TraceId {
    fn clone(&self) -> Self {
        let pointer = self.pointer().as_ptr();
        // SAFETY: as in `id`: each form's pointer came from its `into_raw`, and this id holds
        // a reference; the clone takes one more.
        unsafe {
            match self.form() {
                SIXTEEN_BYTES => Arc::increment_strong_count(pointer.cast::<[u8; 16]>()),
                EIGHT_BYTES => Arc::increment_strong_count(pointer.cast::<[u8; 8]>()),
                _ => {
                    let _taken = ArcStr::into_raw((*self.text_arc()).clone());
                }
            }
        }
        TraceId(self.0)
    }
}

impl Drop for TraceId {
    fn drop(&mut self) {
        let pointer = self.pointer().as_ptr();
        // SAFETY: this id's own reference, given back once.
        unsafe {
            match self.form() {
                SIXTEEN_BYTES => drop(Arc::from_raw(pointer.cast::<[u8; 16]>())),
                EIGHT_BYTES => drop(Arc::from_raw(pointer.cast::<[u8; 8]>())),
                _ => drop(ArcStr::from_raw(self.pointer().cast())),
            }
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
