//! [`CompactId`]: an [`Id`] in nine bytes with no alignment. A span id is eight bytes, and a
//! longer id is a shared allocation whose pointer is eight bytes too; one more byte says which.
//! A span holds its own id and its parent's this way, beside its one-byte fields, where an `Id`
//! (whose tag cannot share its bytes) took sixteen bytes each.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use arcstr::ArcStr;

use super::{Id, IdText, Repr};

#[repr(C, packed)]
pub struct CompactId {
    payload: Payload,
    form: Form,
}

/// A span id's own eight bytes, or the pointer of a longer id's allocation (kept a pointer, not
/// an integer, so it keeps what it may point to).
#[derive(Clone, Copy)]
union Payload {
    span_bytes: [u8; 8],
    pointer: *const u8,
}

// SAFETY: it owns one reference to an `Arc<[u8; 16]>` or an `ArcStr` (or plain bytes), which
// may cross threads and be shared between them.
unsafe impl Send for CompactId {}
unsafe impl Sync for CompactId {}

/// What the payload is. Its unused values let `Option<CompactId>` stay nine bytes.
#[repr(u8)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A span id's own eight bytes.
    SpanBytes,
    /// The pointer of a shared trace id's sixteen bytes (`Arc::into_raw`).
    TraceBytes,
    /// The pointer of a text id (`ArcStr::into_raw`).
    Text,
}

/// What a [`CompactId`] holds, borrowed (a span id's bytes copied).
#[derive(PartialEq)]
enum View<'a> {
    SpanBytes([u8; 8]),
    TraceBytes(&'a [u8; 16]),
    Text(&'a str),
}

impl CompactId {
    /// The pointer of a trace-bytes or text id.
    fn pointer(&self) -> *const u8 {
        let payload = self.payload;
        debug_assert!(self.form() != Form::SpanBytes);
        // SAFETY: in these forms the payload was written as a pointer.
        unsafe { payload.pointer }
    }

    /// A span id's bytes.
    fn span_bytes(&self) -> [u8; 8] {
        let payload = self.payload;
        // SAFETY: every form writes all eight bytes, so any of them reads as bytes.
        unsafe { payload.span_bytes }
    }

    fn form(&self) -> Form {
        self.form
    }

    /// The text form's `ArcStr`, borrowed: never dropped, the reference stays this id's.
    fn text_arc(&self) -> ManuallyDrop<ArcStr> {
        let raw =
            std::ptr::NonNull::new(self.pointer().cast_mut().cast()).expect("a text id's pointer");
        // SAFETY: in the text form the payload is what `ArcStr::into_raw` gave, and this id
        // still owns that reference (the `ManuallyDrop` never releases it).
        ManuallyDrop::new(unsafe { ArcStr::from_raw(raw) })
    }

    fn view(&self) -> View<'_> {
        match self.form() {
            Form::SpanBytes => View::SpanBytes(self.span_bytes()),
            // SAFETY: the payload is the pointer `Arc::into_raw` gave for this id's own
            // reference, live for as long as this id.
            Form::TraceBytes => View::TraceBytes(unsafe { &*self.pointer().cast::<[u8; 16]>() }),
            Form::Text => {
                let text: *const str = self.text_arc().as_str();
                // SAFETY: as above, the text lives as long as this id's reference to it.
                View::Text(unsafe { &*text })
            }
        }
    }

    /// The id, sharing this one's allocation.
    pub fn id(&self) -> Id {
        match self.form() {
            Form::SpanBytes => Id(Repr::Span(self.span_bytes())),
            Form::TraceBytes => {
                let pointer = self.pointer().cast::<[u8; 16]>();
                // SAFETY: the pointer came from `Arc::into_raw` of an `Arc<[u8; 16]>` this id
                // holds a reference to; the new `Arc` takes one of its own.
                Id(Repr::Trace(unsafe {
                    Arc::increment_strong_count(pointer);
                    Arc::from_raw(pointer)
                }))
            }
            Form::Text => Id(Repr::Text((*self.text_arc()).clone())),
        }
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
        let pointer = |pointer: *const u8| Payload { pointer };
        match id.0 {
            Repr::Span(bytes) => CompactId {
                payload: Payload { span_bytes: bytes },
                form: Form::SpanBytes,
            },
            Repr::Trace(bytes) => CompactId {
                payload: pointer(Arc::into_raw(bytes).cast()),
                form: Form::TraceBytes,
            },
            Repr::Text(text) => CompactId {
                payload: pointer(ArcStr::into_raw(text).as_ptr().cast_const().cast()),
                form: Form::Text,
            },
        }
    }
}

impl From<&Id> for CompactId {
    fn from(id: &Id) -> CompactId {
        id.clone().into()
    }
}

impl Clone for CompactId {
    fn clone(&self) -> Self {
        match self.form() {
            Form::SpanBytes => {}
            // SAFETY: this id holds a reference; the clone takes one more.
            Form::TraceBytes => unsafe {
                Arc::increment_strong_count(self.pointer().cast::<[u8; 16]>());
            },
            Form::Text => {
                let _taken = ArcStr::into_raw((*self.text_arc()).clone());
            }
        }
        CompactId {
            payload: self.payload,
            form: self.form(),
        }
    }
}

impl Drop for CompactId {
    fn drop(&mut self) {
        match self.form() {
            Form::SpanBytes => {}
            // SAFETY: this id's own reference, given back once.
            Form::TraceBytes => unsafe { drop(Arc::from_raw(self.pointer().cast::<[u8; 16]>())) },
            Form::Text => drop(ManuallyDrop::into_inner(self.text_arc())),
        }
    }
}

impl PartialEq for CompactId {
    /// As the ids' texts compare: each text has one form (see [`Id`]).
    fn eq(&self, other: &Self) -> bool {
        (self.form() == other.form() && self.span_bytes() == other.span_bytes())
            || self.view() == other.view()
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
