//! Classification and fact extraction from span attributes, for every attribute convention
//! (OpenArmature, OTel GenAI current and legacy, OpenInference, Langfuse). See ARCHITECTURE.md.
//!
//! Works on a [`Span`] whose `attributes` are already converted; an [`AttrSource`] supplies the
//! full text of attributes that were moved into payloads (needed to read tool calls out of
//! message JSON) and builds payloads for `span.input` / `span.output`.

use foldhash::HashMap;
use std::borrow::Cow;

mod tool_calls;

use crate::formats::common::intern;
use crate::model::{
    AttrValue, ErrorInfo, Identity, LlmFacts, Payload, RetrievalFacts, Span, SpanKind, SpanStatus,
    ToolFacts,
};

/// Access to attribute values beyond what the skeleton keeps.
pub trait AttrSource {
    /// The full text of a string attribute, even when the span holds it as a payload.
    fn full_text(&self, key: &str) -> Option<Cow<'_, str>>;
    /// A payload for the attribute, by reference where the format can find it again.
    /// `decoded` is the attribute's text when the caller holds it already.
    fn payload(&self, key: &str, decoded: Option<&str>) -> Option<Payload>;
}

/// Payload attributes for `span.input`, most specific first.
const INPUT_KEYS: &[&str] = &[
    "openarmature.tool.call.arguments",
    "openarmature.llm.input.messages",
    "openarmature.embedding.input.strings",
    "openarmature.rerank.query",
    "gen_ai.tool.call.arguments",
    "gen_ai.input.messages",
    "gen_ai.retrieval.query.text",
    "gen_ai.prompt",
    "input.value",
    "langfuse.observation.input",
];

/// Payload attributes for `span.output`, most specific first.
const OUTPUT_KEYS: &[&str] = &[
    "openarmature.tool.call.result",
    "openarmature.llm.output.content",
    "openarmature.llm.output.tool_calls",
    "openarmature.rerank.results",
    "gen_ai.tool.call.result",
    "gen_ai.output.messages",
    "gen_ai.retrieval.documents",
    "gen_ai.completion",
    "output.value",
    "langfuse.observation.output",
];

/// Whether the attribute is one a span's input or output payload is taken from: its value is
/// content only a revealed view or search reads (facts come from it through [`AttrSource`]).
pub fn is_payload_source(key: &str) -> bool {
    INPUT_KEYS.contains(&key) || OUTPUT_KEYS.contains(&key)
}

const LF_META: &str = "langfuse.observation.metadata.";

/// Attribute lookup by key (spans carry tens of attributes; the classifier asks ~80 times).
struct Attrs<'s> {
    map: HashMap<&'s str, &'s AttrValue>,
    /// Which key families (see [`family`]) occur, so most absent keys are refused unhashed.
    families: u32,
}

/// A bit per attribute namespace, from the key's first dotted segment.
fn family(key: &str) -> u32 {
    // This runs for every lookup, ~80 per span: the first byte picks the few namespaces to
    // compare, instead of scanning the key for its first dot.
    let is = |segment: &str| {
        key.starts_with(segment) && key.as_bytes().get(segment.len()).is_none_or(|&b| b == b'.')
    };
    let found = match key.as_bytes().first() {
        Some(b'o') if is("openarmature") => 1,
        Some(b'g') if is("gen_ai") => 1 << 1,
        Some(b'l') if is("llm") => 1 << 2,
        Some(b'l') if is("langfuse") => 1 << 3,
        Some(b'o') if is("openinference") => 1 << 4,
        Some(b't') if is("tool") || is("tool_call") => 1 << 5,
        Some(b'i') if is("input") => 1 << 6,
        Some(b'o') if is("output") => 1 << 6,
        Some(b'e') if is("embedding") => 1 << 7,
        Some(b'r') if is("reranker") || is("retrieval") => 1 << 7,
        Some(b's') if is("session") => 1 << 8,
        Some(b'e') if is("error") => 1 << 8,
        _ => 0,
    };
    if found == 0 { 1 << 31 } else { found }
}

