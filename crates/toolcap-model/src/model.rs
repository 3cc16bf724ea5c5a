//! The one span model every format normalizes into.
//!
//! A [`Span`] is the *skeleton*: ids, name, kind, status, timing and small facts. Payloads
//! (messages, arguments, results, documents, big attribute values) live in [`Payload`], which
//! holds either a small inline value or a reference to the record it came from, so a 10k-span
//! run with megabyte payloads stays cheap until a pane actually shows one.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

mod attributes;
mod extras;
mod facts;
pub mod file_numbers;
mod format_name;
mod id;
mod inline_list;
pub mod interner;
mod kind_facts;
mod packed;
mod payload;
mod problem;
mod provenance;
mod sparse;
mod token_count;

pub use arcstr::ArcStr;
pub use attributes::{AttrView, Attributes};
pub use extras::{ErrorInfo, SpanEvent, SpanExtras};
pub use facts::{
    LlmFacts, LlmFactsRef, RequestedToolCall, RetrievalFacts, ToolFacts, ToolFactsRef,
};
pub use format_name::FormatName;
pub use id::{AsId, CompactId, Id, IdText, TraceId, sort_by_id};
pub use inline_list::{FinishReasons, InlineList, RequestedCalls};
pub use kind_facts::{KeyedLlmFacts, KindFacts, KindFactsView, SeveralFacts, ToolKeys};
pub use payload::*;
pub use problem::*;
pub use provenance::Provenance;
pub use sparse::{Holder, Sparse, SparseEmpty};
pub use token_count::{TokenCount, token_count};

/// Compiles only for types that may cross threads and be shared between them: what each
/// hand-written `Send`/`Sync` impl in the model asserts of what it owns.
pub(crate) const fn assert_send_sync<T: Send + Sync>() {}

/// What a span does, for colouring and counting. Order is the order of the `counts` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum SpanKind {
    Llm,
    Tool,
    Embedding,
    Rerank,
    Retrieval,
    Agent,
    Node,
    #[default]
    Other,
}

impl SpanKind {
    pub const ALL: [SpanKind; 8] = [
        SpanKind::Llm,
        SpanKind::Tool,
        SpanKind::Embedding,
        SpanKind::Rerank,
        SpanKind::Retrieval,
        SpanKind::Agent,
        SpanKind::Node,
        SpanKind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Llm => "llm",
            SpanKind::Tool => "tool",
            SpanKind::Embedding => "embedding",
            SpanKind::Rerank => "rerank",
            SpanKind::Retrieval => "retrieval",
            SpanKind::Agent => "agent",
            SpanKind::Node => "node",
            SpanKind::Other => "other",
        }
    }

    /// One-cell glyph used by the tree and by `dump`'s text output.
    pub fn glyph(self) -> char {
        match self {
            SpanKind::Llm => '◆',
            SpanKind::Tool => '⚒',
            SpanKind::Embedding => '≋',
            SpanKind::Rerank => '⇅',
            SpanKind::Retrieval => '⌕',
            SpanKind::Agent => '●',
            SpanKind::Node => '▸',
            SpanKind::Other => '·',
        }
    }
}

impl fmt::Display for SpanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A span's own recorded status. UNSET counts as success (OpenArmature leaves successful
/// invocation spans UNSET), but it is kept distinct so `dump --json` can say `unset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SpanStatus {
    #[default]
    Unset,
    Ok,
    Error,
}

impl SpanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanStatus::Unset => "unset",
            SpanStatus::Ok => "ok",
            SpanStatus::Error => "error",
        }
    }
    pub fn is_error(self) -> bool {
        self == SpanStatus::Error
    }
}

/// Status as shown: a span that is fine itself but has a failed descendant is `Degraded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Health {
    #[default]
    Ok,
    Degraded,
    Error,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::Degraded => "degraded",
            Health::Error => "error",
        }
    }
    pub fn glyph(self) -> char {
        match self {
            Health::Ok => '✓',
            Health::Degraded => '◐',
            Health::Error => '✗',
        }
    }
}

