//! An attribute list in one word: a packed list's [`Block`] pointer, or an open list's box
//! pointer with its low bit set.
//!
//! Every span and every event holds a list, and as an enum of the two pointers it would take
//! two words. Both pointers are at least 8-aligned (a block's
//! header is `align(8)`, a box of a `Vec` is a `Vec`'s alignment), so their low bit is free to
//! say which one it is.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use super::block::Block;
use crate::model::{ArcStr, AttrValue};

pub(super) type OpenList = Vec<(ArcStr, AttrValue)>;

/// The two forms of a list, owned.
pub(super) enum Repr {
    Open(Box<OpenList>),
    Packed(Block),
}

/// The two forms of a list, borrowed.
pub(super) enum View<'a> {
    Open(&'a OpenList),
    Packed(&'a Block),
}

/// Set in the pointer of an open list.
const OPEN: usize = 1;

const _: () = assert!(align_of::<OpenList>() > OPEN);

#[repr(transparent)]
pub(super) struct Slot(NonNull<u8>);

// SAFETY: a slot owns a `Box<OpenList>` or a `Block`, both of which may cross threads and be
// shared between them; it hands out only what they hand out.
unsafe impl Send for Slot {}
unsafe impl Sync for Slot {}
const _: () = crate::model::assert_send_sync::<Box<OpenList>>();
const _: () = crate::model::assert_send_sync::<Block>();

impl Slot {
    pub(super) fn new(repr: Repr) -> Slot {
        match repr {
            Repr::Open(list) => {
                let raw = NonNull::from(Box::leak(list)).cast::<u8>();
                Slot(raw.map_addr(|addr| addr | OPEN))
            }
            Repr::Packed(block) => Slot(block.into_raw()),
        }
    }

    pub(super) fn is_open(&self) -> bool {
        self.0.addr().get() & OPEN != 0
    }

    /// The open list's box pointer (only for an open slot).
    fn open_pointer(&self) -> NonNull<OpenList> {
        // The address had its low bit set, so without it it is still not null.
        self.0
            .map_addr(|addr| {
                std::num::NonZeroUsize::new(addr.get() & !OPEN).expect("an aligned box address")
            })
            .cast::<OpenList>()
    }

    pub(super) fn view(&self) -> View<'_> {
        if self.is_open() {
            // SAFETY: an open slot's pointer, untagged, is a live box's, owned by this slot and
            // borrowed for as long as it.
            View::Open(unsafe { self.open_pointer().as_ref() })
        } else {
            // SAFETY: an untagged slot holds exactly a block's pointer, and both types are one
            // `repr(transparent)` pointer: the slot reads as the block it owns.
            View::Packed(unsafe { &*(self as *const Slot).cast::<Block>() })
        }
    }

    /// The open list, to change (`None` while packed).
    pub(super) fn open_mut(&mut self) -> Option<&mut OpenList> {
        // SAFETY: as in `view`, borrowed mutably for as long as the slot is.
        self.is_open()
            .then(|| unsafe { self.open_pointer().as_mut() })
    }

    /// Puts `repr` in and hands back what was there.
    pub(super) fn replace(&mut self, repr: Repr) -> Repr {
        std::mem::replace(self, Slot::new(repr)).into_repr()
    }

    fn into_repr(self) -> Repr {
        let slot = ManuallyDrop::new(self);
        if slot.is_open() {
            // SAFETY: the box leaked in `new`, given back once: the slot is not dropped.
            Repr::Open(unsafe { Box::from_raw(slot.open_pointer().as_ptr()) })
        } else {
            // SAFETY: the block's pointer taken in `new`, given back once.
            Repr::Packed(unsafe { Block::from_raw(slot.0) })
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let emptied = std::mem::replace(self, Slot::new(Repr::Packed(Block::empty())));
        drop(emptied.into_repr());
    }
}

impl Clone for Slot {
    fn clone(&self) -> Slot {
        Slot::new(match self.view() {
            View::Open(list) => Repr::Open(Box::new(list.clone())),
            View::Packed(block) => Repr::Packed(block.clone()),
        })
    }
}
