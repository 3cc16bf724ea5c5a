//! What a span's kind of work brings: a model call's facts, a tool call's, a retrieval's, as
//! parsers set them, and as readers see them once the span is packed ([`LlmFactsRef`],
//! [`ToolFactsRef`]: some of them are then read from the span's attributes, see `kind_facts`).

use super::{ArcStr, FinishReasons, RequestedCalls, TokenCount};

/// A tool call an LLM asked for (available even with payload capture off). Shared texts: a
/// tool's name repeats on call after call, and both are a word each in the span's facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestedToolCall {
    pub id: Option<ArcStr>,
    pub name: ArcStr,
}

/// Provider and model names are shared texts: they repeat on every call, and a parser hands out
/// the attribute value's own allocation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LlmFacts {
    pub provider: Option<ArcStr>,
    pub model: Option<ArcStr>,
    pub response_model: Option<ArcStr>,
    pub input_tokens: TokenCount,
    pub output_tokens: TokenCount,
    pub cache_read_tokens: TokenCount,
    /// Shared: the same few reasons (`stop`, `tool_calls`) repeat on call after call.
    pub finish_reasons: FinishReasons,
    pub requested_tool_calls: RequestedCalls,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolFacts {
    /// Shared with the attribute it came from, and with the run's summary.
    pub name: Option<ArcStr>,
    pub call_id: Option<ArcStr>,
}

/// A span's model-call facts as read ([`Span::llm`](super::Span::llm)): from their own block,
/// or with the names read from the attributes they were taken from once the span was packed
/// (see `kind_facts::KeyedLlmFacts`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlmFactsRef<'a> {
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
    pub response_model: Option<&'a str>,
    pub input_tokens: TokenCount,
    pub output_tokens: TokenCount,
    pub cache_read_tokens: TokenCount,
    pub finish_reasons: &'a FinishReasons,
    pub requested_tool_calls: &'a RequestedCalls,
}

impl<'a> LlmFactsRef<'a> {
    pub fn of(facts: &'a LlmFacts) -> LlmFactsRef<'a> {
        LlmFactsRef {
            provider: facts.provider.as_deref(),
            model: facts.model.as_deref(),
            response_model: facts.response_model.as_deref(),
            input_tokens: facts.input_tokens,
            output_tokens: facts.output_tokens,
            cache_read_tokens: facts.cache_read_tokens,
            finish_reasons: &facts.finish_reasons,
            requested_tool_calls: &facts.requested_tool_calls,
        }
    }
}

/// A span's tool facts as read ([`Span::tool`](super::Span::tool)): from their own block, or
/// from the attributes they were taken from once the span was packed (see
/// `kind_facts::ToolKeys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolFactsRef<'a> {
    pub name: Option<&'a str>,
    pub call_id: Option<&'a str>,
}

impl<'a> ToolFactsRef<'a> {
    pub fn of(facts: &'a ToolFacts) -> ToolFactsRef<'a> {
        ToolFactsRef {
            name: facts.name.as_deref(),
            call_id: facts.call_id.as_deref(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RetrievalFacts {
    pub query: Option<ArcStr>,
    pub document_count: Option<u64>,
}