/// Where a record came from, for problems and for loading payloads later.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Shared: every span of a file carries its origin, and a clone is a reference count.
    File(Arc<PathBuf>),
    /// A network endpoint (receiver or attached feed); payloads from here are inline. Shared
    /// like a file's path (an `Arc<String>`, one word, keeps an origin at two words).
    Endpoint(Arc<String>),
}

impl Origin {
    pub fn endpoint(name: impl Into<String>) -> Origin {
        Origin::Endpoint(Arc::new(name.into()))
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Endpoint(e) => f.write_str(e),
        }
    }
}

/// A small attribute value. Big strings are moved into [`AttrValue::Payload`].
///
/// Every variant is one word, so a value is 16 bytes: a span holds a dozen. Strings are thin
/// shared pointers ([`ArcStr`]); lists and maps keep their length in their one allocation
/// (`ThinVec`); bytes are rare and pay a second allocation (a boxed `Vec`).
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::box_collection)]
pub enum AttrValue {
    /// Shared: the same values (models, providers, operation names) repeat on span after span,
    /// and a parser hands out one allocation for all of them (see `interner`).
    Str(ArcStr),
    Int(i64),
    Float(f64),
    Bool(bool),
    Bytes(Box<Vec<u8>>),
    List(thin_vec::ThinVec<AttrValue>),
    Map(thin_vec::ThinVec<(String, AttrValue)>),
    /// Out of line: a payload is several times the size of the other variants, and most
    /// attributes are small. Shared: a span's input or output is often this same payload.
    Payload(Arc<Payload>),
    Null,
}

impl AttrValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            AttrValue::Payload(p) => p.inline_text(),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttrValue::Int(i) => Some(*i),
            AttrValue::Float(f) if f.fract() == 0.0 => Some(*f as i64),
            AttrValue::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    /// A short one-line rendering for attribute tables (not for payloads).
    pub fn display_short(&self) -> String {
        match self {
            AttrValue::Str(s) => s.to_string(),
            AttrValue::Int(i) => i.to_string(),
            AttrValue::Float(f) => f.to_string(),
            AttrValue::Bool(b) => b.to_string(),
            AttrValue::Bytes(b) => format!("<{} bytes>", b.len()),
            AttrValue::List(items) => {
                let parts: Vec<String> = items.iter().map(AttrValue::display_short).collect();
                format!("[{}]", parts.join(", "))
            }
            AttrValue::Map(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.display_short()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
            AttrValue::Payload(p) => format!("<payload, {} bytes, {}>", p.bytes, p.state.label()),
            AttrValue::Null => "null".into(),
        }
    }
}

/// Identity fields that tie spans to runs, nodes and retries. The texts are shared: every span
/// of a run or node repeats them, and a parser hands out the attribute value's own allocation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    pub invocation_id: Option<ArcStr>,
    pub correlation_id: Option<ArcStr>,
    /// Out of line: two spans in three with an identity name only a run or a correlation, so
    /// theirs is a 32-byte block where all seven fields made a 64-byte one.
    pub node: Sparse<NodeIdentity>,
}

impl SparseEmpty for Identity {
    const EMPTY: &'static Self = &Identity {
        invocation_id: None,
        correlation_id: None,
        node: Sparse::UNSET,
    };
}

/// Where in a graph a span ran: its node, and which retry or parallel branch it was.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeIdentity {
    pub node_name: Option<ArcStr>,
    pub namespace: Option<ArcStr>,
    /// `openarmature.llm.attempt_index`: sibling LLM spans 0..N are attempts of one call.
    pub attempt_index: Option<u32>,
    pub fan_out_index: Option<u32>,
    pub branch_name: Option<ArcStr>,
}

impl SparseEmpty for NodeIdentity {
    const EMPTY: &'static Self = &NodeIdentity {
        node_name: None,
        namespace: None,
        attempt_index: None,
        fan_out_index: None,
        branch_name: None,
    };
}

/// A 1-based line number as a span holds it: four bytes, which fit beside its kind, status
/// and format where eight took a word of their own in every span. A line past `u32::MAX` (a
/// file of over four billion lines) is held as no line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineNumber(std::num::NonZeroU32);

impl LineNumber {
    /// `None` for 0 and for lines past `u32::MAX`.
    pub fn new(line: u64) -> Option<Self> {
        let line = u32::try_from(line).ok()?;
        std::num::NonZeroU32::new(line).map(LineNumber)
    }
    pub fn get(self) -> u64 {
        u64::from(self.0.get())
    }
}

