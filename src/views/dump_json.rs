//! The `dump --json` document (schema in docs/dump.schema.json) as typed serializers: serde
//! writes each invocation straight to the output and no `serde_json::Value` is built on the way
//! (building one per invocation would be most of the time of a report). Every struct lists its
//! fields alphabetically, because the document prints keys sorted (as
//! `serde_json::Value` does); `dump_stream_tests` compares the streamed text with the `Value`
//! form, which re-sorts, so a field out of order fails there.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::dump::{Selection, matched_in_tree_order};
use super::in_order::{write_in_order, write_pretty_at};

/// Runs formatted per part. Each part's buffer holds its whole output (and keeps its room from
/// part to part), and a run's JSON is several kilobytes: big parts raise `dump --json`'s peak
/// and are no faster, so parts are small, for a little more CPU.
const RUNS_PER_PART: usize = 8;
use crate::formats;
use crate::model::{CompactId, Health, Id, Payload, PayloadState, Span};
use crate::query::Match;
use crate::redact::{self, PayloadValue, Reveal};
use crate::store::{Invocation, KindCounts, Store, TreeRow};
use crate::triage::{Facets, GoldOutcome};

/// The `dump --json` document of every invocation.
pub fn to_json(store: &Store, mode: Reveal) -> Value {
    selection_json(store, &Selection::all(store), mode)
}

/// The `dump --json` document for the selected invocations; a filtered one adds `filter`
/// (query, matched, of) and each invocation's `matched_span_ids` (tree order).
pub fn selection_json(store: &Store, selection: &Selection, mode: Reveal) -> Value {
    to_value(&Document {
        store,
        selection,
        mode,
        extra: Vec::new(),
    })
}

/// One invocation as the document shows it, without the selection's facets and filter.
pub fn invocation_json(inv: &Invocation, mode: Reveal) -> Value {
    to_value(&InvocationOut::new(inv, mode, None))
}

/// A run's triage note as `dump --json` writes it (`check --json` and `compare --json` too).
pub fn note_json(note: &crate::notes::Note, mode: Reveal) -> Value {
    to_value(&NoteOut::new(note, mode))
}

/// A payload in `dump --json`: size and state always; the value only when revealed.
pub fn payload_json(payload: &Payload, mode: Reveal) -> Value {
    to_value(&PayloadOut::new(payload, mode))
}

fn to_value(out: &impl Serialize) -> Value {
    // Every serializer here is infallible: maps have string keys and numbers are finite or null.
    serde_json::to_value(out).unwrap_or(Value::Null)
}

/// Writes the document of `selection` plus the `extra` top-level fields (they replace built
/// fields of the same name), pretty-printed and newline-terminated, one invocation at a time:
/// the whole document never exists in memory. C1 controls, U+2028/2029 and invisible
/// characters are written as escapes ([`redact::escape_json_text`]).
pub fn write_selection_json(
    out: &mut impl std::io::Write,
    store: &Store,
    selection: &Selection,
    mode: Reveal,
    extra: Vec<(&str, Value)>,
) -> std::io::Result<()> {
    let document = Document {
        store,
        selection,
        mode,
        extra,
    };
    // What serde's pretty printer would write for the whole document, field by field, with the
    // invocations formatted on every core (`in_order`); `dump_stream_tests` holds it to the
    // built document byte for byte.
    let mut head = Vec::new();
    for (index, (key, field)) in document.fields().into_iter().enumerate() {
        head.extend_from_slice(if index == 0 { b"{\n  " } else { b",\n  " });
        serde_json::to_writer(&mut head, key).map_err(std::io::Error::from)?;
        head.extend_from_slice(b": ");
        match field {
            Field::Invocations if !selection.rows.is_empty() => {
                redact::escape_json_bytes(&mut head, 0);
                out.write_all(&head)?;
                head.clear();
                write_invocations(out, &document)?;
            }
            field => write_pretty_at(&FieldOut(&document, field), 1, &mut head)
                .map_err(std::io::Error::from)?,
        }
    }
    head.extend_from_slice(b"\n}\n");
    redact::escape_json_bytes(&mut head, 0);
    out.write_all(&head)
}

