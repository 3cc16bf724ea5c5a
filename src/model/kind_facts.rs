//! What a span's kind of work brings (a model call's, a tool call's, a retrieval's facts), in
//! one slot of the span: a span is one of these kinds of work, so it held two empty pointers
//! beside the one in use. A span with more than one (a rerank span names its model and counts
//! its documents) holds them together.
//!
//! A tool call's name and call id are most often two of the span's own attribute values: once
//! the span is packed, its slot then says which keys hold them ([`ToolKeys`]) and holds no
//! block at all, where a 16-byte box took a 32-byte block of the allocator's on every tool span.
//! A model call's provider and model names are too: its block then holds their keys in one
//! word instead of three texts ([`KeyedLlmFacts`]), 56 bytes where 72 took an 80-byte block.

use std::ptr::NonNull;

use super::{
    ArcStr, AttrValue, Attributes, FinishReasons, LlmFacts, LlmFactsRef, RequestedCalls,
    RetrievalFacts, Span, TokenCount, ToolFacts, ToolFactsRef,
};

/// Out of line: most spans have none, and a span's fixed size is paid by every span. One word:
/// the box's pointer with which kind it holds in its two low bits (every facts type is at
/// least 4-aligned, so they are free), where an enum of four boxes took two.
pub struct KindFacts(Option<NonNull<u8>>);