impl From<LineNumber> for u64 {
    fn from(line: LineNumber) -> u64 {
        line.get()
    }
}

impl std::fmt::Display for LineNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One span, in the single model every format normalizes into.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Span {
    /// Lower-case hex for OTLP (held as bytes); the native id for other formats.
    pub trace_id: TraceId,
    /// Nine bytes each, beside the span's one-byte fields (see [`CompactId`]).
    pub span_id: CompactId,
    pub parent_span_id: Option<CompactId>,
    /// Shared: the same few names repeat on span after span (see `interner`).
    pub name: ArcStr,
    pub kind: SpanKind,
    pub status: SpanStatus,
    // The facts below are absent from most spans, so they are kept out of line: a span's
    // fixed size is paid by every span in the store.
    /// Error, events, identity, and an input or output that is not an attribute: read with
    /// [`Span::error`], [`Span::events`], [`Span::identity`], [`Span::input`] and
    /// [`Span::output`]; set with their `set_` methods.
    pub extras: Sparse<SpanExtras>,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    /// Model call, tool call or retrieval facts ([`Span::llm`], [`Span::tool`],
    /// [`Span::retrieval`]).
    pub facts: KindFacts,
    /// Packed once the span is done (see [`Attributes`]).
    pub attributes: Attributes,
    /// Where it was read from, the service that ran it and the format it was read as
    /// ([`Span::origin`], [`Span::service`], [`Span::format`]): shared by the spans of one
    /// resource in one parse.
    pub provenance: Option<Arc<Provenance>>,
    /// 1-based line in the source file when the format is line-oriented.
    pub line: Option<LineNumber>,
}

impl Span {
    /// Packs its attributes and its events' (see [`Attributes::pack`]): done once the span is
    /// built, before it is stored. An input or output that is one of the attributes is then
    /// kept once, in the packed list.
    pub fn pack(&mut self) {
        let (input, output) = match self.extras.is_unset() {
            true => (PayloadSlot::UNSET, PayloadSlot::UNSET),
            false => (
                std::mem::take(&mut self.extras.input),
                std::mem::take(&mut self.extras.output),
            ),
        };
        self.pack_with_payloads(input, output);
    }

    /// [`Span::pack`] with the input and output a parser found, which the span keeps apart
    /// only when they are not among its attributes: handed over here, a payload that is an
    /// attribute never takes the extras block in between.
    pub fn pack_with_payloads(&mut self, input: PayloadSlot, output: PayloadSlot) {
        let placed = self
            .attributes
            .pack_with_payloads(input.holder(), output.holder());
        if !placed.contains(PayloadRoles::INPUT) {
            self.set_input(input);
        }
        if !placed.contains(PayloadRoles::OUTPUT) {
            self.set_output(output);
        }
        if !self.extras.is_unset() {
            let extras = &mut *self.extras;
            for event in extras.events.iter_mut() {
                event.attributes.pack();
            }
            if extras.events.capacity() > extras.events.len() {
                extras.events.shrink_to_fit();
            }
            // Payloads that moved into the attributes may have been all it held.
            self.extras.release_if_empty();
        }
        // A list of several requested calls collected while parsing may have room for more:
        // a stored span keeps exactly what it holds.
        if self
            .requested_calls()
            .is_some_and(|calls| calls.has_slack())
            && let Some(llm) = self.llm_mut()
        {
            llm.requested_tool_calls.shrink_to_fit();
        }
        self.key_facts();
    }

