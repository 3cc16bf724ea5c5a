//! Classification and fact extraction from span attributes, for every attribute convention
//! (OpenArmature, OTel GenAI current and legacy, OpenInference, Langfuse). See
//! docs/ARCHITECTURE.md.
//!
//! Works on a [`Span`] whose `attributes` are already converted; an [`AttrSource`] supplies the
//! full text of attributes that were moved into payloads (needed to read tool calls out of
//! message JSON) and builds payloads for `span.input` / `span.output`.

use foldhash::HashMap;
use std::borrow::Cow;

mod facts;
mod tool_calls;

use facts::{error_of, identity_of, llm_of, retrieval_of, tool_of};

use std::sync::Arc;

use crate::model::{AttrValue, KindFacts, Payload, PayloadSlot, Span, SpanKind, SpanStatus};

/// Access to attribute values beyond what the skeleton keeps.
pub trait AttrSource {
    /// The full text of a string attribute, even when the span holds it as a payload.
    fn full_text(&self, key: &str) -> Option<Cow<'_, str>>;
    /// A payload for the attribute, by reference where the format can find it again: the
    /// attribute's own when it holds one, shared. `decoded` is the attribute's text when the
    /// caller holds it already.
    fn payload(&self, key: &str, decoded: Option<&str>) -> Option<Arc<Payload>>;
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

/// Attribute lookup by key (spans carry tens of attributes; the classifier asks ~40 times).
struct Attrs<'s> {
    lookup: Lookup<'s>,
    /// Which key families (see [`family`]) occur, so most absent keys are refused unsearched.
    families: u32,
}

/// A short list is searched in place: comparing a dozen keys (their lengths first) costs less
/// than hashing the key, and building a map for every span cost more than all its searches.
enum Lookup<'s> {
    InPlace(&'s [(crate::model::ArcStr, AttrValue)]),
    Map(HashMap<&'s str, &'s AttrValue>),
}

/// Lists longer than this are searched through a map.
const SEARCHED_IN_PLACE_MAX: usize = 24;

/// A bit per attribute namespace, from the key's first dotted segment.
fn family(key: &str) -> u32 {
    // This runs for every lookup, ~40 per span: the first byte picks the few namespaces to
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
        let families = attributes
            .iter()
            .fold(0, |families, (k, _)| families | family(k));
        if attributes.len() <= SEARCHED_IN_PLACE_MAX {
            return Attrs {
                lookup: Lookup::InPlace(attributes),
                families,
            };
        }
        let mut map = HashMap::with_capacity_and_hasher(attributes.len(), Default::default());
        for (k, v) in attributes {
            // First occurrence wins, as in place.
            map.entry(&**k).or_insert(v);
        }
        Attrs {
            lookup: Lookup::Map(map),
            families,
        }
    }
    fn get(&self, key: &str) -> Option<&'s AttrValue> {
        if self.families & family(key) == 0 {
            return None;
        }
        match &self.lookup {
            Lookup::InPlace(list) => list
                .iter()
                .find(|(k, _)| k.len() == key.len() && k.as_str() == key)
                .map(|(_, v)| v),
            Lookup::Map(map) => map.get(key).copied(),
        }
    }
    /// Every key with its first value, in no particular order.
    fn first_entries(&self) -> impl Iterator<Item = (&'s str, &'s AttrValue)> + '_ {
        let (list, map) = match &self.lookup {
            Lookup::InPlace(list) => (*list, None),
            Lookup::Map(map) => (&[][..], Some(map)),
        };
        let in_place = list.iter().enumerate().filter_map(move |(i, (k, v))| {
            let repeated = list[..i].iter().any(|(earlier, _)| earlier == k);
            (!repeated).then_some((&**k, v))
        });
        let mapped = map
            .into_iter()
            .flat_map(|map| map.iter().map(|(k, v)| (*k, *v)));
        in_place.chain(mapped)
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

/// Classifies `span` and fills kind, status, error, identity and LLM / tool / retrieval facts;
/// returns its input and output payloads, for [`Span::pack_with_payloads`] to keep (most are
/// attributes, so the span never holds them apart). `status_message` is the OTLP status
/// description, if any.
pub fn classify(
    span: &mut Span,
    status_message: Option<&str>,
    source: &dyn AttrSource,
) -> (PayloadSlot, PayloadSlot) {
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
    span.set_error(error);
    span.set_identity(identity);
    span.facts = KindFacts::of(
        llm.map(Box::new),
        tool.map(Box::new),
        retrieval.map(Box::new),
    );
    (input, output)
}

