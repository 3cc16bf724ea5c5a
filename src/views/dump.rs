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
use crate::model::{Payload, PayloadState, Span};
use crate::query::{Context, Match, Query, QueryError};
use crate::redact::{self, PayloadValue, Reveal};
use crate::sources::load::SourceReport;
use crate::store::{Invocation, Store};
use crate::triage::{Facets, GoldOutcome};

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
                .map_or(GoldOutcome::Unknown, |g| g.outcome(&inv.id))
        };
        let ctx = Context {
            reveal: mode,
            gold: &gold,
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

/// The `dump --json` document (schema in README.md).
pub fn to_json(store: &Store, mode: Reveal) -> Value {
    selection_json(store, &Selection::all(store), mode)
}

/// The `dump --json` document for the selected invocations; a filtered one adds `filter`
/// (query, matched, of) and each invocation's `matched_span_ids` (tree order).
pub fn selection_json(store: &Store, selection: &Selection, mode: Reveal) -> Value {
    let mut doc = document_fields(store, selection, mode);
    doc.insert(
        "invocations".into(),
        Value::Array(
            selection
                .rows
                .iter()
                .map(|row| selected_json(selection, row, mode))
                .collect(),
        ),
    );
    Value::Object(doc)
}

/// One listed invocation as the document shows it: its JSON, facets, gold outcome and the
/// spans a filter matched.
fn selected_json(selection: &Selection, row: &(&Invocation, Option<Match>), mode: Reveal) -> Value {
    let (inv, matched) = row;
    let mut doc = invocation_json(inv, mode);
    let gold = selection.gold(&inv.id);
    let facets = Facets::of(inv, gold);
    doc["failing"] = json!(facets.failing());
    doc["facets"] = json!(
        facets
            .list()
            .into_iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
    );
    match gold {
        GoldOutcome::Unknown => {}
        GoldOutcome::Matches { score } | GoldOutcome::Differs { score } => {
            doc["gold"] = json!({"matches": !facets.gold_mismatch(), "score": score});
        }
    }
    if let Some(matched) = matched {
        doc["matched_span_ids"] = json!(
            matched_in_tree_order(inv, matched)
                .into_iter()
                .map(|i| inv.spans[i].span_id.as_str())
                .collect::<Vec<_>>()
        );
    }
    doc
}

/// The document's fields other than `invocations`: problems, stats, and the filter if any.
fn document_fields(
    store: &Store,
    selection: &Selection,
    mode: Reveal,
) -> serde_json::Map<String, Value> {
    let problems: Vec<Value> = store
        .problems()
        .iter()
        .map(|p| {
            json!({
                "source": p.source, "line": p.line, "message": redact::shown_data(&p.message, mode),
                "severity": p.severity.as_str(),
            })
        })
        .collect();
    let stats = store.stats();
    let mut doc = serde_json::Map::new();
    doc.insert("problems".into(), Value::Array(problems));
    doc.insert(
        "stats".into(),
        json!({
            "spans_seen": stats.spans_seen, "spans_kept": stats.spans_kept,
            "duplicate_spans": stats.duplicate_spans,
        }),
    );
    if let Some(query) = &selection.query {
        doc.insert(
            "filter".into(),
            json!({"query": query, "matched": selection.rows.len(), "of": store.len()}),
        );
    }
    doc
}

/// Writes exactly `to_string_pretty(selection_json(..) + extra) + "\n"`, one invocation at a
/// time: the whole document never exists in memory (a 14 MB trace file made a 470 MiB one).
pub fn write_selection_json(
    out: &mut impl std::io::Write,
    store: &Store,
    selection: &Selection,
    mode: Reveal,
    extra: Vec<(&str, Value)>,
) -> std::io::Result<()> {
    let mut fields = document_fields(store, selection, mode);
    for (key, value) in extra {
        fields.insert(key.into(), value);
    }
    // serde_json's maps keep keys sorted; the invocations take their place among them.
    let mut keys: Vec<&str> = fields.keys().map(String::as_str).collect();
    keys.push("invocations");
    keys.sort_unstable();
    out.write_all(b"{")?;
    for (n, key) in keys.iter().enumerate() {
        out.write_all(if n == 0 { b"\n  " } else { b",\n  " })?;
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b": ")?;
        if *key == "invocations" {
            if selection.rows.is_empty() {
                out.write_all(b"[]")?;
                continue;
            }
            out.write_all(b"[")?;
            for (i, row) in selection.rows.iter().enumerate() {
                out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
                write_indented(out, &selected_json(selection, row, mode), "    ")?;
            }
            out.write_all(b"\n  ]")?;
        } else if let Some(value) = fields.get(*key) {
            write_indented(out, value, "  ")?;
        }
    }
    out.write_all(b"\n}\n")
}