    /// Arguments, prompt messages, query or input strings (not captured when there are none).
    pub fn input(&self) -> Cow<'_, Payload> {
        self.payload(self.input_slot(), PayloadRoles::INPUT)
    }

    /// Result, completion, documents (not captured when there are none).
    pub fn output(&self) -> Cow<'_, Payload> {
        self.payload(self.output_slot(), PayloadRoles::OUTPUT)
    }

    /// The slot's payload, or the one the packed attribute list marks with `role` (a slot is
    /// emptied when packing moves its payload there), or none.
    fn payload<'a>(&'a self, slot: &'a PayloadSlot, role: PayloadRoles) -> Cow<'a, Payload> {
        match slot.holder() {
            Some(held) => Cow::Borrowed(held),
            None => self
                .attributes
                .payload_in_role(role)
                .map_or(Cow::Borrowed(<Payload as SparseEmpty>::EMPTY), Cow::Owned),
        }
    }

    pub fn duration_ms(&self) -> f64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano) as f64 / 1e6
    }
    pub fn attr(&self, key: &str) -> Option<AttrView<'_>> {
        self.attributes.get(key)
    }
    pub fn error_type(&self) -> Option<&str> {
        self.error()?.error_type.as_deref()
    }
    pub fn error_message(&self) -> Option<&str> {
        self.error()?.message.as_deref()
    }
}

/// Heap bytes of a `ThinVec` of `capacity` items of `each` bytes: none while it is empty, else
/// its length and capacity (16 bytes) ahead of the items.
pub fn thin_vec_bytes(capacity: usize, each: usize) -> u64 {
    match capacity {
        0 => 0,
        _ => (16 + capacity * each) as u64,
    }
}

/// Attributes built with owned keys, as [`Span::attributes`] holds them.
pub fn shared_keys(attributes: Vec<(String, AttrValue)>) -> Attributes {
    attributes
        .into_iter()
        .map(|(key, value)| (ArcStr::from(key), value))
        .collect()
}

/// Attribute marking a stand-in span: a span seen only at its start, or a tool call known only
/// from a flattened record (arksim). A later span with the same id that is not provisional
/// replaces it in the store, so a span is never counted twice.
pub const PROVISIONAL_ATTR: &str = "toolcap.provisional";

/// Attribute marking a span synthesized from an evaluator's record (the `arksim evaluation`
/// span). It carries the verdict's status — error when the evaluation failed — but it is not
/// part of the agent's run: its failure does not degrade its parents or the invocation's span
/// health (that is the evaluator facet, see `triage::facets`).
pub const EVALUATOR_ATTR: &str = "toolcap.evaluator";

/// Attribute marking a span that has no time of its own (an arksim turn, synthesized from a
/// record without timing): the store gives it the time its children span.
pub const UNTIMED_ATTR: &str = "toolcap.untimed";

impl Span {
    pub fn is_untimed(&self) -> bool {
        static KEY: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        self.flag_is_set(UNTIMED_ATTR, &KEY)
    }
    pub fn is_provisional(&self) -> bool {
        static KEY: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        self.flag_is_set(PROVISIONAL_ATTR, &KEY)
    }
    pub fn is_evaluator(&self) -> bool {
        static KEY: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        self.flag_is_set(EVALUATOR_ATTR, &KEY)
    }

    /// Whether attribute `key` is `true`. Asked of every span when a run is settled: a packed
    /// list is searched for the key's number in the shared table (`number`, looked up once),
    /// which compares a number per entry where searching by text looked up and compared each
    /// entry's key.
    fn flag_is_set(&self, key: &'static str, number: &std::sync::OnceLock<Option<u32>>) -> bool {
        let number = number.get_or_init(|| interner::number_of(&ArcStr::from(key)));
        let value = match number {
            Some(number) => self.attributes.value_under_key(*number),
            // A key the table could not number is written out in place wherever it is held.
            None => self.attr(key),
        };
        matches!(value.as_deref(), Some(AttrValue::Bool(true)))
    }
}

/// An evaluation verdict attached to an invocation (arksim turns, gold checks).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvalVerdict {
    pub passed: bool,
    pub score: Option<f64>,
    /// The pass mark the evaluator reported with the score: a score under it fails.
    pub threshold: Option<f64>,
    pub label: String,
    pub reason: String,
    /// The reason quotes what the model produced (an Inspect scorer's explanation repeats the
    /// completion): it is shown as the quote is, its length until revealed
    /// ([`EvalVerdict::shown_reason`]).
    pub reason_quotes_output: bool,
    /// Each scorer's own verdict, when the evaluation is several scorers' (Inspect): which of
    /// them decide is a [`ScorerRule`]'s choice.
    pub scorers: Vec<ScorerVerdict>,
    /// What the evaluation expected, as its dataset gives it (an Inspect sample's `target`):
    /// text from the dataset, shown as a quote is (its length until revealed).
    pub target: Option<String>,
    /// The limit that ended the run before it finished by itself, in the evaluator's words
    /// (an Inspect sample's `limit`: "Message limit exceeded. count: 5; limit: 4").
    pub limit: Option<String>,
}

