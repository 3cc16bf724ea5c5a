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

pub(super) use super::packed::KEYED;
use super::packed::{FactsOwned as Owned, FactsView, FactsViewMut, FactsWord};
use super::{
    LlmFacts, LlmFactsRef, RequestedCalls, RequestedToolCall, RetrievalFacts, Span, TokenCount,
    ToolFacts, ToolFactsRef,
};

/// Out of line: most spans have none, and a span's fixed size is paid by every span. One word
/// ([`FactsWord`]): the box's pointer with which kind it holds in its low bits, where an enum of
/// four boxes took two; or, with no box, the keys of a tool call's facts ([`ToolKeys`]).
#[derive(Clone)]
pub struct KindFacts(Option<FactsWord>);

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

/// Bits of each key's number plus one (0 for none) in the word of [`ToolKeys`].
const KEY_BITS: u32 = 24;
const _: () = assert!(super::interner::MAX_ENTRIES < 1 << KEY_BITS);

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
        KindFacts(Some(FactsWord::new(owned)))
    }

    /// The slot for tool facts read from the attributes under `keys`; `None` where a word
    /// cannot hold them.
    fn by_keys(keys: ToolKeys) -> Option<KindFacts> {
        if !KEYED {
            return None;
        }
        let field = |key: Option<u32>| key.map_or(0, |key| key as usize + 1);
        let bits = field(keys.name) | field(keys.call_id) << KEY_BITS;
        Some(KindFacts::hold(Owned::ToolKeys(bits)))
    }

    /// The keys the word's bits say.
    fn keys(bits: usize) -> ToolKeys {
        let field = |shift: u32| match (bits >> shift) & ((1 << KEY_BITS) - 1) {
            0 => None,
            number => Some(number as u32 - 1),
        };
        ToolKeys {
            name: field(0),
            call_id: field(KEY_BITS),
        }
    }

    /// What it holds, borrowed.
    pub fn view(&self) -> Option<KindFactsView<'_>> {
        Some(match self.0.as_ref()?.view() {
            FactsView::Llm(facts) => KindFactsView::Llm(facts),
            FactsView::LlmKeyed(facts) => KindFactsView::LlmByKeys(facts),
            FactsView::Tool(facts) => KindFactsView::Tool(facts),
            FactsView::Retrieval(facts) => KindFactsView::Retrieval(facts),
            FactsView::Several(facts) => KindFactsView::Several(facts),
            FactsView::ToolKeys(bits) => KindFactsView::ToolByKeys(KindFacts::keys(bits)),
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
        let Some(word) = self.0.as_mut() else {
            return (None, None, None);
        };
        match word.view_mut() {
            FactsViewMut::Llm(llm) => (Some(llm), None, None),
            // Made an `LlmFacts` again first (`Span::unkey_facts`).
            FactsViewMut::LlmKeyed(_) | FactsViewMut::ToolKeys(_) => (None, None, None),
            FactsViewMut::Tool(tool) => (None, Some(tool), None),
            FactsViewMut::Retrieval(retrieval) => (None, None, Some(retrieval)),
            FactsViewMut::Several(several) => (
                several.llm.as_mut(),
                several.tool.as_mut(),
                several.retrieval.as_mut(),
            ),
        }
    }

    /// The box, given back (`None` for keys, which own nothing; the slot is emptied either way).
    fn take(&mut self) -> Option<Owned> {
        match self.0.take()?.into_owned() {
            Owned::ToolKeys(_) => None,
            owned => Some(owned),
        }
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
            None | Some(Owned::ToolKeys(_)) => (None, None, None),
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
        self.requested_calls().map_or(&[], |calls| calls)
    }

    /// The list of a model call's requested calls, read without its attributes (a model
    /// call's facts kept by their keys are not resolved).
    pub(in crate::model) fn requested_calls(&self) -> Option<&RequestedCalls> {
        match self.facts.view()? {
            KindFactsView::Llm(llm) => Some(&llm.requested_tool_calls),
            KindFactsView::Several(several) => {
                several.llm.as_ref().map(|llm| &llm.requested_tool_calls)
            }
            KindFactsView::LlmByKeys(keyed) => Some(&keyed.requested_tool_calls),
            _ => None,
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
