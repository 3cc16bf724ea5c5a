//! `toolcap-tui dump`: the headless view. Text trees or one JSON document, built from the same
//! store the TUI reads, so anything the TUI shows can be asserted in a test.

use std::fmt::Write as _;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::formats;
use std::collections::HashMap;

use crate::gold::check::check_store;
use crate::gold::conversation::passes_for;
use crate::gold::report::{CheckOptions, DiffReport};
use crate::model::Span;
use crate::query::{Context, Match, Query, QueryError};
use crate::redact::{self, PayloadValue, Reveal};
use crate::sources::load::SourceReport;
use crate::store::{Invocation, Store};
use crate::triage::{Facets, GoldOutcome};

pub use super::dump_json::{
    invocation_json, note_json, payload_json, selection_json, to_json, write_selection_json,
};

/// Runs formatted per part (see `in_order`). A run's text is short, so a part of many runs
/// hands the writer tens of kilobytes per wake-up where a small part would wake it for a few.
const RUNS_PER_PART: usize = 64;

/// The invocations `dump` prints, oldest first, with the spans a filter matched.
pub struct Selection<'a> {
    store: &'a Store,
    pub rows: Vec<(&'a Invocation, Option<Match>)>,
    /// The filter's text, when one was given.
    pub query: Option<String>,
    /// The gold comparisons, made on first use: text `dump` never needs them, the JSON's facets,
    /// `is:gold-mismatch` and the report do.
    golds: OnceLock<GoldReports>,
}

/// Every gold report of a store, and which one judges each invocation (a whole-conversation
/// report judges each of its turns).
#[derive(Default)]
struct GoldReports {
    reports: Vec<DiffReport>,
    by_invocation: HashMap<String, usize>,
}

impl GoldReports {
    fn of(store: &Store) -> Self {
        let mut problems = Vec::new();
        let mut golds = GoldReports::default();
        for report in check_store(store, None, CheckOptions::default(), &mut problems) {
            let index = golds.reports.len();
            let ids = match &report.conversation {
                Some(scope) => scope.turns.clone(),
                None => vec![report.invocation.clone()],
            };
            golds
                .by_invocation
                .extend(ids.into_iter().map(|id| (id, index)));
            golds.reports.push(report);
        }
        golds
    }

    fn report(&self, id: &str) -> Option<&DiffReport> {
        self.by_invocation.get(id).map(|&i| &self.reports[i])
    }

    /// The invocation's gold outcome; a turn of a whole-conversation gold is judged by its
    /// share ([`passes_for`]).
    fn outcome(&self, id: &str) -> GoldOutcome {
        self.report(id).map_or(GoldOutcome::Unknown, |r| {
            GoldOutcome::from_score(Some((r.metrics.score, passes_for(r, id))))
        })
    }
}

impl<'a> Selection<'a> {
    /// Every invocation, unfiltered.
    pub fn all(store: &'a Store) -> Self {
        Selection {
            store,
            rows: store
                .oldest_first()
                .into_iter()
                .map(|inv| (inv, None))
                .collect(),
            query: None,
            golds: OnceLock::new(),
        }
    }

    /// The invocations `query` matches; payload text is searched only when `mode` reveals.
    pub fn filtered(store: &'a Store, query: &Query, mode: Reveal) -> Self {
        let golds = query.needs_gold().then(|| GoldReports::of(store));
        let gold = |inv: &Invocation| {
            golds
                .as_ref()
                .map_or(GoldOutcome::Unknown, |g| g.outcome(&inv.id.text()))
        };
        let ctx = Context {
            reveal: mode,
            gold: &gold,
            notes: store.notes(),
        };
        let rows = store
            .oldest_first()
            .into_iter()
            .filter_map(|inv| query.matches(inv, &ctx).map(|m| (inv, Some(m))))
            .collect();
        Selection {
            store,
            rows,
            query: Some(query.text().to_owned()),
            golds: golds.map(OnceLock::from).unwrap_or_default(),
        }
    }

    /// The triage notes of the store's runs.
    pub fn notes(&self) -> &crate::notes::Notes {
        self.store.notes()
    }

    /// The rule that decided the store's evaluations made of several scorers.
    pub fn scorer_rule(&self) -> &crate::model::ScorerRule {
        self.store.scorer_rule()
    }