impl EvalVerdict {
    /// The reason as the views start from under `mode`: a reason quoting the model's output
    /// is its length while redacted (see [`crate::redact::shown_quote`]); any other reason is
    /// itself. Each view then masks it as it masks free text.
    pub fn shown_reason(&self, mode: crate::redact::Reveal) -> Cow<'_, str> {
        shown_reason(&self.reason, self.reason_quotes_output, mode)
    }
}

/// [`EvalVerdict::shown_reason`] for a reason held apart from its verdict.
pub fn shown_reason(
    reason: &str,
    quotes_output: bool,
    mode: crate::redact::Reveal,
) -> Cow<'_, str> {
    if quotes_output && mode == crate::redact::Reveal::Redacted && !reason.is_empty() {
        Cow::Owned(crate::redact::shown_quote(reason, mode))
    } else {
        Cow::Borrowed(reason)
    }
}

/// One scorer's verdict on a run, as the log has it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorerVerdict {
    pub name: String,
    /// The value as written: a letter (`C`, `I`, `P`, `N`), a number, a bool, or a map of them.
    pub value: serde_json::Value,
    pub answer: Option<String>,
    pub explanation: Option<String>,
}

impl ScorerVerdict {
    /// The value as a number, as Inspect's own metrics read it: `C` 1, `P` 0.5, `I` and `N` 0,
    /// bools 1 or 0; a map of values is read as its mean.
    pub fn number(&self) -> Option<f64> {
        fn of(value: &serde_json::Value) -> Option<f64> {
            match value {
                serde_json::Value::String(letter) => match letter.as_str() {
                    "C" => Some(1.0),
                    "P" => Some(0.5),
                    "I" | "N" => Some(0.0),
                    other => other.trim().parse().ok(),
                },
                serde_json::Value::Number(n) => n.as_f64(),
                serde_json::Value::Bool(b) => Some(f64::from(u8::from(*b))),
                serde_json::Value::Object(values) => {
                    let numbers: Vec<f64> = values.values().filter_map(of).collect();
                    (!numbers.is_empty())
                        .then(|| numbers.iter().sum::<f64>() / numbers.len() as f64)
                }
                _ => None,
            }
        }
        of(&self.value)
    }

    /// Whether the value fails the run with no pass mark given: `I`, `0` or `false` (a map
    /// of values fails when one of them does).
    pub fn fails_by_default(&self) -> bool {
        fn of(value: &serde_json::Value) -> bool {
            match value {
                serde_json::Value::String(s) => s == "I",
                serde_json::Value::Number(n) => n.as_f64() == Some(0.0),
                serde_json::Value::Bool(b) => !b,
                serde_json::Value::Object(values) => values.values().any(of),
                _ => false,
            }
        }
        of(&self.value)
    }

    /// The value as shown: a letter or number as it is, anything else as JSON.
    pub fn value_text(&self) -> String {
        match &self.value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// `name=value`, as a verdict's label names each of its scorers.
    pub fn label(&self) -> String {
        format!("{}={}", self.name, self.value_text())
    }
}

/// Which scorers decide a verdict made of several (`--scorer`), each with an optional pass
/// mark. Empty: every scorer decides, failing on `I`, `0` or `false`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScorerRule {
    pub deciding: Vec<ScorerChoice>,
}

/// `NAME` or `NAME>=X`: the scorer decides; with a mark, a value under it (read as a number)
/// fails the run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorerChoice {
    pub name: String,
    pub at_least: Option<f64>,
}

impl std::str::FromStr for ScorerChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, at_least) = match text.split_once(">=") {
            Some((name, mark)) => match mark.trim().parse::<f64>() {
                Ok(mark) if mark.is_finite() => (name, Some(mark)),
                _ => return Err(format!("expected NAME or NAME>=NUMBER, got {text:?}")),
            },
            None => (text, None),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("expected NAME or NAME>=NUMBER, got {text:?}"));
        }
        Ok(ScorerChoice {
            name: name.to_owned(),
            at_least,
        })
    }
}

