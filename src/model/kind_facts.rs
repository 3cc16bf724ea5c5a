//! What a span's kind of work brings (a model call's, a tool call's, a retrieval's facts), in
//! one slot of the span: a span is one of these kinds of work, so it held two empty pointers
//! beside the one in use. A span with more than one (a rerank span names its model and counts
//! its documents) holds them together.

use std::ptr::NonNull;

use super::{LlmFacts, RetrievalFacts, Span, ToolFacts};

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
}

/// What a [`KindFacts`] holds, owned.
enum Owned {
    Llm(Box<LlmFacts>),
    Tool(Box<ToolFacts>),
    Retrieval(Box<RetrievalFacts>),
    Several(Box<SeveralFacts>),
}

const LLM: usize = 0;
const TOOL: usize = 1;
const RETRIEVAL: usize = 2;
const SEVERAL: usize = 3;
const KIND_BITS: usize = 0b11;
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
            Owned::Tool(facts) => tagged(facts, TOOL),
            Owned::Retrieval(facts) => tagged(facts, RETRIEVAL),
            Owned::Several(facts) => tagged(facts, SEVERAL),
        }))
    }

    /// The kind and the box's pointer, untagged.
    fn parts(&self) -> Option<(usize, NonNull<u8>)> {
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
        let (kind, pointer) = self.parts()?;
        // SAFETY: the pointer, untagged, is the live box `hold` leaked for this kind, owned by
        // this slot and borrowed for as long as it.
        Some(unsafe {
            match kind {
                LLM => KindFactsView::Llm(pointer.cast().as_ref()),
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

    fn take(&mut self) -> Option<Owned> {
        let (kind, pointer) = self.parts()?;
        self.0 = None;
        // SAFETY: the box `hold` leaked, given back once: the slot no longer holds it.
        Some(unsafe {
            match kind {
                LLM => Owned::Llm(Box::from_raw(pointer.cast().as_ptr())),
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
    pub fn llm(&self) -> Option<&LlmFacts> {
        match self.facts.view()? {
            KindFactsView::Llm(llm) => Some(llm),
            KindFactsView::Several(several) => several.llm.as_ref(),
            _ => None,
        }
    }

    pub fn tool(&self) -> Option<&ToolFacts> {
        match self.facts.view()? {
            KindFactsView::Tool(tool) => Some(tool),
            KindFactsView::Several(several) => several.tool.as_ref(),
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
        self.facts.parts_mut().0
    }

    pub fn tool_mut(&mut self) -> Option<&mut ToolFacts> {
        self.facts.parts_mut().1
    }

    pub fn retrieval_mut(&mut self) -> Option<&mut RetrievalFacts> {
        self.facts.parts_mut().2
    }

    /// Sets (or with `None` clears) the model call's facts, keeping the others.
    pub fn set_llm(&mut self, llm: Option<Box<LlmFacts>>) {
        let (_, tool, retrieval) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }

    /// Sets (or with `None` clears) the tool call's facts, keeping the others.
    pub fn set_tool(&mut self, tool: Option<Box<ToolFacts>>) {
        let (llm, _, retrieval) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }

    /// Sets (or with `None` clears) the retrieval's facts, keeping the others.
    pub fn set_retrieval(&mut self, retrieval: Option<Box<RetrievalFacts>>) {
        let (llm, tool, _) = std::mem::take(&mut self.facts).into_parts();
        self.facts = KindFacts::of(llm, tool, retrieval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_facts_reads_back_alone_or_beside_the_others() {
        let llm = || {
            Some(Box::new(LlmFacts {
                input_tokens: Some(3).into(),
                ..LlmFacts::default()
            }))
        };
        let retrieval = || {
            Some(Box::new(RetrievalFacts {
                document_count: Some(2),
                ..RetrievalFacts::default()
            }))
        };
        let mut span = Span::default();
        assert!(span.llm().is_none() && span.tool().is_none() && span.retrieval().is_none());
        span.set_llm(llm());
        assert!(matches!(span.facts.view(), Some(KindFactsView::Llm(_))));
        // A rerank span: model and documents together.
        span.set_retrieval(retrieval());
        assert!(matches!(span.facts.view(), Some(KindFactsView::Several(_))));
        assert_eq!(span.llm().and_then(|l| l.input_tokens.get()), Some(3));
        assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(2));
        span.retrieval_mut().unwrap().document_count = Some(5);
        assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(5));
        span.set_llm(None);
        assert!(matches!(
            span.facts.view(),
            Some(KindFactsView::Retrieval(_))
        ));
        assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(5));
        span.set_retrieval(None);
        assert_eq!(span.facts, KindFacts::NONE);
        assert!(span.facts.view().is_none());
        assert_eq!(size_of::<KindFacts>(), 8);
    }

    /// The one-word slot owns its box as a `Box` would: a copy is a box of its own, changing
    /// one leaves the other, and each lets its facts go once, on this thread or another.
    #[test]
    fn facts_in_their_one_word_slot_are_owned_once_and_let_go() {
        let name = crate::model::ArcStr::from("search_flights");
        let mut span = Span {
            facts: KindFacts::from(Box::new(ToolFacts {
                name: Some(name.clone()),
                ..ToolFacts::default()
            })),
            ..Span::default()
        };
        let mut copy = span.clone();
        assert_eq!(crate::model::ArcStr::strong_count(&name), Some(3));
        copy.tool_mut().unwrap().call_id = Some("call-1".into());
        assert_eq!(span.tool_call_id(), None);
        assert_eq!(copy.tool_call_id(), Some("call-1"));
        copy.set_llm(Some(Box::new(LlmFacts::default())));
        assert!(matches!(copy.facts.view(), Some(KindFactsView::Several(_))));
        assert_eq!(copy.tool_name(), Some("search_flights"));
        let elsewhere = std::thread::spawn(move || copy.tool_name().map(str::to_owned));
        assert_eq!(elsewhere.join().unwrap().as_deref(), Some("search_flights"));
        assert_eq!(crate::model::ArcStr::strong_count(&name), Some(2));
        span.set_tool(None);
        assert_eq!(crate::model::ArcStr::strong_count(&name), Some(1));
    }
}
