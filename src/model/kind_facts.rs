//! What a span's kind of work brings (a model call's, a tool call's, a retrieval's facts), in
//! one slot of the span: a span is one of these kinds of work, so it held two empty pointers
//! beside the one in use. A span with more than one (a rerank span names its model and counts
//! its documents) holds them together.

use super::{LlmFacts, RetrievalFacts, Span, ToolFacts};

/// Out of line: most spans have none, and a span's fixed size is paid by every span.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum KindFacts {
    #[default]
    None,
    Llm(Box<LlmFacts>),
    Tool(Box<ToolFacts>),
    Retrieval(Box<RetrievalFacts>),
    Several(Box<SeveralFacts>),
}

/// The facts of a span that has more than one kind.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeveralFacts {
    pub llm: Option<LlmFacts>,
    pub tool: Option<ToolFacts>,
    pub retrieval: Option<RetrievalFacts>,
}

impl KindFacts {
    /// The slot holding what is given: nothing, one kind's facts, or several.
    pub fn of(
        llm: Option<Box<LlmFacts>>,
        tool: Option<Box<ToolFacts>>,
        retrieval: Option<Box<RetrievalFacts>>,
    ) -> KindFacts {
        match (llm, tool, retrieval) {
            (None, None, None) => KindFacts::None,
            (Some(llm), None, None) => KindFacts::Llm(llm),
            (None, Some(tool), None) => KindFacts::Tool(tool),
            (None, None, Some(retrieval)) => KindFacts::Retrieval(retrieval),
            (llm, tool, retrieval) => KindFacts::Several(Box::new(SeveralFacts {
                llm: llm.map(|facts| *facts),
                tool: tool.map(|facts| *facts),
                retrieval: retrieval.map(|facts| *facts),
            })),
        }
    }

    /// Taken apart, to change one kind's facts and put them back with [`KindFacts::of`].
    #[allow(clippy::type_complexity)]
    fn into_parts(
        self,
    ) -> (
        Option<Box<LlmFacts>>,
        Option<Box<ToolFacts>>,
        Option<Box<RetrievalFacts>>,
    ) {
        match self {
            KindFacts::None => (None, None, None),
            KindFacts::Llm(llm) => (Some(llm), None, None),
            KindFacts::Tool(tool) => (None, Some(tool), None),
            KindFacts::Retrieval(retrieval) => (None, None, Some(retrieval)),
            KindFacts::Several(several) => {
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

impl Span {
    pub fn llm(&self) -> Option<&LlmFacts> {
        match &self.facts {
            KindFacts::Llm(llm) => Some(llm),
            KindFacts::Several(several) => several.llm.as_ref(),
            _ => None,
        }
    }

    pub fn tool(&self) -> Option<&ToolFacts> {
        match &self.facts {
            KindFacts::Tool(tool) => Some(tool),
            KindFacts::Several(several) => several.tool.as_ref(),
            _ => None,
        }
    }

    pub fn retrieval(&self) -> Option<&RetrievalFacts> {
        match &self.facts {
            KindFacts::Retrieval(retrieval) => Some(retrieval),
            KindFacts::Several(several) => several.retrieval.as_ref(),
            _ => None,
        }
    }

    pub fn llm_mut(&mut self) -> Option<&mut LlmFacts> {
        match &mut self.facts {
            KindFacts::Llm(llm) => Some(llm),
            KindFacts::Several(several) => several.llm.as_mut(),
            _ => None,
        }
    }

    pub fn tool_mut(&mut self) -> Option<&mut ToolFacts> {
        match &mut self.facts {
            KindFacts::Tool(tool) => Some(tool),
            KindFacts::Several(several) => several.tool.as_mut(),
            _ => None,
        }
    }

    pub fn retrieval_mut(&mut self) -> Option<&mut RetrievalFacts> {
        match &mut self.facts {
            KindFacts::Retrieval(retrieval) => Some(retrieval),
            KindFacts::Several(several) => several.retrieval.as_mut(),
            _ => None,
        }
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
                input_tokens: Some(3),
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
        assert!(matches!(span.facts, KindFacts::Llm(_)));
        // A rerank span: model and documents together.
        span.set_retrieval(retrieval());
        assert!(matches!(span.facts, KindFacts::Several(_)));
        assert_eq!(span.llm().and_then(|l| l.input_tokens), Some(3));
        assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(2));
        span.retrieval_mut().unwrap().document_count = Some(5);
        assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(5));
        span.set_llm(None);
        assert!(matches!(span.facts, KindFacts::Retrieval(_)));
        assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(5));
        span.set_retrieval(None);
        assert_eq!(span.facts, KindFacts::None);
        assert_eq!(size_of::<KindFacts>(), 16);
    }
}