impl ScorerRule {
    /// `verdict` decided again by this rule's scorers: passed when none of them fails, its
    /// reason their explanations. A verdict without scorers (another evaluator, a sample
    /// error) is left as it is. A chosen scorer the run lacks fails it: its evaluation is
    /// missing, not passed.
    pub fn decide(&self, verdict: &mut EvalVerdict) {
        if self.deciding.is_empty() || verdict.scorers.is_empty() {
            return;
        }
        let mut reasons = Vec::new();
        let mut quotes_output = false;
        let mut passed = true;
        for choice in &self.deciding {
            let Some(scorer) = verdict.scorers.iter().find(|s| s.name == choice.name) else {
                passed = false;
                reasons.push(format!("{}: no score", choice.name));
                continue;
            };
            if choice.fails(scorer) {
                passed = false;
                let why = match (&scorer.explanation, choice.at_least) {
                    (Some(explanation), _) => {
                        quotes_output = true;
                        explanation.clone()
                    }
                    (None, Some(mark)) => format!("{} < {mark}", scorer.value_text()),
                    (None, None) => scorer.value_text(),
                };
                reasons.push(format!("{}: {why}", scorer.name));
            }
        }
        verdict.passed = passed;
        verdict.reason = reasons.join("; ");
        verdict.reason_quotes_output = quotes_output;
    }

    /// The scorers of `verdict` that fail it under this rule, in the verdict's order: with no
    /// choice, every scorer whose value fails by default; otherwise the chosen ones that fail
    /// their choice. (A chosen scorer the run lacks fails it too, and has no entry here.)
    pub fn failing<'v>(
        &self,
        verdict: &'v EvalVerdict,
    ) -> impl Iterator<Item = &'v ScorerVerdict> + use<'v, '_> {
        verdict
            .scorers
            .iter()
            .filter(|scorer| match self.deciding.is_empty() {
                true => scorer.fails_by_default(),
                false => self
                    .deciding
                    .iter()
                    .any(|choice| choice.name == scorer.name && choice.fails(scorer)),
            })
    }
}

impl ScorerChoice {
    /// Whether `scorer` (this choice's) fails the run: under the pass mark when there is one,
    /// else by its value's default (`I`, `0`, `false`).
    fn fails(&self, scorer: &ScorerVerdict) -> bool {
        match self.at_least {
            Some(mark) => scorer.number().is_none_or(|value| value < mark),
            None => scorer.fails_by_default(),
        }
    }
}

/// A tool call from a gold trajectory (toolscore gold file, arksim assertion, sidecar).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoldCall {
    pub tool: String,
    /// `None` means "don't check arguments"; `Some({})` means "expect no arguments".
    pub args: Option<serde_json::Map<String, serde_json::Value>>,
    pub description: Option<String>,
    pub side_effects: Option<serde_json::Value>,
    /// arksim per-call `arg_match_mode` (ignore / exact / partial); `None` falls back to the
    /// spec's mode, then to toolscore's per-key comparison.
    pub arg_match_mode: Option<String>,
}

/// How an arksim `tool_calls` assertion matches (kept for the gold diff).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoldSpec {
    pub calls: Vec<GoldCall>,
    /// arksim `match_mode`: strict / unordered / contains / within; `None` for toolscore golds.
    pub match_mode: Option<String>,
    /// arksim `arg_match_mode`: ignore / exact / partial.
    pub arg_match_mode: Option<String>,
    /// Where the gold came from, for reports.
    pub source: String,
}

/// Everything one parser produced from one input (a file, a line batch, a request).
#[derive(Debug, Default)]
pub struct Batch {
    pub spans: Vec<Span>,
    pub problems: Vec<Problem>,
    /// Verdicts keyed by invocation id (= the trace id its spans carry).
    pub evals: Vec<(String, EvalVerdict)>,
    /// Golds keyed by invocation id.
    pub golds: Vec<(String, GoldSpec)>,
    /// Spans whose trace id is the key belong to the invocation named by the value
    /// (joins openai-agents traces to arksim turns).
    pub aliases: Vec<(String, String)>,
    /// Human-readable display names for invocations whose root span has no good name.
    pub invocation_names: Vec<(String, String)>,
    /// The evaluation case each invocation runs, keyed by invocation id (see [`Case`]).
    pub cases: Vec<(String, Case)>,
    /// A file read again: what was read from it before goes when this batch comes, in the
    /// same step, so its runs never vanish from the views in between.
    pub replaces: Option<PathBuf>,
    /// A file read again only for what was added to it (a running eval's log): its notes,
    /// which say what the file holds as a whole, are in this batch anew and the old ones go.
    pub renews_notes: Option<PathBuf>,
}

