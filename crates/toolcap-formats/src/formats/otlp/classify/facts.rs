//! The facts classify reads from a span's attributes: its error, identity, tool, LLM call and
//! retrieval, each from whichever convention records it.

use super::{AttrSource, Attrs, tool_calls};
use crate::model::interner;
use crate::model::{
    ArcStr, AttrValue, ErrorInfo, Identity, LlmFacts, NodeIdentity, PayloadBody, RetrievalFacts,
    Span, SpanKind, SpanStatus, ToolFacts,
};

/// Langfuse's metadata keys the classifier reads, spelled out: building them per span would
/// cost an allocation each.
const LF_ERROR_TYPE: &str = "langfuse.observation.metadata.error_type";
const LF_ERROR_MESSAGE: &str = "langfuse.observation.metadata.error_message";
const LF_NAMESPACE: &str = "langfuse.observation.metadata.namespace";

pub(super) fn error_of(
    span: &Span,
    attrs: &Attrs,
    status: SpanStatus,
    status_message: Option<&str>,
) -> Option<ErrorInfo> {
    let exception = span.events().iter().find(|e| e.name == "exception");
    // The event's own text, shared rather than copied: an exception's message is often long.
    let event_text = |key: &str| {
        let value = exception?.attributes.iter().find(|(k, _)| *k == key)?.1;
        let text = match value.held() {
            Some(AttrValue::Payload(payload)) => match &payload.body {
                PayloadBody::Inline(text) => text.clone(),
                _ => return None,
            },
            _ => value.shared_text()?,
        };
        (!text.is_empty()).then_some(text)
    };
    let error_type = attrs
        .shared_str("error.type")
        .or_else(|| event_text("exception.type"))
        .or_else(|| attrs.shared_str(LF_ERROR_TYPE))
        .or_else(|| attrs.shared_str("openarmature.error.category"));
    if status != SpanStatus::Error && error_type.is_none() {
        return None;
    }
    let message = event_text("exception.message")
        .or_else(|| attrs.shared_str(LF_ERROR_MESSAGE))
        .or_else(|| status_message.map(ArcStr::from))
        .or_else(|| attrs.shared_str("langfuse.observation.status_message"));
    Some(ErrorInfo {
        error_type,
        message,
        ..Default::default()
    })
}

pub(super) fn identity_of(attrs: &Attrs) -> Identity {
    let namespace = match attrs.strings("openarmature.node.namespace") {
        parts if !parts.is_empty() => Some(interner::value(&parts.join("/"))),
        _ => match attrs.strings(LF_NAMESPACE) {
            parts if !parts.is_empty() => Some(interner::value(&parts.join("/"))),
            _ => None,
        },
    };
    let index = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| attrs.int(k))
            .and_then(|i| u32::try_from(i).ok())
    };
    Identity {
        invocation_id: attrs.first_shared_str(&[
            "openarmature.invocation_id",
            "gen_ai.conversation.id",
            "session.id",
            "langfuse.session.id",
        ]),
        correlation_id: attrs.first_shared_str(&[
            "openarmature.correlation_id",
            "langfuse.observation.metadata.correlation_id",
            "langfuse.trace.metadata.correlation_id",
        ]),
        node: NodeIdentity {
            node_name: attrs.shared_str("openarmature.node.name"),
            namespace,
            attempt_index: index(&[
                "openarmature.llm.attempt_index",
                "openarmature.node.attempt_index",
                "langfuse.observation.metadata.attempt_index",
            ]),
            fan_out_index: index(&["openarmature.node.fan_out_index"]),
            branch_name: attrs.shared_str("openarmature.node.branch_name"),
        }
        .into(),
    }
}

pub(super) fn tool_of(span_name: &str, attrs: &Attrs) -> ToolFacts {
    // The attribute's own shared text: the run's summary and every view clone it for free.
    let name = attrs
        .first_shared_str(&[
            "openarmature.tool.name",
            "gen_ai.tool.name",
            "tool.name",
            "langfuse.observation.metadata.openarmature_tool_name",
        ])
        .unwrap_or_else(|| {
            span_name
                .strip_prefix("execute_tool ")
                .unwrap_or(span_name)
                .into()
        });
    let call_id = attrs.first_shared_str(&[
        "openarmature.tool.call.id",
        "gen_ai.tool.call.id",
        "tool_call.id",
        "tool.id",
        "langfuse.observation.metadata.openarmature_tool_call_id",
        "langfuse.observation.metadata.tool_call_id",
    ]);
    ToolFacts {
        name: Some(name),
        call_id,
    }
}