/// The `invocations` array, one level down, each invocation two levels down.
fn write_invocations(out: &mut impl std::io::Write, document: &Document) -> std::io::Result<()> {
    let Document {
        selection, mode, ..
    } = document;
    out.write_all(b"[")?;
    write_in_order(
        out,
        &selection.rows,
        RUNS_PER_PART,
        |index, (inv, matched), text: &mut Vec<u8>| {
            text.extend_from_slice(if index == 0 { b"\n    " } else { b",\n    " });
            let listed = Listed::of(selection, inv, matched.as_ref());
            let invocation = InvocationOut::new(inv, *mode, Some(listed));
            let start = text.len();
            // Infallible: string keys, finite numbers or null.
            let _ = write_pretty_at(&invocation, 2, text);
            redact::escape_json_bytes(text, start);
        },
    )?;
    out.write_all(b"\n  ]")
}

struct Document<'s, 'a> {
    store: &'s Store,
    selection: &'s Selection<'a>,
    mode: Reveal,
    extra: Vec<(&'s str, Value)>,
}

/// A top-level field of the document.
enum Field<'d> {
    Given(&'d Value),
    Problems,
    Stats,
    Filter,
    Invocations,
}

impl<'s> Document<'s, '_> {
    /// The document's top-level fields in the order they print (sorted by name); an `extra`
    /// field replaces a built one of the same name.
    fn fields(&self) -> BTreeMap<&str, Field<'_>> {
        let mut fields: BTreeMap<&str, Field> = BTreeMap::from([
            ("invocations", Field::Invocations),
            ("problems", Field::Problems),
            ("stats", Field::Stats),
        ]);
        if self.selection.query.is_some() {
            fields.insert("filter", Field::Filter);
        }
        for (key, value) in &self.extra {
            fields.insert(key, Field::Given(value));
        }
        fields
    }
}

impl Serialize for Document<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = self.fields();
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, field) in fields {
            map.serialize_entry(key, &FieldOut(self, field))?;
        }
        map.end()
    }
}

/// One top-level field's value.
struct FieldOut<'d, 's, 'a>(&'d Document<'s, 'a>, Field<'d>);

impl Serialize for FieldOut<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let document = self.0;
        match &self.1 {
            Field::Given(value) => value.serialize(serializer),
            Field::Problems => ProblemsOut(document).serialize(serializer),
            Field::Stats => {
                let stats = document.store.stats();
                StatsOut {
                    duplicate_spans: stats.duplicate_spans,
                    spans_kept: stats.spans_kept,
                    spans_seen: stats.spans_seen,
                }
                .serialize(serializer)
            }
            Field::Filter => FilterOut {
                matched: document.selection.rows.len(),
                of: document.store.len(),
                query: document.selection.query.as_deref().unwrap_or_default(),
            }
            .serialize(serializer),
            Field::Invocations => InvocationsOut(document).serialize(serializer),
        }
    }
}

#[derive(Serialize)]
struct StatsOut {
    duplicate_spans: u64,
    spans_kept: u64,
    spans_seen: u64,
}

#[derive(Serialize)]
struct FilterOut<'a> {
    matched: usize,
    of: usize,
    query: &'a str,
}

struct ProblemsOut<'d, 's, 'a>(&'d Document<'s, 'a>);

impl Serialize for ProblemsOut<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct ProblemOut<'a> {
            line: Option<u64>,
            message: String,
            severity: &'static str,
            source: &'a str,
        }
        let problems = self.0.store.problems();
        let mut seq = serializer.serialize_seq(Some(problems.len()))?;
        for p in problems {
            seq.serialize_element(&ProblemOut {
                line: p.line,
                message: redact::shown_data(&p.message, self.0.mode).into_owned(),
                severity: p.severity.as_str(),
                source: &p.source,
            })?;
        }
        seq.end()
    }
}

struct InvocationsOut<'d, 's, 'a>(&'d Document<'s, 'a>);

impl Serialize for InvocationsOut<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Document {
            selection, mode, ..
        } = self.0;
        let mut seq = serializer.serialize_seq(Some(selection.rows.len()))?;
        for (inv, matched) in &selection.rows {
            let listed = Listed::of(selection, inv, matched.as_ref());
            seq.serialize_element(&InvocationOut::new(inv, *mode, Some(listed)))?;
        }
        seq.end()
    }
}