impl<'s> Attrs<'s> {
    fn new(attributes: &'s [(crate::model::ArcStr, AttrValue)]) -> Self {
        let mut map = HashMap::with_capacity_and_hasher(attributes.len(), Default::default());
        let mut families = 0;
        for (k, v) in attributes {
            families |= family(k);
            // First occurrence wins, as with a linear search.
            map.entry(&**k).or_insert(v);
        }
        Attrs { map, families }
    }
    fn get(&self, key: &str) -> Option<&'s AttrValue> {
        if self.families & family(key) == 0 {
            return None;
        }
        self.map.get(key).copied()
    }
    fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    fn str(&self, key: &str) -> Option<&'s str> {
        match self.get(key)? {
            AttrValue::Str(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }
    fn first_shared_str(&self, keys: &[&str]) -> Option<crate::model::ArcStr> {
        keys.iter().find_map(|k| self.shared_str(k))
    }
    /// The value's own shared allocation, for facts that keep it.
    fn shared_str(&self, key: &str) -> Option<crate::model::ArcStr> {
        match self.get(key)? {
            AttrValue::Str(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        }
    }
    fn int(&self, key: &str) -> Option<i64> {
        self.get(key)?.as_i64()
    }
    fn first_u64(&self, keys: &[&str]) -> Option<u64> {
        keys.iter()
            .find_map(|k| self.int(k))
            .and_then(|i| u64::try_from(i).ok())
    }
    fn strings(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(AttrValue::List(items)) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
            Some(AttrValue::Str(s)) if s.starts_with('[') => {
                serde_json::from_str::<Vec<String>>(s).unwrap_or_default()
            }
            Some(AttrValue::Str(s)) if !s.is_empty() => vec![s.to_string()],
            _ => Vec::new(),
        }
    }
}

/// The kind of a span, first match wins: OpenArmature span names, `gen_ai.operation.name`,
/// `openinference.span.kind`, `langfuse.observation.type`.
fn kind_of(name: &str, attrs: &Attrs) -> SpanKind {
    match name {
        "openarmature.llm.complete" => return SpanKind::Llm,
        "openarmature.tool.call" => return SpanKind::Tool,
        "openarmature.embedding.complete" => return SpanKind::Embedding,
        "openarmature.rerank.complete" => return SpanKind::Rerank,
        _ => {}
    }
    // A parallel-branches dispatch span is a node too, though it carries only the branch name.
    if attrs.has("openarmature.node.name")
        || attrs.has("openarmature.parallel_branches.parent_node_name")
    {
        return SpanKind::Node;
    }
    if let Some(op) = attrs.str("gen_ai.operation.name") {
        let kind = match op {
            "chat" | "text_completion" | "generate_content" => Some(SpanKind::Llm),
            "execute_tool" => Some(SpanKind::Tool),
            "embeddings" => Some(SpanKind::Embedding),
            "retrieval" => Some(SpanKind::Retrieval),
            "invoke_agent" | "create_agent" => Some(SpanKind::Agent),
            "invoke_workflow" => Some(SpanKind::Node),
            _ => None,
        };
        if let Some(kind) = kind {
            return kind;
        }
    }
    // An MCP client span for a tool call (OTel MCP conventions) is the tool call itself.
    if attrs.str("mcp.method.name") == Some("tools/call") && attrs.has("gen_ai.tool.name") {
        return SpanKind::Tool;
    }
    if let Some(kind) = attrs.str("openinference.span.kind") {
        let kind = match kind.to_ascii_uppercase().as_str() {
            "LLM" => Some(SpanKind::Llm),
            "TOOL" => Some(SpanKind::Tool),
            "EMBEDDING" => Some(SpanKind::Embedding),
            "RERANKER" => Some(SpanKind::Rerank),
            "RETRIEVER" => Some(SpanKind::Retrieval),
            "AGENT" => Some(SpanKind::Agent),
            "CHAIN" => Some(SpanKind::Node),
            _ => None,
        };
        if let Some(kind) = kind {
            return kind;
        }
    }
    if let Some(kind) = attrs.str("langfuse.observation.type") {
        let kind = match kind {
            "generation" => Some(SpanKind::Llm),
            "tool" => Some(SpanKind::Tool),
            "embedding" => Some(SpanKind::Embedding),
            "retriever" => Some(SpanKind::Retrieval),
            "agent" => Some(SpanKind::Agent),
            "chain" | "span" => Some(SpanKind::Node),
            _ => None,
        };
        if let Some(kind) = kind {
            return kind;
        }
    }
    SpanKind::Other
}

