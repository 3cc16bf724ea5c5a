//! An [`Id`]'s shared allocation as a raw pointer, for the ids that keep the pointer apart from
//! what says which form it is ([`CompactId`](super::CompactId)'s tag byte,
//! [`TraceId`](super::TraceId)'s low bits). Every reference such an id takes or gives back goes
//! through here, by way of the `Id` it was made from, so the counting is `Arc`'s and `ArcStr`'s
//! own and written once.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use arcstr::ArcStr;

use super::{Id, Repr};

/// Which allocation a raw pointer is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum SharedForm {
    /// A trace id's sixteen bytes (`Arc<[u8; 16]>`).
    TraceBytes,
    /// A text id (`ArcStr`).
    Text,
}

/// What a shared allocation holds, borrowed.
#[derive(PartialEq)]
pub(super) enum SharedView<'a> {
    TraceBytes(&'a [u8; 16]),
    Text(&'a str),
}

/// A trace-bytes or text id's allocation as its pointer, with the id's reference; a span id's
/// bytes as they are (it has no allocation).
pub(super) fn into_raw(id: Id) -> Result<(SharedForm, NonNull<u8>), [u8; 8]> {
    match id.0 {
        Repr::Span(bytes) => Err(bytes),
        Repr::Trace(bytes) => Ok((
            SharedForm::TraceBytes,
            NonNull::new(Arc::into_raw(bytes).cast_mut().cast()).expect("an allocation"),
        )),
        Repr::Text(text) => Ok((SharedForm::Text, ArcStr::into_raw(text).cast())),
    }
}

/// The id whose reference the raw pointer holds, borrowed: never dropped, the reference stays
/// the holder's.
///
/// # Safety
/// `pointer` came from [`into_raw`] with `form`, and that reference has not been given back.
unsafe fn borrowed(form: SharedForm, pointer: NonNull<u8>) -> ManuallyDrop<Id> {
    // SAFETY: the caller's: each form's pointer is what its `into_raw` gave.
    ManuallyDrop::new(Id(unsafe {
        match form {
            SharedForm::TraceBytes => Repr::Trace(Arc::from_raw(
                pointer.as_ptr().cast::<[u8; 16]>().cast_const(),
            )),
            SharedForm::Text => Repr::Text(ArcStr::from_raw(pointer.cast())),
        }
    }))
}

/// What the allocation holds, for as long as the holder keeps its reference.
///
/// # Safety
/// As [`borrowed`], and the holder keeps its reference for `'a`.
pub(super) unsafe fn view<'a>(form: SharedForm, pointer: NonNull<u8>) -> SharedView<'a> {
    // SAFETY: the caller's.
    let id = unsafe { borrowed(form, pointer) };
    // SAFETY: both point into the allocation, which lives while the holder's reference does.
    unsafe {
        match &id.0 {
            Repr::Trace(bytes) => SharedView::TraceBytes(&*Arc::as_ptr(bytes)),
            Repr::Text(text) => SharedView::Text(&*(text.as_str() as *const str)),
            Repr::Span(_) => unreachable!("a shared form"),
        }
    }
}

/// The id, with a reference of its own.
///
/// # Safety
/// As [`borrowed`].
pub(super) unsafe fn to_id(form: SharedForm, pointer: NonNull<u8>) -> Id {
    // SAFETY: the caller's.
    (*unsafe { borrowed(form, pointer) }).clone()
}

/// One more reference, held raw (a copy's, which gives it back with [`release`]).
///
/// # Safety
/// As [`borrowed`].
pub(super) unsafe fn retain(form: SharedForm, pointer: NonNull<u8>) {
    // SAFETY: the caller's.
    std::mem::forget(unsafe { to_id(form, pointer) });
}

/// Gives the holder's reference back.
///
/// # Safety
/// As [`borrowed`]; the holder uses the pointer no more.
pub(super) unsafe fn release(form: SharedForm, pointer: NonNull<u8>) {
    // SAFETY: the caller's.
    drop(ManuallyDrop::into_inner(unsafe { borrowed(form, pointer) }));
}