/// What a listed invocation adds: its facets, gold outcome, triage note and the spans a filter
/// matched.
struct Listed<'a> {
    facets: Vec<&'static str>,
    failing: bool,
    gold: Option<GoldOut>,
    matched_span_ids: Option<Vec<&'a CompactId>>,
    note: Option<&'a crate::notes::Note>,
}

impl<'a> Listed<'a> {
    fn of(selection: &'a Selection, inv: &'a Invocation, matched: Option<&Match>) -> Self {
        let gold = selection.gold(&inv.id.text());
        let facets = Facets::of(inv, gold);
        let gold = match gold {
            GoldOutcome::Unknown => None,
            GoldOutcome::Matches { score } | GoldOutcome::Differs { score } => Some(GoldOut {
                matches: !facets.gold_mismatch(),
                score,
            }),
        };
        Listed {
            facets: facets.list().into_iter().map(|f| f.name()).collect(),
            failing: facets.failing(),
            gold,
            matched_span_ids: matched.map(|m| {
                matched_in_tree_order(inv, m)
                    .into_iter()
                    .map(|i| &inv.spans[i].span_id)
                    .collect()
            }),
            note: selection.notes().of_run(&inv.id.text()),
        }
    }
}

#[derive(Serialize)]
struct GoldOut {
    matches: bool,
    score: f64,
}

#[derive(Serialize)]
struct InvocationOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    case: Option<CaseOut>,
    counts: CountsOut<'a>,
    duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval: Option<EvalOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    facets: Option<Vec<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failing: Option<bool>,
    format: &'a str,
    formats: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gold: Option<GoldOut>,
    id: &'a Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    matched_span_ids: Option<Vec<&'a CompactId>>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<NoteOut<'a>>,
    spans: SpansOut<'a>,
    start_unix_nano: u64,
    status: &'static str,
    tokens: TokensOut,
    tool_calls: ToolCallsOut<'a>,
}

impl<'a> InvocationOut<'a> {
    fn new(inv: &'a Invocation, mode: Reveal, listed: Option<Listed<'a>>) -> Self {
        let summary = inv.summary();
        let (facets, failing, gold, matched_span_ids, note) = match listed {
            Some(l) => (
                Some(l.facets),
                Some(l.failing),
                l.gold,
                l.matched_span_ids,
                l.note,
            ),
            None => (None, None, None, None, None),
        };
        InvocationOut {
            case: inv.case().map(|case| CaseOut {
                id: redact::shown_data(&case.id, mode).into_owned(),
                index: case.index,
                task: case
                    .task
                    .as_ref()
                    .map(|task| redact::shown_data(task, mode).into_owned()),
            }),
            counts: CountsOut(&summary.counts),
            duration_ms: round3(summary.duration_ms()),
            eval: inv.eval().map(|eval| EvalOut {
                label: redact::shown_data(&eval.label, mode).into_owned(),
                limit: eval
                    .limit
                    .as_ref()
                    .map(|limit| redact::shown_data(limit, mode).into_owned()),
                passed: eval.passed,
                reason: redact::shown_data(&eval.shown_reason(mode), mode).into_owned(),
                score: eval.score,
                scorers: eval
                    .scorers
                    .iter()
                    .map(|scorer| ScorerOut {
                        name: redact::shown_data(&scorer.name, mode).into_owned(),
                        value: redact::shown_data(&scorer.value_text(), mode).into_owned(),
                        failing: scorer.fails_by_default(),
                        answer: scorer.answer.as_ref().map(|t| redact::shown_quote(t, mode)),
                        explanation: scorer
                            .explanation
                            .as_ref()
                            .map(|t| redact::shown_quote(t, mode)),
                    })
                    .collect(),
                target: eval.target.as_ref().map(|t| redact::shown_quote(t, mode)),
            }),
            facets,
            failing,
            format: summary.formats().next().unwrap_or("unknown"),
            formats: summary.formats().collect(),
            gold,
            id: &inv.id,
            matched_span_ids,
            name: redact::shown_data(&summary.name, mode).into_owned(),
            note: note.map(|note| NoteOut::new(note, mode)),
            spans: SpansOut { inv, mode },
            start_unix_nano: summary.start_unix_nano,
            status: summary.health.as_str(),
            tokens: TokensOut {
                input: summary.input_tokens,
                output: summary.output_tokens,
            },
            tool_calls: ToolCallsOut { inv, mode },
        }
    }
}

