//! The model's packed forms that no safe type holds at their size, each behind a safe type:
//!
//! - [`Block`]: a packed attribute list's one allocation (a header, the values held in full,
//!   then the packed bytes);
//! - [`Slot`], [`FactsWord`], [`TraceWord`]: one word holding one of a few owning pointers,
//!   which one said by the pointer's low bits (every pointee is aligned past them, so they are
//!   free), and for [`FactsWord`] also plain bits in place of a pointer;
//! - [`CompactWord`]: a span id's eight bytes or a shared id's pointer in nine bytes with no
//!   alignment, one byte saying which.
//!
//! Every `unsafe` of the model is in this file, each with the invariant that makes it sound.
//! The types outside see owned values (`Box`, `Arc`, `ArcStr`, `Block`) going in and coming
//! out, and references borrowed for as long as the word is.

#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, align_of, size_of};
use std::num::NonZeroUsize;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use arcstr::ArcStr;

use super::kind_facts::{KeyedLlmFacts, SeveralFacts};
use super::{AttrValue, LlmFacts, RetrievalFacts, ToolFacts};

/// An owning pointer that can live for a while as its bare address.
///
/// # Safety
/// `into_raw` gives a non-null address that owns what the pointer owned, and `from_raw` of that
/// address gives the pointer back. While the address is owned, what `get` and `get_mut` return
/// lies in memory the address keeps alive.
pub(crate) unsafe trait Owner: Sized {
    type Ref<'a>
    where
        Self: 'a;
    type Mut<'a>
    where
        Self: 'a;

    fn into_raw(self) -> NonNull<u8>;

    /// # Safety
    /// `raw` came from `into_raw` of this type, and the address is used no more.
    unsafe fn from_raw(raw: NonNull<u8>) -> Self;

    /// # Safety
    /// `raw` came from `into_raw` of this type and stays owned, and borrowed by nothing
    /// mutably, for `'a`.
    unsafe fn get<'a>(raw: NonNull<u8>) -> Self::Ref<'a>;

    /// # Safety
    /// As `get`, and borrowed by nothing else at all for `'a`.
    unsafe fn get_mut<'a>(raw: NonNull<u8>) -> Self::Mut<'a>;

    /// A copy of the owner at `raw`, which stays owned.
    ///
    /// # Safety
    /// As `get`.
    unsafe fn cloned(raw: NonNull<u8>) -> Self;
}

// SAFETY: `Box::leak` gives the box's address, non-null and owning its value, which lives there
// until `Box::from_raw` takes it back.
unsafe impl<T: Clone> Owner for Box<T> {
    type Ref<'a>
        = &'a T
    where
        Self: 'a;
    type Mut<'a>
        = &'a mut T
    where
        Self: 'a;

    fn into_raw(self) -> NonNull<u8> {
        NonNull::from(Box::leak(self)).cast()
    }

    unsafe fn from_raw(raw: NonNull<u8>) -> Self {
        // SAFETY: the caller's: a leaked box of `T`, given back once.
        unsafe { Box::from_raw(raw.cast::<T>().as_ptr()) }
    }

    unsafe fn get<'a>(raw: NonNull<u8>) -> &'a T {
        // SAFETY: the caller's: a live, initialised `T`, not borrowed mutably for `'a`.
        unsafe { raw.cast::<T>().as_ref() }
    }

    unsafe fn get_mut<'a>(raw: NonNull<u8>) -> &'a mut T {
        // SAFETY: the caller's: a live, initialised `T`, borrowed by nothing else for `'a`.
        unsafe { raw.cast::<T>().as_mut() }
    }

    unsafe fn cloned(raw: NonNull<u8>) -> Self {
        // Copied through a shared reference, never through a second `Box` of the same value.
        // SAFETY: the caller's.
        Box::new(unsafe { Self::get(raw) }.clone())
    }
}

// SAFETY: `Arc::into_raw` gives the address of the shared value, non-null and holding one
// strong reference, which keeps the value there until `Arc::from_raw` takes it back.
unsafe impl<T> Owner for Arc<T> {
    type Ref<'a>
        = &'a T
    where
        Self: 'a;
    type Mut<'a>
        = &'a T
    where
        Self: 'a;

    fn into_raw(self) -> NonNull<u8> {
        NonNull::new(Arc::into_raw(self).cast_mut())
            .expect("an Arc's address is not null")
            .cast()
    }