/// Which evaluation case a run is: the same case in a rerun has the same key, whatever ids the
/// rerun's traces and conversations get. An arksim turn is its scenario id and turn index; an
/// Inspect sample its id and epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Case {
    pub id: String,
    pub index: u64,
    /// True when `index` counts repeats of the same case (Inspect's epochs), so runs of one id
    /// that disagree make the case flaky; false when it places the run within the case (an
    /// arksim turn of a scenario).
    pub index_is_repeat: bool,
    /// The Inspect task the sample belongs to: a sample id is unique only within its task
    /// (Inspect numbers a dataset's samples 1, 2, … when it names none).
    pub task: Option<String>,
}

impl Case {
    /// `task · id`: how a case is named where runs of several tasks are shown together.
    pub fn id_in_task(task: &str, id: &str) -> String {
        format!("{task} · {id}")
    }
}

impl Batch {
    pub fn extend(&mut self, other: Batch) {
        if self.replaces.is_none() {
            self.replaces = other.replaces;
        }
        if let Some(path) = other.renews_notes {
            self.problems.retain(|p| !p.is_note_of(&path));
            self.renews_notes.get_or_insert(path);
        }
        self.spans.extend(other.spans);
        self.problems.extend(other.problems);
        self.evals.extend(other.evals);
        self.golds.extend(other.golds);
        self.aliases.extend(other.aliases);
        self.invocation_names.extend(other.invocation_names);
        self.cases.extend(other.cases);
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    /// A flag reads the same from an open list and a packed one: set only by a `true` bool,
    /// first entry of its key first.
    #[test]
    fn flags_read_alike_open_and_packed() {
        let cases = [
            (vec![(EVALUATOR_ATTR, AttrValue::Bool(true))], true),
            (vec![(EVALUATOR_ATTR, AttrValue::Str("true".into()))], false),
            (vec![("other", AttrValue::Bool(true))], false),
            (
                vec![
                    ("x", AttrValue::Int(1)),
                    (EVALUATOR_ATTR, AttrValue::Bool(false)),
                    (EVALUATOR_ATTR, AttrValue::Bool(true)),
                ],
                false,
            ),
        ];
        for (attributes, expected) in cases {
            let open = Span {
                attributes: attributes
                    .iter()
                    .map(|(k, v)| (ArcStr::from(*k), v.clone()))
                    .collect(),
                ..Span::default()
            };
            let mut packed = open.clone();
            packed.attributes.pack();
            assert!(packed.attributes.is_packed());
            for span in [&open, &packed] {
                assert_eq!(span.is_evaluator(), expected, "{attributes:?}");
                assert!(!span.is_provisional());
            }
        }
    }
}

#[cfg(test)]
mod scorer_rule_tests {
    use super::*;

    fn verdict(scores: &[(&str, serde_json::Value)]) -> EvalVerdict {
        EvalVerdict {
            passed: true,
            scorers: scores
                .iter()
                .map(|(name, value)| ScorerVerdict {
                    name: (*name).into(),
                    value: value.clone(),
                    answer: None,
                    explanation: Some(format!("{name} said so")),
                })
                .collect(),
            ..EvalVerdict::default()
        }
    }

    fn rule(choices: &[&str]) -> ScorerRule {
        ScorerRule {
            deciding: choices.iter().map(|c| c.parse().unwrap()).collect(),
        }
    }