/// What a [`KindFacts`] holds, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KindFactsView<'a> {
    Llm(&'a LlmFacts),
    Tool(&'a ToolFacts),
    Retrieval(&'a RetrievalFacts),
    Several(&'a SeveralFacts),
    /// A tool call's facts, read from the span's attributes.
    ToolByKeys(ToolKeys),
    /// A model call's facts, its names read from the span's attributes.
    LlmByKeys(&'a KeyedLlmFacts),
}

/// A model call's facts whose provider, model and response model are values of the span's
/// attributes: those keys' numbers in the shared table (plus one, 0 for a name the call does
/// not have), [`NAME_KEY_BITS`] bits each, in place of the three texts.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedLlmFacts {
    name_keys: u64,
    pub input_tokens: TokenCount,
    pub output_tokens: TokenCount,
    pub cache_read_tokens: TokenCount,
    pub finish_reasons: FinishReasons,
    pub requested_tool_calls: RequestedCalls,
}

const NAME_KEY_BITS: u32 = 21;
const _: () = assert!(super::shared_texts::MAX_ENTRIES < 1 << NAME_KEY_BITS);
const _: () = assert!(3 * NAME_KEY_BITS <= u64::BITS);
// What makes it worth holding: a block of the allocator's size class below `LlmFacts`'s.
const _: () = assert!(size_of::<KeyedLlmFacts>() <= 56 && size_of::<LlmFacts>() > 56);

impl KeyedLlmFacts {
    /// The keys of provider, model and response model, in that order.
    fn name_keys(&self) -> [Option<u32>; 3] {
        std::array::from_fn(|i| {
            match (self.name_keys >> (i as u32 * NAME_KEY_BITS)) & ((1 << NAME_KEY_BITS) - 1) {
                0 => None,
                number => Some(number as u32 - 1),
            }
        })
    }

    /// The facts read with `attributes` (the span's).
    fn read<'a>(&'a self, attributes: &'a Attributes) -> LlmFactsRef<'a> {
        let [provider, model, response_model] =
            self.name_keys().map(|key| attributes.text_under_key(key?));
        LlmFactsRef {
            provider,
            model,
            response_model,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            finish_reasons: &self.finish_reasons,
            requested_tool_calls: &self.requested_tool_calls,
        }
    }
}

/// Which attributes hold a tool call's name and call id: their keys' numbers in the shared
/// table (see [`Attributes::key_holding`](super::Attributes::key_holding)), `None` for a fact
/// the call does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolKeys {
    pub name: Option<u32>,
    pub call_id: Option<u32>,
}

/// What a [`KindFacts`] holds, owned.
enum Owned {
    Llm(Box<LlmFacts>),
    LlmKeyed(Box<KeyedLlmFacts>),
    Tool(Box<ToolFacts>),
    Retrieval(Box<RetrievalFacts>),
    Several(Box<SeveralFacts>),
}

const LLM: usize = 0;
const TOOL: usize = 1;
const RETRIEVAL: usize = 2;
const SEVERAL: usize = 3;
/// The slot for [`ToolKeys`], with no pointer: each key's number plus one (0 for none) in
/// [`KEY_BITS`] bits above the tag.
const TOOL_KEYS: usize = 4;
const LLM_KEYED: usize = 5;
/// The keyed forms are for 64-bit targets only, where every facts type is 8-aligned, so that a
/// box's address leaves three bits for the tag.
const KEYED: bool = usize::BITS >= 64;
const KIND_BITS: usize = if KEYED { 0b111 } else { 0b11 };
const KEY_BITS: u32 = 24;
const _: () = assert!(super::shared_texts::MAX_ENTRIES < 1 << KEY_BITS);
const _: () = assert!(
    !KEYED
        || (align_of::<LlmFacts>() > KIND_BITS
            && align_of::<KeyedLlmFacts>() > KIND_BITS
            && align_of::<ToolFacts>() > KIND_BITS
            && align_of::<RetrievalFacts>() > KIND_BITS
            && align_of::<SeveralFacts>() > KIND_BITS)
);
const _: () = assert!(
    align_of::<LlmFacts>() > KIND_BITS
        && align_of::<ToolFacts>() > KIND_BITS
        && align_of::<RetrievalFacts>() > KIND_BITS
        && align_of::<SeveralFacts>() > KIND_BITS
);

// SAFETY: it owns one box of facts, and facts may cross threads and be shared between them.
unsafe impl Send for KindFacts {}
unsafe impl Sync for KindFacts {}
const _: () = super::assert_send_sync::<LlmFacts>();
const _: () = super::assert_send_sync::<ToolFacts>();
const _: () = super::assert_send_sync::<RetrievalFacts>();
const _: () = super::assert_send_sync::<SeveralFacts>();

/// The facts of a span that has more than one kind.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeveralFacts {
    pub llm: Option<LlmFacts>,
    pub tool: Option<ToolFacts>,
    pub retrieval: Option<RetrievalFacts>,
}

impl KindFacts {
    /// No facts.
    pub const NONE: KindFacts = KindFacts(None);

    /// The slot holding what is given: nothing, one kind's facts, or several.
    pub fn of(
        llm: Option<Box<LlmFacts>>,
        tool: Option<Box<ToolFacts>>,
        retrieval: Option<Box<RetrievalFacts>>,
    ) -> KindFacts {
        let owned = match (llm, tool, retrieval) {
            (None, None, None) => return KindFacts::NONE,
            (Some(llm), None, None) => Owned::Llm(llm),
            (None, Some(tool), None) => Owned::Tool(tool),
            (None, None, Some(retrieval)) => Owned::Retrieval(retrieval),
            (llm, tool, retrieval) => Owned::Several(Box::new(SeveralFacts {
                llm: llm.map(|facts| *facts),
                tool: tool.map(|facts| *facts),
                retrieval: retrieval.map(|facts| *facts),
            })),
        };
        KindFacts::hold(owned)
    }

    fn hold(owned: Owned) -> KindFacts {
        fn tagged<T>(facts: Box<T>, kind: usize) -> NonNull<u8> {
            NonNull::from(Box::leak(facts))
                .cast::<u8>()
                .map_addr(|addr| addr | kind)
        }
        KindFacts(Some(match owned {
            Owned::Llm(facts) => tagged(facts, LLM),
            Owned::LlmKeyed(facts) => tagged(facts, LLM_KEYED),
            Owned::Tool(facts) => tagged(facts, TOOL),
            Owned::Retrieval(facts) => tagged(facts, RETRIEVAL),
            Owned::Several(facts) => tagged(facts, SEVERAL),
        }))
    }

    /// The slot for tool facts read from the attributes under `keys`; `None` where a word
    /// cannot hold them.
    fn by_keys(keys: ToolKeys) -> Option<KindFacts> {
        if !KEYED {
            return None;
        }
        let field = |key: Option<u32>| key.map_or(0, |key| key as usize + 1);
        let word = TOOL_KEYS | field(keys.name) << 3 | field(keys.call_id) << (3 + KEY_BITS);
        let word = std::num::NonZeroUsize::new(word).expect("the tag is set");
        Some(KindFacts(Some(NonNull::without_provenance(word))))
    }

    /// The keys, when the slot holds them rather than a box.
    fn keys(&self) -> Option<ToolKeys> {
        let word = self.0?.addr().get();
        if !KEYED || word & KIND_BITS != TOOL_KEYS {
            return None;
        }
        let field = |shift: u32| match (word >> shift) & ((1 << KEY_BITS) - 1) {
            0 => None,
            number => Some(number as u32 - 1),
        };
        Some(ToolKeys {
            name: field(3),
            call_id: field(3 + KEY_BITS),
        })
    }

    /// The kind and the box's pointer, untagged (`None` for keys: they point nowhere).
    fn parts(&self) -> Option<(usize, NonNull<u8>)> {
        if self.keys().is_some() {
            return None;
        }
        let tagged = self.0?;
        let kind = tagged.addr().get() & KIND_BITS;
        // The box's own address is aligned past the kind bits, so it is not null either.
        let pointer = tagged.map_addr(|addr| {
            std::num::NonZeroUsize::new(addr.get() & !KIND_BITS).expect("an aligned box address")
        });
        Some((kind, pointer))
    }

    /// What it holds, borrowed.
    pub fn view(&self) -> Option<KindFactsView<'_>> {
        if let Some(keys) = self.keys() {
            return Some(KindFactsView::ToolByKeys(keys));
        }
        let (kind, pointer) = self.parts()?;
        // SAFETY: the pointer, untagged, is the live box `hold` leaked for this kind, owned by
        // this slot and borrowed for as long as it.
        Some(unsafe {
            match kind {
                LLM => KindFactsView::Llm(pointer.cast().as_ref()),
                LLM_KEYED => KindFactsView::LlmByKeys(pointer.cast().as_ref()),
                TOOL => KindFactsView::Tool(pointer.cast().as_ref()),
                RETRIEVAL => KindFactsView::Retrieval(pointer.cast().as_ref()),
                _ => KindFactsView::Several(pointer.cast().as_ref()),
            }
        })
    }

    /// The model call's, tool call's and retrieval's facts, to change.
    fn parts_mut(
        &mut self,
    ) -> (
        Option<&mut LlmFacts>,
        Option<&mut ToolFacts>,
        Option<&mut RetrievalFacts>,
    ) {
        let Some((kind, pointer)) = self.parts() else {
            return (None, None, None);
        };
        // SAFETY: as in `view`, borrowed mutably for as long as the slot is.
        unsafe {
            match kind {
                LLM => (Some(pointer.cast().as_mut()), None, None),
                // Made an `LlmFacts` again first (`Span::unkey_facts`).
                LLM_KEYED => (None, None, None),
                TOOL => (None, Some(pointer.cast().as_mut()), None),
                RETRIEVAL => (None, None, Some(pointer.cast().as_mut())),
                _ => {
                    let several: &mut SeveralFacts = pointer.cast().as_mut();
                    (
                        several.llm.as_mut(),
                        several.tool.as_mut(),
                        several.retrieval.as_mut(),
                    )
                }
            }
        }
    }

    /// The box, given back (`None` for keys, which own nothing; the slot is emptied either way).
    fn take(&mut self) -> Option<Owned> {
        let Some((kind, pointer)) = self.parts() else {
            self.0 = None;
            return None;
        };
        self.0 = None;
        // SAFETY: the box `hold` leaked, given back once: the slot no longer holds it.
        Some(unsafe {
            match kind {
                LLM => Owned::Llm(Box::from_raw(pointer.cast().as_ptr())),
                LLM_KEYED => Owned::LlmKeyed(Box::from_raw(pointer.cast().as_ptr())),
                TOOL => Owned::Tool(Box::from_raw(pointer.cast().as_ptr())),
                RETRIEVAL => Owned::Retrieval(Box::from_raw(pointer.cast().as_ptr())),
                _ => Owned::Several(Box::from_raw(pointer.cast().as_ptr())),
            }
        })
    }

    /// Bytes of its one block (0 when it holds none).
    pub fn block_bytes(&self) -> usize {
        match self.view() {
            None => 0,
            Some(KindFactsView::Llm(_)) => size_of::<LlmFacts>(),
            Some(KindFactsView::Tool(_)) => size_of::<ToolFacts>(),
            Some(KindFactsView::Retrieval(_)) => size_of::<RetrievalFacts>(),
            Some(KindFactsView::Several(_)) => size_of::<SeveralFacts>(),
            Some(KindFactsView::ToolByKeys(_)) => 0,
            Some(KindFactsView::LlmByKeys(_)) => size_of::<KeyedLlmFacts>(),
        }
    }

    /// Taken apart, to change one kind's facts and put them back with [`KindFacts::of`].
    #[allow(clippy::type_complexity)]
    fn into_parts(
        mut self,
    ) -> (
        Option<Box<LlmFacts>>,
        Option<Box<ToolFacts>>,
        Option<Box<RetrievalFacts>>,
    ) {
        match self.take() {
            None => (None, None, None),
            Some(Owned::Llm(llm)) => (Some(llm), None, None),
            // `Span::unkey_facts` makes keyed facts whole before any taking apart.
            Some(Owned::LlmKeyed(_)) => {
                debug_assert!(false, "keyed facts taken apart");
                (None, None, None)
            }
            Some(Owned::Tool(tool)) => (None, Some(tool), None),
            Some(Owned::Retrieval(retrieval)) => (None, None, Some(retrieval)),
            Some(Owned::Several(several)) => {
                let SeveralFacts {
                    llm,
                    tool,
                    retrieval,
                } = *several;
                (
                    llm.map(Box::new),
                    tool.map(Box::new),
                    retrieval.map(Box::new),
                )
            }
        }
    }
}