    fn golds(&self) -> &GoldReports {
        self.golds.get_or_init(|| GoldReports::of(self.store))
    }

    /// The gold report that judges invocation `id`, if a gold applies to it.
    pub fn gold_report(&self, id: &str) -> Option<&DiffReport> {
        self.golds().report(id)
    }

    /// The gold outcome of invocation `id` (unknown when no gold applies).
    pub fn gold(&self, id: &str) -> GoldOutcome {
        self.golds().outcome(id)
    }
}

/// A run's triage note on one line, as `dump` and the report print it: `note: [label] text —
/// author, time`. The text and the author are user text, shown through the masking pass; the
/// label is a plain word ([`crate::notes::check_label`]) and shown as it is.
pub fn note_line(note: &crate::notes::Note, mode: Reveal) -> String {
    let mut line = String::from("note:");
    if !note.label.is_empty() {
        let _ = write!(line, " [{}]", note.label);
    }
    if !note.note.is_empty() {
        line.push(' ');
        redact::push_shown_line(&mut line, &note.note, mode);
    }
    line.push_str(" — ");
    redact::push_shown_line(&mut line, &note.author, mode);
    line.push_str(", ");
    line.push_str(&redact::sanitize_line(&note.time));
    line
}

/// A query error as `dump` prints it: the query, a caret under the position, the message.
pub fn query_error_text(query: &str, error: &QueryError) -> String {
    format!(
        "error: --filter: {}\n  {}\n  {}^\n",
        error.message,
        redact::sanitize_line(query),
        " ".repeat(error.position)
    )
}