/// A run's triage note: the label as it is (a plain word), the note and its author through
/// the masking pass like any other text.
#[derive(Serialize)]
struct NoteOut<'a> {
    author: String,
    label: &'a str,
    note: String,
    time: String,
}

impl<'a> NoteOut<'a> {
    fn new(note: &'a crate::notes::Note, mode: Reveal) -> Self {
        NoteOut {
            author: redact::shown_data(&note.author, mode).into_owned(),
            label: &note.label,
            note: redact::shown_data(&note.note, mode).into_owned(),
            time: redact::shown_data(&note.time, mode).into_owned(),
        }
    }
}

#[derive(Serialize)]
struct CaseOut {
    id: String,
    index: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<String>,
}

#[derive(Serialize)]
struct EvalOut {
    label: String,
    /// The limit that ended the run (an Inspect sample's); absent when it ran to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<String>,
    passed: bool,
    reason: String,
    score: Option<f64>,
    /// Each scorer's verdict when several judged the run (Inspect); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    scorers: Vec<ScorerOut>,
    /// What the evaluation expected (an Inspect sample's target); absent when it says none.
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
}

#[derive(Serialize)]
struct ScorerOut {
    answer: Option<String>,
    explanation: Option<String>,
    /// Whether the value fails the run by itself (`I`, `0`, `false`); which scorers decide is
    /// `--scorer`'s choice, said by `passed`.
    failing: bool,
    name: String,
    /// As the log wrote it: a letter or number as it is, anything else as JSON text.
    value: String,
}

#[derive(Serialize)]
struct TokensOut {
    input: u64,
    output: u64,
}

struct CountsOut<'a>(&'a KindCounts);

impl Serialize for CountsOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut map = serializer.serialize_map(Some(10))?;
        map.serialize_entry("agent", &c.agent)?;
        map.serialize_entry("embedding", &c.embedding)?;
        map.serialize_entry("errors", &c.errors)?;
        map.serialize_entry("llm", &c.llm)?;
        map.serialize_entry("node", &c.node)?;
        map.serialize_entry("other", &c.other)?;
        map.serialize_entry("rerank", &c.rerank)?;
        map.serialize_entry("retrieval", &c.retrieval)?;
        map.serialize_entry("spans", &c.spans)?;
        map.serialize_entry("tool", &c.tool)?;
        map.end()
    }
}

struct ToolCallsOut<'a> {
    inv: &'a Invocation,
    mode: Reveal,
}

impl Serialize for ToolCallsOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct ToolCallOut<'a> {
            call_id: Option<&'a str>,
            name: String,
            span_id: &'a CompactId,
            status: &'static str,
        }
        let calls = &self.inv.summary().tool_calls;
        let mut seq = serializer.serialize_seq(Some(calls.len()))?;
        for c in calls {
            seq.serialize_element(&ToolCallOut {
                call_id: c.call_id(&self.inv.spans),
                name: redact::shown_data(c.name(&self.inv.spans), self.mode).into_owned(),
                span_id: &self.inv.spans[c.span()].span_id,
                status: if c.failed { "error" } else { "ok" },
            })?;
        }
        seq.end()
    }
}

/// The spans in tree order.
struct SpansOut<'a> {
    inv: &'a Invocation,
    mode: Reveal,
}

impl Serialize for SpansOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tree = self.inv.tree();
        let requesters = self.inv.tool_call_requesters();
        let mut seq = serializer.serialize_seq(Some(tree.rows.len()))?;
        for row in &tree.rows {
            let health = tree.health(row.span());
            let span = SpanOut::new(self.inv, row, health, self.mode, &requesters);
            seq.serialize_element(&span)?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct SpanOut<'a> {
    attempt_index: Option<u32>,
    cycle: bool,
    depth: usize,
    duration_ms: f64,
    error_message: Option<String>,
    // Texts are borrowed when showing them changes nothing (most do not).
    error_type: Option<Cow<'a, str>>,
    health: &'static str,
    input: PayloadOut,
    input_tokens: Option<u64>,
    kind: &'static str,
    model: Option<Cow<'a, str>>,
    name: Cow<'a, str>,
    orphan: bool,
    output: PayloadOut,
    output_tokens: Option<u64>,
    parent_span_id: Option<&'a CompactId>,
    provider: Option<Cow<'a, str>>,
    requested_by: Option<&'a CompactId>,
    requested_tool_calls: Option<Vec<RequestedCallOut<'a>>>,
    span_id: &'a CompactId,
    start_unix_nano: u64,
    status: &'static str,
    tool_call_id: Option<&'a str>,
    tool_name: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct RequestedCallOut<'a> {
    id: Option<&'a str>,
    name: Cow<'a, str>,
}