impl From<Box<LlmFacts>> for KindFacts {
    fn from(facts: Box<LlmFacts>) -> Self {
        KindFacts::hold(Owned::Llm(facts))
    }
}

impl From<Box<ToolFacts>> for KindFacts {
    fn from(facts: Box<ToolFacts>) -> Self {
        KindFacts::hold(Owned::Tool(facts))
    }
}

impl From<Box<RetrievalFacts>> for KindFacts {
    fn from(facts: Box<RetrievalFacts>) -> Self {
        KindFacts::hold(Owned::Retrieval(facts))
    }
}

impl Default for KindFacts {
    fn default() -> Self {
        KindFacts::NONE
    }
}

impl Drop for KindFacts {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl Clone for KindFacts {
    fn clone(&self) -> Self {
        match self.view() {
            None => KindFacts::NONE,
            Some(KindFactsView::Llm(f)) => KindFacts::hold(Owned::Llm(Box::new(f.clone()))),
            Some(KindFactsView::Tool(f)) => KindFacts::hold(Owned::Tool(Box::new(f.clone()))),
            Some(KindFactsView::Retrieval(f)) => {
                KindFacts::hold(Owned::Retrieval(Box::new(f.clone())))
            }
            Some(KindFactsView::Several(f)) => KindFacts::hold(Owned::Several(Box::new(f.clone()))),
            Some(KindFactsView::ToolByKeys(_)) => KindFacts(self.0),
            Some(KindFactsView::LlmByKeys(f)) => {
                KindFacts::hold(Owned::LlmKeyed(Box::new(f.clone())))
            }
        }
    }
}

impl PartialEq for KindFacts {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl std::fmt::Debug for KindFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.view() {
            None => f.write_str("None"),
            Some(view) => view.fmt(f),
        }
    }
}