pub(super) fn llm_of(kind: SpanKind, attrs: &Attrs, source: &dyn AttrSource) -> LlmFacts {
    let usage: Option<serde_json::Map<String, serde_json::Value>> = attrs
        .str("langfuse.observation.usage_details")
        .and_then(|u| serde_json::from_str(u).ok());
    let usage_u64 = |keys: &[&str]| {
        let usage = usage.as_ref()?;
        keys.iter().find_map(|k| usage.get(*k)?.as_u64())
    };
    let mut finish_reasons: crate::model::FinishReasons = attrs
        .strings("gen_ai.response.finish_reasons")
        .iter()
        .map(|reason| interner::value(reason))
        .collect();
    if finish_reasons.is_empty() {
        finish_reasons = [
            "openarmature.llm.finish_reason",
            "llm.finish_reason",
            "langfuse.observation.metadata.finish_reason",
        ]
        .iter()
        .find_map(|k| attrs.shared_str(k))
        .into_iter()
        .collect();
    }
    LlmFacts {
        provider: attrs.first_shared_str(&[
            "gen_ai.provider.name",
            "gen_ai.system",
            "llm.provider",
            "llm.system",
            "langfuse.observation.metadata.system",
        ]),
        model: attrs.first_shared_str(&[
            "gen_ai.request.model",
            "openarmature.llm.model",
            "llm.model_name",
            "embedding.model_name",
            "reranker.model_name",
            "langfuse.observation.model.name",
        ]),
        response_model: attrs.first_shared_str(&[
            "gen_ai.response.model",
            "langfuse.observation.metadata.response_model",
        ]),
        input_tokens: attrs
            .first_u64(&[
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.prompt_tokens",
                "openarmature.llm.usage.prompt_tokens",
                "llm.token_count.prompt",
            ])
            .or_else(|| usage_u64(&["input", "prompt_tokens", "input_tokens"]))
            .map(crate::model::token_count)
            .into(),
        output_tokens: attrs
            .first_u64(&[
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
                "openarmature.llm.usage.completion_tokens",
                "llm.token_count.completion",
            ])
            .or_else(|| usage_u64(&["output", "completion_tokens", "output_tokens"]))
            .map(crate::model::token_count)
            .into(),
        cache_read_tokens: attrs
            .first_u64(&[
                "gen_ai.usage.cache_read.input_tokens",
                "openarmature.llm.cache_read.input_tokens",
                "llm.token_count.prompt_details.cache_read",
            ])
            .or_else(|| usage_u64(&["cache_read_input_tokens", "input_cached_tokens"]))
            .map(crate::model::token_count)
            .into(),
        finish_reasons,
        requested_tool_calls: if kind == SpanKind::Llm {
            tool_calls::requested_tool_calls(attrs, source)
        } else {
            Default::default()
        },
    }
}

/// Queries are for display; keep the first KiB.
const QUERY_MAX: usize = 1024;

pub(super) fn retrieval_of(attrs: &Attrs, source: &dyn AttrSource) -> RetrievalFacts {
    let query = [
        "gen_ai.retrieval.query.text",
        "openarmature.rerank.query",
        "reranker.query",
    ]
    .iter()
    .filter(|k| attrs.has(k))
    .find_map(|k| {
        // The attribute's own text when it is short enough: shared, not copied.
        if let Some(text) = attrs.shared_str(k).filter(|text| text.len() <= QUERY_MAX) {
            return Some(text);
        }
        let q = source.full_text(k)?;
        let mut end = q.len().min(QUERY_MAX);
        while !q.is_char_boundary(end) {
            end -= 1;
        }
        Some(ArcStr::from(&q[..end]))
    });
    let document_count = attrs
        .first_u64(&[
            "openarmature.rerank.document_count",
            "langfuse.observation.metadata.openarmature_document_count",
        ])
        .or_else(|| {
            let docs = source.full_text("gen_ai.retrieval.documents")?;
            let docs: Vec<serde::de::IgnoredAny> = serde_json::from_str(&docs).ok()?;
            Some(docs.len() as u64)
        })
        .or_else(|| {
            indexed_count(attrs, "retrieval.documents.")
                .or_else(|| indexed_count(attrs, "reranker.input_documents."))
        });
    RetrievalFacts {
        query,
        document_count,
    }
}

/// Number of distinct `N` in flattened keys `PREFIXN.…`.
fn indexed_count(attrs: &Attrs, prefix: &str) -> Option<u64> {
    let mut seen: Vec<u64> = attrs
        .first_entries()
        .filter_map(|(k, _)| k.strip_prefix(prefix)?.split('.').next()?.parse().ok())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    (!seen.is_empty()).then_some(seen.len() as u64)
}
