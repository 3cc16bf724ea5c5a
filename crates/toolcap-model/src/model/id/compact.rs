//! [`CompactId`]: an [`Id`] in nine bytes with no alignment. A span id is eight bytes, and a
//! longer id is a shared allocation whose pointer is eight bytes too; one more byte says which.
//! A span holds its own id and its parent's this way, beside its one-byte fields, where an `Id`
//! (whose tag cannot share its bytes) took sixteen bytes each.

use std::ptr::NonNull;

use super::shared_raw::{self, SharedForm, SharedView};
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
    /// A trace-bytes or text id's allocation: its form and pointer.
    fn shared(&self) -> Option<(SharedForm, NonNull<u8>)> {
        let form = match self.form() {
            Form::SpanBytes => return None,
            Form::TraceBytes => SharedForm::TraceBytes,
            Form::Text => SharedForm::Text,
        };
        let payload = self.payload;
        // SAFETY: in these forms the payload was written as a pointer.
        let pointer = unsafe { payload.pointer };
        Some((
            form,
            NonNull::new(pointer.cast_mut()).expect("an allocation"),
        ))
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

    fn view(&self) -> View<'_> {
        let Some((form, pointer)) = self.shared() else {
            return View::SpanBytes(self.span_bytes());
        };
        // SAFETY: the pointer is what `shared_raw::into_raw` gave for this form, and this id
        // holds its reference for as long as it is borrowed.
        match unsafe { shared_raw::view(form, pointer) } {
            SharedView::TraceBytes(bytes) => View::TraceBytes(bytes),
            SharedView::Text(text) => View::Text(text),
        }
    }

    /// The id, sharing this one's allocation.
    pub fn id(&self) -> Id {
        match self.shared() {
            None => Id(Repr::Span(self.span_bytes())),
            // SAFETY: as in `view`; the id takes a reference of its own.
            Some((form, pointer)) => unsafe { shared_raw::to_id(form, pointer) },
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
        match shared_raw::into_raw(id) {
            Err(bytes) => CompactId {
                payload: Payload { span_bytes: bytes },
                form: Form::SpanBytes,
            },
            Ok((form, pointer)) => CompactId {
                payload: Payload {
                    pointer: pointer.as_ptr().cast_const(),
                },
                form: match form {
                    SharedForm::TraceBytes => Form::TraceBytes,
                    SharedForm::Text => Form::Text,
                },
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
        if let Some((form, pointer)) = self.shared() {
            // SAFETY: as in `view`; the copy holds the reference taken here.
            unsafe { shared_raw::retain(form, pointer) };
        }
        CompactId {
            payload: self.payload,
            form: self.form(),
        }
    }
}

impl Drop for CompactId {
    fn drop(&mut self) {
        if let Some((form, pointer)) = self.shared() {
            // SAFETY: as in `view`; this id's own reference, given back once.
            unsafe { shared_raw::release(form, pointer) };
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