impl Span {
    /// The model call's facts: from their own block, the names read from the attributes
    /// they were taken from when the block holds their keys.
    pub fn llm(&self) -> Option<LlmFactsRef<'_>> {
        match self.facts.view()? {
            KindFactsView::Llm(llm) => Some(LlmFactsRef::of(llm)),
            KindFactsView::Several(several) => several.llm.as_ref().map(LlmFactsRef::of),
            KindFactsView::LlmByKeys(keyed) => Some(keyed.read(&self.attributes)),
            _ => None,
        }
    }

    /// A model call's input and output token counts, without reading its names: what roll-ups
    /// of every span want.
    pub fn llm_tokens(&self) -> Option<(TokenCount, TokenCount)> {
        match self.facts.view()? {
            KindFactsView::Llm(llm) => Some((llm.input_tokens, llm.output_tokens)),
            KindFactsView::Several(several) => several
                .llm
                .as_ref()
                .map(|llm| (llm.input_tokens, llm.output_tokens)),
            KindFactsView::LlmByKeys(keyed) => Some((keyed.input_tokens, keyed.output_tokens)),
            _ => None,
        }
    }

    /// The tool call's name and call id: from the facts' own block, or read from the
    /// attributes they were taken from.
    pub fn tool(&self) -> Option<ToolFactsRef<'_>> {
        match self.facts.view()? {
            KindFactsView::Tool(tool) => Some(ToolFactsRef::of(tool)),
            KindFactsView::Several(several) => several.tool.as_ref().map(ToolFactsRef::of),
            KindFactsView::ToolByKeys(keys) => {
                let text = |key: Option<u32>| self.attributes.text_under_key(key?);
                Some(ToolFactsRef {
                    name: text(keys.name),
                    call_id: text(keys.call_id),
                })
            }
            _ => None,
        }
    }

    pub fn retrieval(&self) -> Option<&RetrievalFacts> {
        match self.facts.view()? {
            KindFactsView::Retrieval(retrieval) => Some(retrieval),
            KindFactsView::Several(several) => several.retrieval.as_ref(),
            _ => None,
        }
    }

    pub fn llm_mut(&mut self) -> Option<&mut LlmFacts> {
        self.unkey_facts();
        self.facts.parts_mut().0
    }

    pub fn tool_mut(&mut self) -> Option<&mut ToolFacts> {
        self.unkey_facts();
        self.facts.parts_mut().1
    }

    pub fn retrieval_mut(&mut self) -> Option<&mut RetrievalFacts> {
        self.facts.parts_mut().2
    }

    /// Sets (or with `None` clears) the model call's facts, keeping the others.
    pub fn set_llm(&mut self, llm: Option<Box<LlmFacts>>) {
        self.unkey_facts();
        let (_, tool, retrieval) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }

    /// Sets (or with `None` clears) the tool call's facts, keeping the others.
    pub fn set_tool(&mut self, tool: Option<Box<ToolFacts>>) {
        self.unkey_facts();
        let (llm, _, retrieval) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }

    /// Once packed: facts that are values of the attributes are read from there instead of
    /// held (see [`ToolKeys`] and [`KeyedLlmFacts`]).
    pub(super) fn key_facts(&mut self) {
        let key_of = |text: &Option<ArcStr>| match text {
            None => Some(None),
            Some(text) => self.attributes.key_holding(text).map(Some),
        };
        match self.facts.view() {
            Some(KindFactsView::Tool(tool)) => {
                let (Some(name), Some(call_id)) = (key_of(&tool.name), key_of(&tool.call_id))
                else {
                    return;
                };
                if let Some(keyed) = KindFacts::by_keys(ToolKeys { name, call_id }) {
                    self.facts = keyed;
                }
            }
            Some(KindFactsView::Llm(llm)) if KEYED => {
                let (Some(provider), Some(model), Some(response_model)) = (
                    key_of(&llm.provider),
                    key_of(&llm.model),
                    key_of(&llm.response_model),
                ) else {
                    return;
                };
                let Some(Owned::Llm(llm)) = self.facts.take() else {
                    unreachable!("viewed as a model call's facts above");
                };
                let LlmFacts {
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                    ..
                } = *llm;
                let field = |key: Option<u32>| key.map_or(0, |key| u64::from(key) + 1);
                self.facts = KindFacts::hold(Owned::LlmKeyed(Box::new(KeyedLlmFacts {
                    name_keys: field(provider)
                        | field(model) << NAME_KEY_BITS
                        | field(response_model) << (2 * NAME_KEY_BITS),
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                })));
            }
            _ => {}
        }
    }

    /// Facts read from the attributes, held whole again: to change them, or the span's other
    /// facts.
    fn unkey_facts(&mut self) {
        let shared = |attributes: &Attributes, key: Option<u32>| match attributes
            .value_under_key(key?)?
            .held()?
        {
            AttrValue::Str(text) => Some(text.clone()),
            _ => None,
        };
        match self.facts.view() {
            Some(KindFactsView::ToolByKeys(keys)) => {
                self.facts = KindFacts::from(Box::new(ToolFacts {
                    name: shared(&self.attributes, keys.name),
                    call_id: shared(&self.attributes, keys.call_id),
                }));
            }
            Some(KindFactsView::LlmByKeys(keyed)) => {
                let [provider, model, response_model] =
                    keyed.name_keys().map(|key| shared(&self.attributes, key));
                let Some(Owned::LlmKeyed(keyed)) = self.facts.take() else {
                    unreachable!("viewed as keyed facts above");
                };
                let KeyedLlmFacts {
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                    ..
                } = *keyed;
                self.facts = KindFacts::from(Box::new(LlmFacts {
                    provider,
                    model,
                    response_model,
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                }));
            }
            _ => {}
        }
    }

    /// Sets (or with `None` clears) the retrieval's facts, keeping the others.
    pub fn set_retrieval(&mut self, retrieval: Option<Box<RetrievalFacts>>) {
        self.unkey_facts();
        let (llm, tool, _) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }
}

#[cfg(test)]
mod tests;