/// Classifies `span` and fills kind, status, error, identity, LLM / tool / retrieval facts and
/// the input / output payloads. `status_message` is the OTLP status description, if any.
pub fn classify(span: &mut Span, status_message: Option<&str>, source: &dyn AttrSource) {
    // Spans are classified before they are packed; a packed one is unpacked rather than read
    // as having no attributes.
    span.attributes.open_mut();
    let attrs = Attrs::new(span.attributes.as_open().unwrap_or_default());
    let kind = kind_of(&span.name, &attrs);

    let mut status = span.status;
    if attrs
        .str("langfuse.observation.level")
        .is_some_and(|l| l.eq_ignore_ascii_case("ERROR"))
    {
        status = SpanStatus::Error;
    }
    // OTel: `error.type` is set only when the operation failed; a tool span carrying it with
    // an UNSET status is a failed call (an explicit OK status still wins).
    if kind == SpanKind::Tool
        && status == SpanStatus::Unset
        && attrs.str("error.type").is_some_and(|t| !t.is_empty())
    {
        status = SpanStatus::Error;
    }
    let error = error_of(span, &attrs, status, status_message);
    let identity = identity_of(&attrs);
    let tool = (kind == SpanKind::Tool).then(|| tool_of(&span.name, &attrs));
    let llm = matches!(kind, SpanKind::Llm | SpanKind::Embedding | SpanKind::Rerank)
        .then(|| llm_of(kind, &attrs, source));
    let retrieval = matches!(kind, SpanKind::Retrieval | SpanKind::Rerank)
        .then(|| retrieval_of(&attrs, source));
    let input = first_payload(INPUT_KEYS, &attrs, source);
    let output = first_payload(OUTPUT_KEYS, &attrs, source);
    drop(attrs);

    span.kind = kind;
    span.status = status;
    span.error = error.map(Box::new);
    span.identity = identity.into();
    span.tool = tool.map(Box::new);
    span.llm = llm.map(Box::new);
    span.retrieval = retrieval.map(Box::new);
    span.input = input.into();
    span.output = output.into();
}

/// Payload texts up to this long are judged (empty? truncated?) on their whole text; longer
/// ones by their end only.
pub const WHOLE_TEXT_STATE_MAX: usize = 256;

fn first_payload(keys: &[&str], attrs: &Attrs, source: &dyn AttrSource) -> Payload {
    keys.iter()
        .find_map(|k| {
            // A string attribute is the payload's text already decoded: the source need not
            // decode it again to judge the payload's state.
            let decoded = match attrs.get(k)? {
                AttrValue::Str(text) => Some(&**text),
                _ => None,
            };
            source.payload(k, decoded)
        })
        .unwrap_or_else(Payload::not_captured)
}

fn error_of(
    span: &Span,
    attrs: &Attrs,
    status: SpanStatus,
    status_message: Option<&str>,
) -> Option<ErrorInfo> {
    let exception = span.events.iter().find(|e| e.name == "exception");
    let event_str = |key: &str| {
        exception.and_then(|e| {
            e.attributes
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.held()?.as_str())
                .filter(|s| !s.is_empty())
        })
    };
    let error_type = attrs
        .str("error.type")
        .or_else(|| event_str("exception.type"))
        .or_else(|| attrs.str(&format!("{LF_META}error_type")))
        .or_else(|| attrs.str("openarmature.error.category"));
    if status != SpanStatus::Error && error_type.is_none() {
        return None;
    }
    let message = event_str("exception.message")
        .or_else(|| attrs.str(&format!("{LF_META}error_message")))
        .or(status_message)
        .or_else(|| attrs.str("langfuse.observation.status_message"));
    Some(ErrorInfo {
        error_type: error_type.map(str::to_owned),
        message: message.map(str::to_owned),
        ..Default::default()
    })
}

fn identity_of(attrs: &Attrs) -> Identity {
    let namespace = match attrs.strings("openarmature.node.namespace") {
        parts if !parts.is_empty() => Some(intern::value(&parts.join("/"))),
        _ => match attrs.strings(&format!("{LF_META}namespace")) {
            parts if !parts.is_empty() => Some(intern::value(&parts.join("/"))),
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
}

fn tool_of(span_name: &str, attrs: &Attrs) -> ToolFacts {
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
        requested_by: None,
    }
}

fn llm_of(kind: SpanKind, attrs: &Attrs, source: &dyn AttrSource) -> LlmFacts {
    let usage: Option<serde_json::Map<String, serde_json::Value>> = attrs
        .str("langfuse.observation.usage_details")
        .and_then(|u| serde_json::from_str(u).ok());
    let usage_u64 = |keys: &[&str]| {
        let usage = usage.as_ref()?;
        keys.iter().find_map(|k| usage.get(*k)?.as_u64())
    };
    let mut finish_reasons: thin_vec::ThinVec<crate::model::ArcStr> = attrs
        .strings("gen_ai.response.finish_reasons")
        .iter()
        .map(|reason| intern::value(reason))
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
            .or_else(|| usage_u64(&["input", "prompt_tokens", "input_tokens"])),
        output_tokens: attrs
            .first_u64(&[
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
                "openarmature.llm.usage.completion_tokens",
                "llm.token_count.completion",
            ])
            .or_else(|| usage_u64(&["output", "completion_tokens", "output_tokens"])),
        cache_read_tokens: attrs
            .first_u64(&[
                "gen_ai.usage.cache_read.input_tokens",
                "openarmature.llm.cache_read.input_tokens",
                "llm.token_count.prompt_details.cache_read",
            ])
            .or_else(|| usage_u64(&["cache_read_input_tokens", "input_cached_tokens"])),
        finish_reasons,
        requested_tool_calls: if kind == SpanKind::Llm {
            tool_calls::requested_tool_calls(attrs, source)
        } else {
            Vec::new()
        },
    }
}