    unsafe fn from_raw(raw: NonNull<u8>) -> Self {
        // SAFETY: the caller's: an `Arc<T>`'s address with its reference, given back once.
        unsafe { Arc::from_raw(raw.cast::<T>().as_ptr()) }
    }

    unsafe fn get<'a>(raw: NonNull<u8>) -> &'a T {
        // SAFETY: the caller's: the reference the address holds keeps the value alive for `'a`,
        // and an `Arc`'s value is only ever borrowed shared.
        unsafe { raw.cast::<T>().as_ref() }
    }

    unsafe fn get_mut<'a>(raw: NonNull<u8>) -> &'a T {
        // SAFETY: as `get`.
        unsafe { Self::get(raw) }
    }

    unsafe fn cloned(raw: NonNull<u8>) -> Self {
        let value = raw.cast::<T>().as_ptr().cast_const();
        // SAFETY: the caller's: `value` is an `Arc<T>`'s address whose reference stays owned;
        // the count rises by one, and that one reference is what `from_raw` takes.
        unsafe {
            Arc::increment_strong_count(value);
            Arc::from_raw(value)
        }
    }
}

// SAFETY: `ArcStr::into_raw` gives the address of the shared text, non-null and holding one
// reference (none for a static text, which lives for ever), which keeps the text there until
// `ArcStr::from_raw` takes it back.
unsafe impl Owner for ArcStr {
    type Ref<'a> = &'a str;
    type Mut<'a> = &'a str;

    fn into_raw(self) -> NonNull<u8> {
        ArcStr::into_raw(self).cast()
    }

    unsafe fn from_raw(raw: NonNull<u8>) -> Self {
        // SAFETY: the caller's: an `ArcStr`'s address with its reference, given back once.
        unsafe { ArcStr::from_raw(raw.cast()) }
    }

    unsafe fn get<'a>(raw: NonNull<u8>) -> &'a str {
        // SAFETY: the caller's; the text read back is never dropped, so the address keeps its
        // reference.
        let text = ManuallyDrop::new(unsafe { <Self as Owner>::from_raw(raw) });
        let text: *const str = text.as_str();
        // SAFETY: the text lies in the shared allocation (or static memory), not in the
        // `ArcStr` read back, and the address's reference keeps it alive for `'a`.
        unsafe { &*text }
    }

    unsafe fn get_mut<'a>(raw: NonNull<u8>) -> &'a str {
        // SAFETY: as `get`.
        unsafe { Self::get(raw) }
    }

    unsafe fn cloned(raw: NonNull<u8>) -> Self {
        // SAFETY: the caller's; as in `get`, the text read back is never dropped.
        let text = ManuallyDrop::new(unsafe { <Self as Owner>::from_raw(raw) });
        (*text).clone()
    }
}

/// The header of a [`Block`]'s allocation: how many values it holds in full, and how many
/// packed bytes follow them.
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

/// A packed list's one allocation: a small header, the values it holds in full, then its packed
/// bytes.
///
/// As two thin vectors, the packed bytes and the held values would cost every packed list a
/// 16-byte header, and a list holding any value (a one-off text, a payload, a map) a second
/// allocation with its own header. Here a list pays an 8-byte header and one allocation; a list
/// with nothing in it pays none. Lengths are 32 bits: [`Block::new`] declines a list past them,
/// and its owner keeps it unpacked.
pub(crate) struct Block(NonNull<Header>);

/// A [`Block`], borrowed: what a [`Slot`] hands out for its packed list.
#[derive(Clone, Copy)]
pub(crate) struct BlockRef<'a> {
    header: NonNull<Header>,
    block: PhantomData<&'a Block>,
}

// SAFETY: a block owns its values as a `Vec<AttrValue>` would, so it may cross threads as the
// values may.
unsafe impl Send for Block {}
// SAFETY: it hands out only shared references to its values, so it may be shared between threads
// as the values may.
unsafe impl Sync for Block {}
// SAFETY: a borrowed block hands out what `&Block` would, so it may go where `&Block` may.
unsafe impl Send for BlockRef<'_> {}
// SAFETY: as for `Send`: what `&Block` may be shared, it may.
unsafe impl Sync for BlockRef<'_> {}
const _: () = super::assert_send_sync::<AttrValue>();

impl Block {
    pub(crate) fn empty() -> Block {
        Block(NonNull::from(&EMPTY))
    }

