//! What a span's kind of work brings (a model call's, a tool call's, a retrieval's facts), in
//! one slot of the span: a span is one of these kinds of work, so it held two empty pointers
//! beside the one in use. A span with more than one (a rerank span names its model and counts
//! its documents) holds them together.
//!
//! A tool call's name and call id are most often two of the span's own attribute values: once
//! the span is packed, its slot then says which keys hold them ([`ToolKeys`]) and holds no
//! block at all, where a 16-byte box would take a 32-byte block of the allocator's on every
//! tool span. A model call's provider and model names are too: its block then holds their keys
//! in one word instead of three texts, and its finish reasons by the number of their list
//! ([`KeyedLlmFacts`]): 40 bytes, a 48-byte block, where 72 would take an 80-byte one.

use std::ptr::NonNull;

use super::{
    LlmFacts, LlmFactsRef, RequestedToolCall, RetrievalFacts, Span, TokenCount, ToolFacts,
    ToolFactsRef,
};

/// Out of line: most spans have none, and a span's fixed size is paid by every span. One word:
/// the box's pointer with which kind it holds in its low bits (every facts type is aligned past
/// them, so they are free), where an enum of four boxes took two; or, with no box, the keys of
/// a tool call's facts ([`ToolKeys`]).
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
    align_of::<LlmFacts>() > KIND_BITS
        && align_of::<KeyedLlmFacts>() > KIND_BITS
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
        let tagged = self.0?;
        let kind = tagged.addr().get() & KIND_BITS;
        if KEYED && kind == TOOL_KEYS {
            return None;
        }
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

    /// The model that answered (the response's, else the request's).
    pub fn model(&self) -> Option<&str> {
        if let KindFactsView::LlmByKeys(keyed) = self.facts.view()? {
            let [_, model, response_model] = keyed.name_keys();
            let [response_model, model] = self.attributes.texts_under_keys([response_model, model]);
            return response_model.or(model);
        }
        let llm = self.llm()?;
        llm.response_model.or(llm.model)
    }

    /// The tool calls a model call asked for, without reading its names.
    pub fn requested_tool_calls(&self) -> &[RequestedToolCall] {
        match self.facts.view() {
            Some(KindFactsView::Llm(llm)) => &llm.requested_tool_calls,
            Some(KindFactsView::Several(several)) => several
                .llm
                .as_ref()
                .map_or(&[], |llm| &*llm.requested_tool_calls),
            Some(KindFactsView::LlmByKeys(keyed)) => &keyed.requested_tool_calls,
            _ => &[],
        }
    }

    pub fn tool_name(&self) -> Option<&str> {
        match self.facts.view()? {
            KindFactsView::ToolByKeys(keys) => self.attributes.text_under_key(keys.name?),
            _ => self.tool()?.name,
        }
    }

    pub fn tool_call_id(&self) -> Option<&str> {
        match self.facts.view()? {
            KindFactsView::ToolByKeys(keys) => self.attributes.text_under_key(keys.call_id?),
            _ => self.tool()?.call_id,
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
                let [name, call_id] = self.attributes.texts_under_keys([keys.name, keys.call_id]);
                Some(ToolFactsRef { name, call_id })
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

    /// Sets (or with `None` clears) the retrieval's facts, keeping the others.
    pub fn set_retrieval(&mut self, retrieval: Option<Box<RetrievalFacts>>) {
        self.unkey_facts();
        let (llm, tool, _) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }
}

mod keyed;
pub use keyed::{KeyedLlmFacts, ToolKeys};

#[cfg(test)]
mod tests;