impl<'a> SpanOut<'a> {
    fn new(
        inv: &'a Invocation,
        row: &TreeRow,
        health: Health,
        mode: Reveal,
        requesters: &crate::store::ToolCallRequesters<'a>,
    ) -> Self {
        let span: &'a Span = &inv.spans[row.span()];
        let llm = span.llm();
        let text = |t: Option<&'a str>| t.map(|t| redact::shown_data(t, mode));
        SpanOut {
            attempt_index: span.identity().node.attempt_index,
            cycle: row.cycle,
            depth: row.depth(),
            duration_ms: round3(span.duration_ms()),
            error_message: span
                .error()
                .and_then(|e| redact::error_message(e, mode))
                .map(|m| redact::shown_data(&m, mode).into_owned()),
            error_type: text(span.error_type()),
            health: health.as_str(),
            input: PayloadOut::new(&span.input(), mode),
            input_tokens: llm.and_then(|l| l.input_tokens.get()).map(u64::from),
            kind: span.kind.as_str(),
            model: text(llm.and_then(|l| l.response_model.or(l.model))),
            name: redact::shown_data(&span.name, mode),
            orphan: row.orphan,
            output: PayloadOut::new(&span.output(), mode),
            output_tokens: llm.and_then(|l| l.output_tokens.get()).map(u64::from),
            parent_span_id: span.parent_span_id.as_ref(),
            provider: text(llm.and_then(|l| l.provider)),
            requested_by: requesters
                .of(span)
                .map(|requester| &inv.spans[requester].span_id),
            requested_tool_calls: llm.map(|l| {
                l.requested_tool_calls
                    .iter()
                    .map(|c| RequestedCallOut {
                        id: c.id.as_deref(),
                        name: redact::shown_data(&c.name, mode),
                    })
                    .collect()
            }),
            span_id: &span.span_id,
            start_unix_nano: span.start_unix_nano,
            status: span.status.as_str(),
            tool_call_id: span.tool_call_id(),
            tool_name: text(span.tool_name()),
        }
    }
}

#[derive(Serialize)]
struct PayloadOut {
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    redacted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    shape: Option<Value>,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
}

impl PayloadOut {
    fn new(payload: &Payload, mode: Reveal) -> Self {
        let mut out = PayloadOut {
            bytes: payload.bytes,
            error: None,
            redacted: mode == Reveal::Redacted,
            shape: None,
            state: state_name(payload.state),
            total_bytes: match payload.state {
                PayloadState::Truncated { total_bytes } => Some(total_bytes),
                _ => None,
            },
            value: None,
        };
        if !payload.is_captured() {
            return out;
        }
        match formats::load_payload(payload) {
            Ok(Some(text)) => {
                // Redacted, the shape comes from one pass over the text, not a parsed tree.
                let shown = match mode {
                    Reveal::Redacted => redact::redacted_payload(&text),
                    Reveal::Revealed => redact::present(&redact::parse_payload(&text), mode),
                };
                let shown = match shown {
                    PayloadValue::Json(v) => v,
                    PayloadValue::Text(t) => Value::String(t),
                };
                match mode {
                    Reveal::Redacted => out.shape = Some(shown),
                    Reveal::Revealed => out.value = Some(shown),
                }
            }
            Ok(None) => {}
            Err(e) => out.error = Some(e.to_string()),
        }
        out
    }
}

fn round3(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

fn state_name(state: PayloadState) -> &'static str {
    match state {
        PayloadState::NotCaptured => "not_captured",
        PayloadState::Empty => "empty",
        PayloadState::Present => "present",
        PayloadState::Truncated { .. } => "truncated",
    }
}