    fn is_empty_block(header: NonNull<Header>) -> bool {
        ptr::eq(header.as_ptr(), &EMPTY)
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
    pub(crate) fn new<I>(held: I, bytes: &[u8]) -> Option<Block>
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

    pub(crate) fn as_ref(&self) -> BlockRef<'_> {
        BlockRef {
            header: self.0,
            block: PhantomData,
        }
    }

    /// The values held in full, in the order the packed bytes number them.
    pub(crate) fn held(&self) -> &[AttrValue] {
        self.as_ref().held()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.as_ref().bytes()
    }
}

impl<'a> BlockRef<'a> {
    fn header(self) -> &'a Header {
        // SAFETY: the pointer is the static empty header or a live block's header, which the
        // borrowed block keeps for `'a`.
        unsafe { self.header.as_ref() }
    }

    /// The values held in full, in the order the packed bytes number them.
    pub(crate) fn held(self) -> &'a [AttrValue] {
        let count = self.header().held as usize;
        // SAFETY: `count` initialised values follow the header (none for the empty block, whose
        // pointer past the header is then still aligned and non-null), alive for `'a`.
        unsafe { std::slice::from_raw_parts(self.header.as_ptr().add(1).cast(), count) }
    }

    pub(crate) fn bytes(self) -> &'a [u8] {
        let header = self.header();
        // SAFETY: `header.bytes` initialised bytes follow the held values, alive for `'a`.
        unsafe {
            let start = self
                .header
                .as_ptr()
                .add(1)
                .cast::<AttrValue>()
                .add(header.held as usize)
                .cast::<u8>();
            std::slice::from_raw_parts(start, header.bytes as usize)
        }
    }

    /// The allocation's size (0 for an empty list).
    pub(crate) fn heap_bytes(self) -> u64 {
        match Block::is_empty_block(self.header) {
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
        if Block::is_empty_block(self.0) {
            return;
        }
        let header = self.as_ref().header();
        let count = header.held as usize;
        let layout = Block::layout(count, header.bytes as usize);
        // SAFETY: a block other than the empty one owns its allocation and the values in it;
        // each value is dropped once, then the allocation is freed with its own layout.
        unsafe {
            let values = self.0.as_ptr().add(1).cast::<AttrValue>();
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(values, count));
            alloc::dealloc(self.0.as_ptr().cast::<u8>(), layout);
        }
    }
}

// SAFETY: a block's pointer is its header's, non-null and owning the allocation, which lives
// until a `Block` of that pointer is dropped; a block is its pointer and nothing else.
unsafe impl Owner for Block {
    type Ref<'a> = BlockRef<'a>;
    type Mut<'a> = BlockRef<'a>;

    fn into_raw(self) -> NonNull<u8> {
        ManuallyDrop::new(self).0.cast()
    }

    unsafe fn from_raw(raw: NonNull<u8>) -> Self {
        Block(raw.cast())
    }

    unsafe fn get<'a>(raw: NonNull<u8>) -> BlockRef<'a> {
        BlockRef {
            header: raw.cast(),
            block: PhantomData,
        }
    }

    unsafe fn get_mut<'a>(raw: NonNull<u8>) -> BlockRef<'a> {
        // SAFETY: the caller's.
        unsafe { Self::get(raw) }
    }

    unsafe fn cloned(raw: NonNull<u8>) -> Self {
        // SAFETY: the caller's.
        let block = ManuallyDrop::new(unsafe { <Self as Owner>::from_raw(raw) });
        (*block).clone()
    }
}

/// The number of low bits a tag mask of the form `2^n - 1` covers.
const fn tag_bits(mask: usize) -> u32 {
    assert!(mask.count_ones() == usize::BITS - mask.leading_zeros());
    mask.count_ones()
}