/// Queries are for display; keep the first KiB.
const QUERY_MAX: usize = 1024;

fn retrieval_of(attrs: &Attrs, source: &dyn AttrSource) -> RetrievalFacts {
    let query = [
        "gen_ai.retrieval.query.text",
        "openarmature.rerank.query",
        "reranker.query",
    ]
    .iter()
    .filter(|k| attrs.has(k))
    .find_map(|k| source.full_text(k))
    .map(|q| {
        let mut end = q.len().min(QUERY_MAX);
        while !q.is_char_boundary(end) {
            end -= 1;
        }
        q[..end].to_owned()
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
        .map
        .keys()
        .filter_map(|k| k.strip_prefix(prefix)?.split('.').next()?.parse().ok())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    (!seen.is_empty()).then_some(seen.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> Vec<(crate::model::ArcStr, AttrValue)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), AttrValue::Str(v.to_string().into())))
            .collect()
    }

    /// A key's family is named by its text up to the first dot (all of it without one).
    #[test]
    fn a_keys_family_is_its_first_segment() {
        let by_segment = |key: &str| match key.split('.').next().unwrap_or(key) {
            "openarmature" => 1,
            "gen_ai" => 1 << 1,
            "llm" => 1 << 2,
            "langfuse" => 1 << 3,
            "openinference" => 1 << 4,
            "tool" | "tool_call" => 1 << 5,
            "input" | "output" => 1 << 6,
            "embedding" | "reranker" | "retrieval" => 1 << 7,
            "session" | "error" => 1 << 8,
            _ => 1 << 31,
        };
        let segments = [
            "openarmature",
            "gen_ai",
            "llm",
            "langfuse",
            "openinference",
            "tool",
            "tool_call",
            "input",
            "output",
            "embedding",
            "reranker",
            "retrieval",
            "session",
            "error",
            "",
            "o",
            "gen",
            "gen_ai_",
            "tools",
            "tool_",
            "errors",
            "lm",
            "x",
        ];
        for segment in segments {
            for tail in ["", ".", ".model", "x", "x.y", "_call.id", "..", ".é"] {
                let key = format!("{segment}{tail}");
                assert_eq!(family(&key), by_segment(&key), "{key:?}");
            }
        }
    }

    #[test]
    fn first_match_wins_in_table_order() {
        let list = attrs(&[
            ("gen_ai.operation.name", "execute_tool"),
            ("openinference.span.kind", "LLM"),
        ]);
        assert_eq!(kind_of("x", &Attrs::new(&list)), SpanKind::Tool);
        let list = attrs(&[("openinference.span.kind", "RERANKER")]);
        assert_eq!(kind_of("x", &Attrs::new(&list)), SpanKind::Rerank);
        let list = attrs(&[("langfuse.observation.type", "span")]);
        assert_eq!(kind_of("x", &Attrs::new(&list)), SpanKind::Node);
        let list = attrs(&[("openarmature.node.name", "agent")]);
        assert_eq!(
            kind_of("openarmature.tool.call", &Attrs::new(&list)),
            SpanKind::Tool
        );
        assert_eq!(kind_of("x", &Attrs::new(&list)), SpanKind::Node);
        let list = attrs(&[("openinference.span.kind", "GUARDRAIL")]);
        assert_eq!(kind_of("x", &Attrs::new(&list)), SpanKind::Other);
        assert_eq!(
            kind_of("openarmature.invocation", &Attrs::new(&[])),
            SpanKind::Other
        );
    }
}