pub fn explain_json(reports: &[SourceReport], mode: Reveal) -> Value {
    Value::Array(
        reports
            .iter()
            .map(|r| {
                json!({
                    "source": r.source, "format": r.format, "reason": r.reason,
                    "spans": r.spans,
                    "warnings": r.warnings.iter().map(|w| redact::shown_data(w, mode)).collect::<Vec<_>>(),
                    "severities": r.severities.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

pub fn explain_text(reports: &[SourceReport], mode: Reveal) -> String {
    let mut out = String::from("sources:\n");
    for r in reports {
        let _ = writeln!(
            out,
            "  {} — {} ({}), {} spans",
            redact::sanitize_line(&r.source),
            r.format.unwrap_or("unrecognised"),
            redact::sanitize_line(&r.reason),
            r.spans
        );
        for (w, severity) in r.warnings.iter().zip(&r.severities) {
            let _ = writeln!(
                out,
                "    {}: {}",
                severity.as_str(),
                redact::shown_line(w, mode)
            );
        }
    }
    out.push('\n');
    out
}

/// Matched span indices in tree (pre-)order, the order `spans` lists them.
pub(super) fn matched_in_tree_order(inv: &Invocation, matched: &Match) -> Vec<usize> {
    let mut spans = matched.spans.clone();
    let tree = inv.tree();
    spans.sort_by_key(|&i| tree.row_of(i).unwrap_or(usize::MAX));
    spans
}

/// `dump --stats`: the store's memory by structure, and the process's peak resident size.
pub fn memory_text(store: &Store) -> String {
    // Read before the breakdown: counting each shared allocation once takes a set of their
    // addresses, megabytes that are the count's, not the store's.
    let heap = crate::system::allocator_bytes();
    let process = [
        ("process resident size at the end", "VmRSS:"),
        ("process peak resident size", "VmHWM:"),
    ]
    .map(|(label, field)| (label, process_status_bytes(field)));
    let breakdown = store.memory_breakdown();
    let total = breakdown.total().max(1);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut out = format!(
        "memory of {} invocations, {} spans (heap bytes by structure; allocator overhead not counted):\n",
        store.len(),
        store.stats().spans_kept
    );
    for (name, bytes) in &breakdown.rows {
        let _ = writeln!(
            out,
            "  {name:<38} {:>9.1} MiB {:>5.1}%",
            mib(*bytes),
            *bytes as f64 * 100.0 / total as f64
        );
    }
    let _ = writeln!(out, "  {:<38} {:>9.1} MiB", "total", mib(breakdown.total()));
    // What the breakdown leaves out: each allocation's own overhead, and freed room the
    // allocator keeps. Together they are a sizeable share of the heap.
    if let Some((in_use, held)) = heap {
        let _ = writeln!(
            out,
            "  {:<38} {:>9.1} MiB",
            "heap in use (allocator)",
            mib(in_use)
        );
        let _ = writeln!(
            out,
            "  {:<38} {:>9.1} MiB",
            "heap held from the system",
            mib(held)
        );
    }
    // Printed once the output is written: the resident size then is what the store and the
    // allocator keep; the peak also counts what the load and the output held while they ran
    // (pieces in flight, parsed batches, parts being formatted).
    for (label, bytes) in process {
        if let Some(bytes) = bytes {
            let _ = writeln!(out, "  {label:<38} {:>9.1} MiB", mib(bytes));
        }
    }
    out
}

/// A size the system reports in `/proc/self/status` (`VmRSS:`, `VmHWM:`), where it does.
fn process_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Text trees, one per invocation, oldest first.
pub fn to_text(store: &Store, mode: Reveal) -> String {
    selection_text(store, &Selection::all(store), mode)
}

/// Text trees of the selected invocations; under a filter, a header says `k of n` and the
/// matched spans' lines start with `»`.
pub fn selection_text(store: &Store, selection: &Selection, mode: Reveal) -> String {
    let mut out = Vec::new();
    // Writing to memory cannot fail, and every part written is a `String`.
    let _ = write_selection_text(&mut out, store, selection, mode);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`selection_text`] written to `out` a window of invocations at a time, formatted on every
/// core (`dump` on a big store never holds its whole output).
pub fn write_selection_text(
    out: &mut dyn std::io::Write,
    store: &Store,
    selection: &Selection,
    mode: Reveal,
) -> std::io::Result<()> {
    if let Some(query) = &selection.query {
        let header = format!(
            "filter: {} — {} of {} invocations\n\n",
            redact::sanitize_line(query),
            selection.rows.len(),
            store.len()
        );
        out.write_all(header.as_bytes())?;
    }
    super::in_order::write_in_order(
        out,
        &selection.rows,
        RUNS_PER_PART,
        |_, (inv, matched), text: &mut String| {
            let facets = Facets::of(inv, selection.gold(&inv.id.text()));
            let note = selection.notes().of_run(&inv.id.text());
            write_invocation(text, inv, &facets, note, mode, matched.as_ref());
            text.push('\n');
        },
    )?;
    let mut out_text = String::new();
    let (problems, notes): (Vec<_>, Vec<_>) = store.problems().iter().partition(|p| p.is_counted());
    for (heading, list) in [("problems", problems), ("notes", notes)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out_text, "{heading} ({}):", list.len());
        for p in list {
            let _ = writeln!(out_text, "  {}", redact::shown_line(&p.to_string(), mode));
        }
    }
    if store.is_empty() {
        out_text.push_str("no invocations loaded\n");
    }
    out.write_all(out_text.as_bytes())
}

/// One invocation's text: a head led by its verdict (the failing facets' glyphs and names, as
/// the TUI list shows them), its evaluator's verdict, then its tree.
fn write_invocation(
    out: &mut String,
    inv: &Invocation,
    facets: &Facets,
    note: Option<&crate::notes::Note>,
    mode: Reveal,
    matched: Option<&Match>,
) {
    let s = inv.summary();
    out.push_str(&facets.glyphs());
    out.push(' ');
    redact::push_shown_line(out, &s.name, mode);
    let failing: Vec<&str> = facets.list().into_iter().map(|f| f.name()).collect();
    let _ = write!(
        out,
        " [{}] {:.1} ms · {} spans · {} tool calls",
        if failing.is_empty() {
            "ok".to_owned()
        } else {
            failing.join("+")
        },
        s.duration_ms(),
        s.counts.spans,
        s.tool_calls.len(),
    );
    if s.failed_tool_calls > 0 {
        let _ = write!(out, " ({} failed)", s.failed_tool_calls);
    }
    if s.tokens() > 0 {
        let _ = write!(out, " · tokens {}→{}", s.input_tokens, s.output_tokens);
    }
    let _ = writeln!(
        out,
        " · {} · {}",
        redact::sanitize_line(&inv.id.text()),
        s.formats().collect::<Vec<_>>().join("+")
    );
    if let Some(eval) = inv.eval() {
        let _ = writeln!(
            out,
            "  eval: {} {}{}",
            if eval.passed { "PASS" } else { "FAIL" },
            redact::shown_line(&eval.label, mode),
            if eval.reason.is_empty() {
                String::new()
            } else {
                format!(" — {}", redact::shown_line(&eval.shown_reason(mode), mode))
            }
        );
        if let Some(target) = &eval.target {
            let target = redact::shown_quote(target, mode);
            let _ = writeln!(out, "  target: {}", redact::shown_line(&target, mode));
        }
        if let Some(limit) = &eval.limit {
            let _ = writeln!(out, "  limit: {}", redact::shown_line(limit, mode));
        }
    }
    if let Some(note) = note {
        out.push_str("  ");
        out.push_str(&note_line(note, mode));
        out.push('\n');
    }
    let tree = inv.tree();
    for row in &tree.rows {
        let span = &inv.spans[row.span()];
        let marker = match matched {
            Some(m) if m.spans.binary_search(&row.span()).is_ok() => "» ",
            _ => "  ",
        };
        out.push_str(marker);
        for _ in 0..row.depth().min(64) {
            out.push_str("  ");
        }
        write_span_line(out, span, tree.health(row.span()), row, inv.eval(), mode);
        if mode == Reveal::Revealed {
            write_revealed_payloads(out, span, row.depth());
        }
    }
}

fn write_span_line(
    out: &mut String,
    span: &Span,
    health: crate::model::Health,
    row: &crate::store::TreeRow,
    verdict: Option<&crate::model::EvalVerdict>,
    mode: Reveal,
) {
    let status = match health {
        crate::model::Health::Error => "error",
        crate::model::Health::Degraded => "degraded",
        crate::model::Health::Ok => "ok",
    };
    out.push(span.kind.glyph());
    out.push(' ');
    redact::push_shown_line(out, &span.name, mode);
    let _ = write!(out, " [{status}] {:.1} ms", span.duration_ms());
    if let Some(tool) = span.tool_name() {
        out.push_str(" tool=");
        redact::push_shown_line(out, tool, mode);
    }
    if let Some(id) = span.tool_call_id() {
        let _ = write!(out, " call_id={}", redact::sanitize_line(id));
    }
    if let Some(model) = span.model() {
        out.push_str(" model=");
        redact::push_shown_line(out, model, mode);
    }
    if let Some(attempt) = span.identity().node.attempt_index {
        let _ = write!(out, " attempt={attempt}");
    }
    if row.orphan {
        out.push_str(" (orphan: parent missing)");
    }
    if row.cycle {
        out.push_str(" (cycle: its parent chain loops back to it)");
    }
    if span.status.is_error() {
        let kind = span.error_type().unwrap_or("error");
        let message = span
            .error()
            .and_then(|e| redact::error_message(e, mode))
            .unwrap_or_default();
        // An evaluator span's message that repeats the verdict printed in the head is said once.
        let repeats_verdict = span.is_evaluator()
            && verdict.is_some_and(|v| message == v.label || message == v.reason);
        let _ = write!(out, " ✗ {}", redact::shown_line(kind, mode));
        if !repeats_verdict {
            let _ = write!(out, ": {}", redact::shown_line(&message, mode));
        }
    }
    out.push('\n');
}

fn write_revealed_payloads(out: &mut String, span: &Span, depth: usize) {
    for (label, payload) in [("in", span.input()), ("out", span.output())] {
        if !payload.is_captured() {
            continue;
        }
        let shown = match formats::load_payload(&payload) {
            Ok(Some(text)) => {
                match redact::present(&redact::parse_payload(&text), Reveal::Revealed) {
                    PayloadValue::Json(v) => v.to_string(),
                    PayloadValue::Text(t) => t,
                }
            }
            Ok(None) => continue,
            Err(e) => format!("<{e}>"),
        };
        let mut line = redact::sanitize_line(&shown);
        if line.chars().count() > 240 {
            line = line.chars().take(240).collect::<String>() + "…";
        }
        let _ = writeln!(out, "  {}    {label}: {line}", "  ".repeat(depth.min(64)));
    }
}