/// Defines a word holding one of the owners listed, each under its tag in the low bits of its
/// address (`tags` is the mask of those bits), or plain bits above the tag (`bits`); with its
/// owned, borrowed and mutably borrowed forms as enums of the same variants.
macro_rules! tagged_word {
    (
        $(#[$doc:meta])*
        struct $word:ident, tags $mask:expr;
        owned $owned:ident, borrowed $view:ident, changed $view_mut:ident
            $(, bits $bits:ident = $bits_tag:expr )?;
        $( $variant:ident($ty:ty) = $tag:expr, )+
    ) => {
        $(#[$doc])*
        pub(crate) struct $word(NonNull<u8>);

        // Each word uses the part of this it needs.
        #[allow(dead_code)]
        pub(crate) enum $owned {
            $( $variant($ty), )+
            $( $bits(usize), )?
        }

        #[allow(dead_code)]
        pub(crate) enum $view<'a> {
            $( $variant(<$ty as Owner>::Ref<'a>), )+
            $( $bits(usize), )?
        }

        #[allow(dead_code)]
        pub(crate) enum $view_mut<'a> {
            $( $variant(<$ty as Owner>::Mut<'a>), )+
            $( $bits(usize), )?
        }

        // Each tag says one variant, and the word owns only owners that may cross threads.
        const _: () = {
            let tags: &[usize] = &[$( $tag, )+ $( $bits_tag, )?];
            let mut i = 0;
            while i < tags.len() {
                let mut j = i + 1;
                while j < tags.len() {
                    assert!(tags[i] != tags[j], "one tag per variant");
                    j += 1;
                }
                i += 1;
            }
            $( assert!($bits_tag != 0, "bits with a tag, so never a null word"); )?
            $( super::assert_send_sync::<$ty>(); )+
        };

        // SAFETY: the word owns one of the owners above (or plain bits), each of which may cross
        // threads (asserted above).
        unsafe impl Send for $word {}
        // SAFETY: each of those owners may be shared between threads (asserted above), and the
        // word hands out only what they do.
        unsafe impl Sync for $word {}

        // Each word uses the part of this it needs.
        #[allow(dead_code)]
        impl $word {
            const MASK: usize = $mask;

            pub(crate) fn new(owned: $owned) -> $word {
                match owned {
                    $( $owned::$variant(owner) => $word::tagged(Owner::into_raw(owner), $tag), )+
                    $( $owned::$bits(bits) => {
                        let shift = tag_bits(Self::MASK);
                        assert!($bits_tag <= Self::MASK, "a tag within the mask");
                        assert!(bits >> (usize::BITS - shift) == 0, "bits that fit above the tag");
                        let word = NonZeroUsize::new(bits << shift | $bits_tag).expect("a tag");
                        $word(NonNull::without_provenance(word))
                    } )?
                }
            }

            /// `raw` with `tag` in its low bits; panics (leaking the owner) where the tag does
            /// not fit the mask or the address is not aligned past it.
            fn tagged(raw: NonNull<u8>, tag: usize) -> $word {
                assert!(
                    tag <= Self::MASK && raw.addr().get() & Self::MASK == 0,
                    "a tag that fits below an aligned address",
                );
                $word(raw.map_addr(|addr| addr | tag))
            }

            fn tag(&self) -> usize {
                self.0.addr().get() & Self::MASK
            }

            /// The owner's address, untagged (never called for bits).
            fn address(&self) -> NonNull<u8> {
                self.0.map_addr(|addr| {
                    NonZeroUsize::new(addr.get() & !Self::MASK).expect("an aligned address")
                })
            }

            /// Whether the two words are the same bits: the same owner, or the same bits.
            pub(crate) fn same_bits(&self, other: &$word) -> bool {
                self.0 == other.0
            }

            fn bits(&self) -> usize {
                self.0.addr().get() >> tag_bits(Self::MASK)
            }

            pub(crate) fn view(&self) -> $view<'_> {
                let tag = self.tag();
                $( if tag == $tag {
                    // SAFETY: a word with this tag was made by `new` from this variant's owner,
                    // whose address it owns until it is dropped or taken apart; the borrow is
                    // the word's.
                    return $view::$variant(unsafe { <$ty as Owner>::get(self.address()) });
                } )+
                $( if tag == $bits_tag {
                    return $view::$bits(self.bits());
                } )?
                unreachable!("a tag `new` wrote")
            }

            pub(crate) fn view_mut(&mut self) -> $view_mut<'_> {
                let tag = self.tag();
                $( if tag == $tag {
                    // SAFETY: as in `view`, borrowed mutably as the word is.
                    return $view_mut::$variant(unsafe { <$ty as Owner>::get_mut(self.address()) });
                } )+
                $( if tag == $bits_tag {
                    return $view_mut::$bits(self.bits());
                } )?
                unreachable!("a tag `new` wrote")
            }

            /// What it holds, copied (a shared owner's reference taken once more).
            pub(crate) fn owned(&self) -> $owned {
                let tag = self.tag();
                $( if tag == $tag {
                    // SAFETY: as in `view`; the word keeps its own owner.
                    return $owned::$variant(unsafe { <$ty as Owner>::cloned(self.address()) });
                } )+
                $( if tag == $bits_tag {
                    return $owned::$bits(self.bits());
                } )?
                unreachable!("a tag `new` wrote")
            }

            /// What it holds, given back.
            pub(crate) fn into_owned(self) -> $owned {
                let word = ManuallyDrop::new(self);
                let tag = word.tag();
                $( if tag == $tag {
                    // SAFETY: as in `view`; the word is not dropped, so the owner given back
                    // is the only one.
                    return $owned::$variant(unsafe { <$ty as Owner>::from_raw(word.address()) });
                } )+
                $( if tag == $bits_tag {
                    return $owned::$bits(word.bits());
                } )?
                unreachable!("a tag `new` wrote")
            }
        }

        impl Clone for $word {
            fn clone(&self) -> $word {
                $word::new(self.owned())
            }
        }

        impl Drop for $word {
            fn drop(&mut self) {
                let tag = self.tag();
                $( if tag == $tag {
                    // SAFETY: as in `view`; the word's own owner, given back once as it goes.
                    drop(unsafe { <$ty as Owner>::from_raw(self.address()) });
                } )+
            }
        }
    };
}

/// An attribute list that a parser builds, boxed.
pub(crate) type OpenList = Vec<(ArcStr, AttrValue)>;

tagged_word! {
    /// An attribute list in one word: a packed list's [`Block`], or an open list's box.
    ///
    /// Every span and every event holds a list, and as an enum of the two pointers it would
    /// take two words.
    struct Slot, tags 0b1;
    owned SlotRepr, borrowed SlotView, changed SlotViewMut;
    Packed(Block) = 0,
    Open(Box<OpenList>) = 1,
}

/// The keyed forms are for 64-bit targets only, where every facts type is 8-aligned, so that a
/// box's address leaves three bits for the tag.
pub(crate) const KEYED: bool = usize::BITS >= 64;

tagged_word! {
    /// A span's facts of its kind of work in one word: the box of one kind's facts, or of
    /// several; or, with no box, the keys of a tool call's facts as bits.
    struct FactsWord, tags if KEYED { 0b111 } else { 0b11 };
    owned FactsOwned, borrowed FactsView, changed FactsViewMut, bits ToolKeys = 4;
    Llm(Box<LlmFacts>) = 0,
    Tool(Box<ToolFacts>) = 1,
    Retrieval(Box<RetrievalFacts>) = 2,
    Several(Box<SeveralFacts>) = 3,
    LlmKeyed(Box<KeyedLlmFacts>) = 5,
}

tagged_word! {
    /// A trace id in one word: the shared sixteen bytes of an OTLP trace id, a text id, or
    /// eight bytes of its own.
    struct TraceWord, tags 0b11;
    owned TraceOwned, borrowed TraceView, changed TraceViewMut;
    SixteenBytes(Arc<[u8; 16]>) = 0,
    Text(ArcStr) = 1,
    EightBytes(Arc<[u8; 8]>) = 2,
}

/// A span id's eight bytes, or the pointer of a shared trace id's sixteen bytes or of a text
/// id, in nine bytes with no alignment: one more byte says which. Its form's unused values let
/// `Option<CompactWord>` stay nine bytes.
#[repr(C, packed)]
pub(crate) struct CompactWord {
    /// The shared allocation's address, or the span id's first bytes as an address with no
    /// provenance (never followed).
    address: *const u8,
    /// The span id's bytes past an address's (none on 64-bit targets).
    rest: [u8; 8 - size_of::<usize>()],
    form: CompactForm,
}

#[repr(u8)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum CompactForm {
    SpanBytes,
    TraceBytes,
    Text,
}

/// What a [`CompactWord`] holds, owned.
pub(crate) enum CompactOwned {
    SpanBytes([u8; 8]),
    TraceBytes(Arc<[u8; 16]>),
    Text(ArcStr),
}

/// What a [`CompactWord`] holds, borrowed (a span id's bytes copied).
#[derive(PartialEq)]
pub(crate) enum CompactView<'a> {
    SpanBytes([u8; 8]),
    TraceBytes(&'a [u8; 16]),
    Text(&'a str),
}

// SAFETY: it owns a span id's bytes or one reference to an `Arc<[u8; 16]>` or an `ArcStr`, which
// may cross threads.
unsafe impl Send for CompactWord {}
// SAFETY: those may be shared between threads, and it hands out only shared references.
unsafe impl Sync for CompactWord {}
const _: () = super::assert_send_sync::<Arc<[u8; 16]>>();
const _: () = super::assert_send_sync::<ArcStr>();

impl CompactWord {
    pub(crate) fn new(owned: CompactOwned) -> CompactWord {
        let (raw, form) = match owned {
            CompactOwned::SpanBytes(bytes) => {
                let (first, rest) = bytes.split_at(size_of::<usize>());
                let first = usize::from_ne_bytes(first.try_into().expect("an address's bytes"));
                return CompactWord {
                    address: ptr::without_provenance(first),
                    rest: rest.try_into().expect("the bytes past an address"),
                    form: CompactForm::SpanBytes,
                };
            }
            CompactOwned::TraceBytes(bytes) => (Owner::into_raw(bytes), CompactForm::TraceBytes),
            CompactOwned::Text(text) => (Owner::into_raw(text), CompactForm::Text),
        };
        CompactWord {
            address: raw.as_ptr().cast_const(),
            rest: [0; 8 - size_of::<usize>()],
            form,
        }
    }

    fn form(&self) -> CompactForm {
        self.form
    }

    /// The shared allocation's address (not for a span id's bytes).
    fn raw(&self) -> NonNull<u8> {
        NonNull::new(self.address.cast_mut()).expect("a shared allocation's address")
    }

    fn span_bytes(&self) -> [u8; 8] {
        let mut bytes = [0; 8];
        let (first, rest) = bytes.split_at_mut(size_of::<usize>());
        first.copy_from_slice(&self.address.addr().to_ne_bytes());
        rest.copy_from_slice(&{ self.rest });
        bytes
    }

    /// Whether the two words are the same bits: the same span id, or the same allocation.
    pub(crate) fn same_bits(&self, other: &CompactWord) -> bool {
        self.form() == other.form() && self.address.addr() == other.address.addr() && { self.rest }
            == { other.rest }
    }

    pub(crate) fn view(&self) -> CompactView<'_> {
        match self.form() {
            CompactForm::SpanBytes => CompactView::SpanBytes(self.span_bytes()),
            CompactForm::TraceBytes => {
                // SAFETY: in this form the address is what `new` took from an `Arc<[u8; 16]>`,
                // and the word owns its reference for as long as it is borrowed.
                CompactView::TraceBytes(unsafe { <Arc<[u8; 16]> as Owner>::get(self.raw()) })
            }
            CompactForm::Text => {
                // SAFETY: as above, of an `ArcStr`.
                CompactView::Text(unsafe { <ArcStr as Owner>::get(self.raw()) })
            }
        }
    }

    /// What it holds, copied (a shared allocation's reference taken once more).
    pub(crate) fn owned(&self) -> CompactOwned {
        match self.form() {
            CompactForm::SpanBytes => CompactOwned::SpanBytes(self.span_bytes()),
            CompactForm::TraceBytes => {
                // SAFETY: as in `view`; the word keeps its own reference.
                CompactOwned::TraceBytes(unsafe { <Arc<[u8; 16]> as Owner>::cloned(self.raw()) })
            }
            CompactForm::Text => {
                // SAFETY: as in `view`; the word keeps its own reference.
                CompactOwned::Text(unsafe { <ArcStr as Owner>::cloned(self.raw()) })
            }
        }
    }
}

impl Clone for CompactWord {
    fn clone(&self) -> CompactWord {
        CompactWord::new(self.owned())
    }
}

impl Drop for CompactWord {
    fn drop(&mut self) {
        match self.form() {
            CompactForm::SpanBytes => {}
            CompactForm::TraceBytes => {
                // SAFETY: as in `view`; the word's own reference, given back once as it goes.
                drop(unsafe { <Arc<[u8; 16]> as Owner>::from_raw(self.raw()) })
            }
            CompactForm::Text => {
                // SAFETY: as in `view`; the word's own reference, given back once as it goes.
                drop(unsafe { <ArcStr as Owner>::from_raw(self.raw()) })
            }
        }
    }
}

#[cfg(test)]
mod tests;