/// Payload texts up to this long are judged (empty? truncated?) on their whole text; longer
/// ones by their end only.
pub const WHOLE_TEXT_STATE_MAX: usize = 256;

fn first_payload(keys: &[&str], attrs: &Attrs, source: &dyn AttrSource) -> PayloadSlot {
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
        .map(PayloadSlot::held)
        .unwrap_or_default()
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

    /// Short lists are searched in place, long ones through a map: both find the first of
    /// repeated keys, and neither finds an absent one.
    #[test]
    fn short_and_long_lists_find_the_same_values() {
        for filler in [2, SEARCHED_IN_PLACE_MAX + 4] {
            // The two `…model` keys are alike in length and ending: only their text differs.
            let mut pairs = vec![
                ("gen_ai.request.model", "first"),
                ("llm.x", "y"),
                ("gen_ai.a.model", "a"),
                ("gen_ai.b.model", "b"),
            ];
            let names: Vec<String> = (0..filler).map(|i| format!("gen_ai.filler.{i}")).collect();
            pairs.extend(names.iter().map(|n| (n.as_str(), "filler")));
            pairs.push(("gen_ai.request.model", "second"));
            let list = attrs(&pairs);
            let found = Attrs::new(&list);
            let in_place = matches!(found.lookup, Lookup::InPlace(_));
            assert_eq!(in_place, list.len() <= SEARCHED_IN_PLACE_MAX);
            assert_eq!(found.str("gen_ai.request.model"), Some("first"));
            assert_eq!(found.str("gen_ai.filler.1"), Some("filler"));
            assert_eq!(found.str("llm.x"), Some("y"));
            assert_eq!(found.str("gen_ai.b.model"), Some("b"));
            assert_eq!(found.str("gen_ai.a.model"), Some("a"));
            assert_eq!(found.get("gen_ai.request.mode"), None);
            assert_eq!(found.get("openarmature.node.name"), None);
            let models: Vec<_> = found
                .first_entries()
                .filter(|(k, _)| *k == "gen_ai.request.model")
                .map(|(_, v)| v.as_str())
                .collect();
            assert_eq!(models, [Some("first")]);
            assert_eq!(found.first_entries().count(), list.len() - 1);
        }
    }

    /// Reads a test's attribute list as the wire reader would.
    struct ListSource<'a>(&'a [(crate::model::ArcStr, AttrValue)]);

    impl AttrSource for ListSource<'_> {
        fn full_text(&self, key: &str) -> Option<Cow<'_, str>> {
            match &self.0.iter().find(|(k, _)| k.as_str() == key)?.1 {
                AttrValue::Str(text) => Some(Cow::Borrowed(text.as_str())),
                _ => None,
            }
        }
        fn payload(&self, _key: &str, _decoded: Option<&str>) -> Option<Arc<Payload>> {
            None
        }
    }

    /// A retrieval's query is its attribute's own text, shared; one past the 1 KiB shown is
    /// cut on a character boundary, a copy of its own.
    #[test]
    fn a_retrieval_query_shares_its_attributes_text_unless_cut() {
        let list = attrs(&[("gen_ai.retrieval.query.text", "what changed in Q3?")]);
        let facts = retrieval_of(&Attrs::new(&list), &ListSource(&list));
        let AttrValue::Str(held) = &list[0].1 else {
            unreachable!("built as a text above");
        };
        let query = facts.query.expect("the query is read");
        assert_eq!(query, "what changed in Q3?");
        assert!(
            std::ptr::eq(query.as_str(), held.as_str()),
            "shared, not copied"
        );

        // Two-byte characters: 1,023 bytes is the last boundary within 1,024.
        let long = format!("q{}", "é".repeat(600));
        let list = attrs(&[("gen_ai.retrieval.query.text", &long)]);
        let facts = retrieval_of(&Attrs::new(&list), &ListSource(&list));
        let query = facts.query.expect("the query is read");
        assert_eq!(query.len(), 1023);
        assert!(long.starts_with(query.as_str()));
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