/// A value pretty-printed as if nested at `indent`: every line after the first is indented
/// (pretty JSON has no raw newline inside a string, so lines are structure).
fn write_indented(
    out: &mut impl std::io::Write,
    value: &Value,
    indent: &str,
) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.write_all(b"\n")?;
            out.write_all(indent.as_bytes())?;
        }
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Matched span indices in tree (pre-)order, the order `spans` lists them.
fn matched_in_tree_order(inv: &Invocation, matched: &Match) -> Vec<usize> {
    let mut spans = matched.spans.clone();
    let row_of = &inv.tree().row_of_span;
    spans.sort_by_key(|&i| row_of.get(i).copied().unwrap_or(usize::MAX));
    spans
}

pub fn invocation_json(inv: &Invocation, mode: Reveal) -> Value {
    let summary = inv.summary();
    let counts = &summary.counts;
    let tree = inv.tree();
    let spans: Vec<Value> = tree
        .rows
        .iter()
        .map(|row| {
            let span = &inv.spans[row.span];
            let llm = span.llm.as_ref();
            let text = |t: Option<&str>| t.map(|t| redact::shown_data(t, mode));
            json!({
                "span_id": span.span_id,
                "parent_span_id": span.parent_span_id,
                "depth": row.depth,
                "orphan": row.orphan,
                "cycle": row.cycle,
                "name": redact::shown_data(&span.name, mode),
                "kind": span.kind.as_str(),
                "status": span.status.as_str(),
                "health": inv.health_of(row.span).as_str(),
                "error_type": text(span.error_type()),
                "error_message": span.error.as_ref()
                    .and_then(|e| redact::error_message(e, mode))
                    .map(|m| redact::shown_data(&m, mode)),
                "start_unix_nano": span.start_unix_nano,
                "duration_ms": round3(span.duration_ms()),
                "tool_name": text(span.tool_name()),
                "tool_call_id": span.tool_call_id(),
                "requested_by": span.tool.as_ref().and_then(|t| t.requested_by.as_deref()),
                "model": text(span.model()),
                "provider": text(llm.and_then(|l| l.provider.as_deref())),
                "input_tokens": llm.and_then(|l| l.input_tokens),
                "output_tokens": llm.and_then(|l| l.output_tokens),
                "requested_tool_calls": llm.map(|l| l.requested_tool_calls.iter()
                    .map(|c| json!({"id": c.id, "name": redact::shown_data(&c.name, mode)})).collect::<Vec<_>>()),
                "attempt_index": span.identity.attempt_index,
                "input": payload_json(&span.input, mode),
                "output": payload_json(&span.output, mode),
            })
        })
        .collect();
    let mut doc = json!({
        "id": inv.id,
        "name": redact::shown_data(&summary.name, mode),
        "status": summary.health.as_str(),
        "format": summary.formats.first().copied().unwrap_or("unknown"),
        "formats": summary.formats,
        "start_unix_nano": summary.start_unix_nano,
        "duration_ms": round3(summary.duration_ms()),
        "counts": {
            "spans": counts.spans, "llm": counts.llm, "tool": counts.tool,
            "embedding": counts.embedding, "rerank": counts.rerank, "retrieval": counts.retrieval,
            "agent": counts.agent, "node": counts.node, "other": counts.other,
            "errors": counts.errors,
        },
        "tokens": {"input": summary.input_tokens, "output": summary.output_tokens},
        "tool_calls": summary.tool_calls.iter().map(|c| json!({
            "name": redact::shown_data(&c.name, mode), "call_id": c.call_id,
            "status": if c.failed { "error" } else { "ok" }, "span_id": c.span_id,
        })).collect::<Vec<_>>(),
        "spans": spans,
    });
    if let Some(eval) = &inv.eval {
        doc["eval"] = json!({
            "passed": eval.passed, "score": eval.score,
            "label": redact::shown_data(&eval.label, mode),
            "reason": redact::shown_data(&eval.reason, mode),
        });
    }
    doc
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

/// A payload in `dump --json`: size and state always; the value only when revealed.
pub fn payload_json(payload: &Payload, mode: Reveal) -> Value {
    let mut out = json!({
        "redacted": mode == Reveal::Redacted,
        "bytes": payload.bytes,
        "state": state_name(payload.state),
    });
    if let PayloadState::Truncated { total_bytes } = payload.state {
        out["total_bytes"] = json!(total_bytes);
    }
    if !payload.is_captured() {
        return out;
    }
    match formats::load_payload(payload) {
        Ok(Some(text)) => {
            let parsed = redact::parse_payload(&text);
            match redact::present(&parsed, mode) {
                PayloadValue::Json(v) if mode == Reveal::Redacted => out["shape"] = v,
                PayloadValue::Text(t) if mode == Reveal::Redacted => out["shape"] = json!(t),
                PayloadValue::Json(v) => out["value"] = v,
                PayloadValue::Text(t) => out["value"] = json!(t),
            }
        }
        Ok(None) => {}
        Err(e) => out["error"] = json!(e),
    }
    out
}

/// Text trees, one per invocation, oldest first.
pub fn to_text(store: &Store, mode: Reveal) -> String {
    selection_text(store, &Selection::all(store), mode)
}

/// Text trees of the selected invocations; under a filter, a header says `k of n` and the
/// matched spans' lines start with `»`.
pub fn selection_text(store: &Store, selection: &Selection, mode: Reveal) -> String {
    let mut out = String::new();
    if let Some(query) = &selection.query {
        let _ = writeln!(
            out,
            "filter: {} — {} of {} invocations\n",
            redact::sanitize_line(query),
            selection.rows.len(),
            store.len()
        );
    }
    for (inv, matched) in &selection.rows {
        write_invocation(&mut out, inv, mode, matched.as_ref());
        out.push('\n');
    }
    let (problems, notes): (Vec<_>, Vec<_>) = store.problems().iter().partition(|p| p.is_counted());
    for (heading, list) in [("problems", problems), ("notes", notes)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{heading} ({}):", list.len());
        for p in list {
            let _ = writeln!(out, "  {}", redact::shown_line(&p.to_string(), mode));
        }
    }
    if store.is_empty() {
        out.push_str("no invocations loaded\n");
    }
    out
}

fn write_invocation(out: &mut String, inv: &Invocation, mode: Reveal, matched: Option<&Match>) {
    let s = inv.summary();
    let _ = write!(
        out,
        "{} {} [{}] {:.1} ms · {} spans · {} tool calls",
        s.health.glyph(),
        redact::shown_line(&s.name, mode),
        s.health.as_str(),
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
        redact::sanitize_line(&inv.id),
        s.formats.join("+")
    );
    if let Some(eval) = &inv.eval {
        let _ = writeln!(
            out,
            "  eval: {} {}{}",
            if eval.passed { "PASS" } else { "FAIL" },
            redact::shown_line(&eval.label, mode),
            if eval.reason.is_empty() {
                String::new()
            } else {
                format!(" — {}", redact::shown_line(&eval.reason, mode))
            }
        );
    }
    for row in &inv.tree().rows {
        let span = &inv.spans[row.span];
        let marker = match matched {
            Some(m) if m.spans.binary_search(&row.span).is_ok() => "» ",
            _ => "  ",
        };
        let _ = write!(out, "{marker}{}", "  ".repeat(row.depth.min(64)));
        write_span_line(out, span, inv.health_of(row.span), row, mode);
        if mode == Reveal::Revealed {
            write_revealed_payloads(out, span, row.depth);
        }
    }
}

fn write_span_line(
    out: &mut String,
    span: &Span,
    health: crate::model::Health,
    row: &crate::store::TreeRow,
    mode: Reveal,
) {
    let status = match health {
        crate::model::Health::Error => "error",
        crate::model::Health::Degraded => "degraded",
        crate::model::Health::Ok => "ok",
    };
    let _ = write!(
        out,
        "{} {} [{}] {:.1} ms",
        span.kind.glyph(),
        redact::shown_line(&span.name, mode),
        status,
        span.duration_ms()
    );
    if let Some(tool) = span.tool_name() {
        let _ = write!(out, " tool={}", redact::shown_line(tool, mode));
    }
    if let Some(id) = span.tool_call_id() {
        let _ = write!(out, " call_id={}", redact::sanitize_line(id));
    }
    if let Some(model) = span.model() {
        let _ = write!(out, " model={}", redact::shown_line(model, mode));
    }
    if let Some(attempt) = span.identity.attempt_index {
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
            .error
            .as_ref()
            .and_then(|e| redact::error_message(e, mode))
            .unwrap_or_default();
        let _ = write!(
            out,
            " ✗ {}: {}",
            redact::shown_line(kind, mode),
            redact::shown_line(&message, mode)
        );
    }
    out.push('\n');
}

fn write_revealed_payloads(out: &mut String, span: &Span, depth: usize) {
    for (label, payload) in [("in", &span.input), ("out", &span.output)] {
        if !payload.is_captured() {
            continue;
        }
        let shown = match formats::load_payload(payload) {
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