    /// The scorers a rule names as failing a run are the ones its decision counts.
    #[test]
    fn the_failing_scorers_are_the_ones_the_rule_counts() {
        let names = |rule: &ScorerRule, v: &EvalVerdict| -> Vec<String> {
            rule.failing(v).map(ScorerVerdict::label).collect()
        };
        let v = verdict(&[
            ("a", serde_json::json!("C")),
            ("b", serde_json::json!("I")),
            ("n", serde_json::json!(0.4)),
        ]);
        // Every scorer, by its value's default: 0.4 is not 0, so it does not fail.
        assert_eq!(names(&ScorerRule::default(), &v), ["b=I"]);
        assert_eq!(names(&rule(&["a"]), &v), Vec::<String>::new());
        assert_eq!(names(&rule(&["a", "n>=0.5"]), &v), ["n=0.4"]);
        assert_eq!(names(&rule(&["b", "n>=0.3"]), &v), ["b=I"]);
        // What the rule decides agrees with what it names.
        for choices in [&["a"][..], &["b"], &["n>=0.5"], &["a", "n>=0.3"]] {
            let mut decided = v.clone();
            rule(choices).decide(&mut decided);
            assert_eq!(
                decided.passed,
                names(&rule(choices), &v).is_empty(),
                "{choices:?}"
            );
        }
    }

    #[test]
    fn only_the_chosen_scorers_decide_with_their_marks() {
        let scores = [("a", serde_json::json!("C")), ("b", serde_json::json!("I"))];
        let mut v = verdict(&scores);
        rule(&["a"]).decide(&mut v);
        assert!(v.passed);
        assert_eq!(v.reason, "");
        let mut v = verdict(&scores);
        rule(&["b"]).decide(&mut v);
        assert!(!v.passed);
        assert_eq!(v.reason, "b: b said so");
        let mut v = verdict(&[("p", serde_json::json!("P"))]);
        rule(&["p>=0.5"]).decide(&mut v);
        assert!(v.passed, "P reads as 0.5");
        let mut v = verdict(&[("p", serde_json::json!("P"))]);
        rule(&["p>=0.6"]).decide(&mut v);
        assert!(!v.passed);
        let mut v = verdict(&[("n", serde_json::json!(0.75))]);
        rule(&["n>=0.7"]).decide(&mut v);
        assert!(v.passed);
        let mut v = verdict(&[("t", serde_json::json!("yes"))]);
        rule(&["t>=1"]).decide(&mut v);
        assert!(!v.passed, "a value that is no number is under any mark");
        let mut v = verdict(&scores);
        rule(&["missing"]).decide(&mut v);
        assert!(!v.passed);
        assert_eq!(v.reason, "missing: no score");
    }

    #[test]
    fn no_choice_and_no_scorers_leave_the_verdict_alone() {
        let mut v = verdict(&[("b", serde_json::json!("I"))]);
        ScorerRule::default().decide(&mut v);
        assert!(v.passed, "the format's own verdict stands");
        let mut v = EvalVerdict {
            passed: false,
            label: "sample error".into(),
            ..EvalVerdict::default()
        };
        rule(&["a"]).decide(&mut v);
        assert!(!v.passed);
    }

    #[test]
    fn choices_parse_as_name_or_name_and_mark() {
        let c: ScorerChoice = "acc >= 0.5".parse().unwrap();
        assert_eq!(
            c,
            ScorerChoice {
                name: "acc".into(),
                at_least: Some(0.5)
            }
        );
        assert!(">=1".parse::<ScorerChoice>().is_err());
        assert!("a>=x".parse::<ScorerChoice>().is_err());
        assert!("a>=inf".parse::<ScorerChoice>().is_err());
        assert!(" ".parse::<ScorerChoice>().is_err());
    }

    #[test]
    fn values_read_as_numbers_as_inspect_reads_them() {
        let number = |value| {
            ScorerVerdict {
                name: "s".into(),
                value,
                answer: None,
                explanation: None,
            }
            .number()
        };
        assert_eq!(number(serde_json::json!("C")), Some(1.0));
        assert_eq!(number(serde_json::json!("I")), Some(0.0));
        assert_eq!(number(serde_json::json!("N")), Some(0.0));
        assert_eq!(number(serde_json::json!(true)), Some(1.0));
        assert_eq!(number(serde_json::json!({"x": 1, "y": 0})), Some(0.5));
        assert_eq!(number(serde_json::json!(null)), None);
    }
}
