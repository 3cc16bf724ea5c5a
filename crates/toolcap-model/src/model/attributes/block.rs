//! A packed list's one allocation: a small header, the values it holds in full, then its packed
//! bytes.
//!
//! As two thin vectors, the packed bytes and the held values would cost every packed list a
//! 16-byte header, and a list holding any value (a one-off text, a payload, a map) a second
//! allocation with its own header. Here a list pays an 8-byte header and one allocation; a list
//! with nothing in it pays none. Lengths are 32 bits: [`Block::new`] declines a list past them,
//! and its owner keeps it unpacked.

use std::alloc::{self, Layout};
use std::mem::{align_of, size_of};
use std::ptr::{self, NonNull};

use crate::model::AttrValue;

#[repr(C, align(8))]
struct Header {
    held: u32,
    bytes: u32,
}

// The held values start right after the header: its alignment must do for them.
const _: () = assert!(align_of::<Header>() >= align_of::<AttrValue>());
const _: () = assert!(size_of::<Header>().is_multiple_of(align_of::<AttrValue>()));

/// The block of every empty list: never written, never freed.
static EMPTY: Header = Header { held: 0, bytes: 0 };

/// One pointer, and only that (`repr(transparent)`): an attribute list's slot holds it as is.
#[repr(transparent)]
pub(super) struct Block(NonNull<Header>);

// SAFETY: a block owns its values as a `Vec<AttrValue>` would and hands out only shared
// references to them, so it may cross threads when the values may.
unsafe impl Send for Block {}
unsafe impl Sync for Block {}
const _: () = crate::model::assert_send_sync::<AttrValue>();

impl Block {
    pub(super) fn empty() -> Block {
        Block(NonNull::from(&EMPTY))
    }

    /// The pointer, owning what the block owned (see [`Block::from_raw`]).
    pub(super) fn into_raw(self) -> NonNull<u8> {
        std::mem::ManuallyDrop::new(self).0.cast()
    }

    /// The block [`Block::into_raw`] gave the pointer of.
    ///
    /// # Safety
    /// `raw` came from `into_raw` and is given back once.
    pub(super) unsafe fn from_raw(raw: NonNull<u8>) -> Block {
        Block(raw.cast())
    }

    fn is_empty_block(&self) -> bool {
        ptr::eq(self.0.as_ptr(), &EMPTY)
    }

    /// `None` when the block would not fit the address space (a 32-bit one).
    fn checked_layout(held: usize, bytes: usize) -> Option<Layout> {
        let size = held
            .checked_mul(size_of::<AttrValue>())?
            .checked_add(size_of::<Header>())?
            .checked_add(bytes)?;
        Layout::from_size_align(size, align_of::<Header>()).ok()
    }

    /// The layout of a block that exists, so fits.
    fn layout(held: usize, bytes: usize) -> Layout {
        Block::checked_layout(held, bytes).expect("a block that exists has a valid layout")
    }

    /// A block holding `held` and `bytes`, or `None` when either is longer than 32 bits count
    /// (or the block than the address space).
    pub(super) fn new<I>(held: I, bytes: &[u8]) -> Option<Block>
    where
        I: IntoIterator<Item = AttrValue>,
        I::IntoIter: ExactSizeIterator,
    {
        let mut held = held.into_iter();
        let count = held.len();
        let (held_len, bytes_len) = (u32::try_from(count).ok()?, u32::try_from(bytes.len()).ok()?);
        if count == 0 && bytes.is_empty() {
            return Some(Block::empty());
        }
        let layout = Block::checked_layout(count, bytes.len())?;
        // SAFETY: the layout is not zero-sized (it holds the header).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(header) = NonNull::new(raw.cast::<Header>()) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: the allocation holds a header, `count` values and `bytes`, aligned for the
        // header and so for the values after it. Every value slot is written once: an
        // iterator that ends early leaves nulls, never uninitialised slots.
        unsafe {
            header.as_ptr().write(Header {
                held: held_len,
                bytes: bytes_len,
            });
            let values = header.as_ptr().add(1).cast::<AttrValue>();
            for slot in 0..count {
                values
                    .add(slot)
                    .write(held.next().unwrap_or(AttrValue::Null));
            }
            let packed = values.add(count).cast::<u8>();
            ptr::copy_nonoverlapping(bytes.as_ptr(), packed, bytes.len());
        }
        Some(Block(header))
    }

    fn header(&self) -> &Header {
        // SAFETY: the pointer is the static empty header or a live allocation's header.
        unsafe { self.0.as_ref() }
    }

    /// The values held in full, in the order the packed bytes number them.
    pub(super) fn held(&self) -> &[AttrValue] {
        let count = self.header().held as usize;
        // SAFETY: `count` initialised values follow the header (none for the empty block,
        // whose pointer is then still aligned and non-null).
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(1).cast::<AttrValue>(), count) }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        let header = self.header();
        // SAFETY: the packed bytes follow the held values.
        unsafe {
            let start = self
                .0
                .as_ptr()
                .add(1)
                .cast::<AttrValue>()
                .add(header.held as usize)
                .cast::<u8>();
            std::slice::from_raw_parts(start, header.bytes as usize)
        }
    }

    /// The allocation's size (0 for an empty list).
    pub(super) fn heap_bytes(&self) -> u64 {
        match self.is_empty_block() {
            true => 0,
            false => Block::layout(self.held().len(), self.bytes().len()).size() as u64,
        }
    }
}

impl Clone for Block {
    fn clone(&self) -> Block {
        Block::new(self.held().iter().cloned(), self.bytes())
            .expect("a block's copy has the block's lengths")
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if self.is_empty_block() {
            return;
        }
        let count = self.header().held as usize;
        let layout = Block::layout(count, self.header().bytes as usize);
        // SAFETY: a block other than the empty one owns its allocation and the values in it;
        // each value is dropped once, then the allocation is freed with its own layout.
        unsafe {
            let values = self.0.as_ptr().add(1).cast::<AttrValue>();
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(values, count));
            alloc::dealloc(self.0.as_ptr().cast::<u8>(), layout);
        }
    }
}
