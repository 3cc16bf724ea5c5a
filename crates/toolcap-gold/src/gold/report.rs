//! One invocation's gold-vs-actual report: rows, metrics, arksim verdict, and its text and
//! JSON forms. The TUI diff view renders the same report with the helpers here.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use super::align::{Alignment, Row, RowKind, align, in_order_match, position_rows};
use super::arksim::{ArksimVerdict, match_trajectory};
use super::compare::{ArgDiff, ArgVerdict, CompareMode, render_value};
use super::metrics::{Metrics, ToolLists, WEIGHT_KEYS, Weights, evaluate, tool_lists};
use super::{ActualCall, Args, GoldSpec};
use crate::redact::{self, Reveal};

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CheckOptions {
    pub mode: CompareMode,
    pub alignment: Alignment,
    pub weights: Weights,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiffReport {
    pub invocation: String,
    pub name: Option<String>,
    pub gold: Arc<GoldSpec>,
    pub actual: Vec<ActualCall>,
    pub metrics: Metrics,
    pub arksim: Option<ArksimVerdict>,
    pub rows: Vec<Row>,
    pub options: CheckOptions,
    /// Caveats about the inputs (uncaptured arguments, skipped gold items, …).
    pub notes: Vec<String>,
    /// What the evaluator that produced the run said itself (arksim's own verdicts), each line
    /// naming the evaluator and where it said it. Empty when no evaluator judged the run.
    pub evaluator: Vec<String>,
    /// Set when the gold is about a whole conversation: its turns and which turn each actual
    /// call came from.
    pub conversation: Option<ConversationScope>,
}

/// The turns a whole-conversation gold was evaluated over.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConversationScope {
    pub conversation_id: String,
    /// Turn invocation ids, in turn order.
    pub turns: Vec<String>,
    /// For each actual call, the index in `turns` of the turn that made it.
    pub call_turn: Vec<usize>,
    /// The turn the gold was filed under (where arksim reports trajectory failures; missing
    /// calls are that turn's share).
    pub holder: Option<usize>,
    /// The turn being looked at (the TUI marks its rows and shows its share).
    pub focus: Option<usize>,
}

impl DiffReport {
    pub fn build(
        invocation: impl Into<String>,
        gold: impl Into<Arc<GoldSpec>>,
        actual: Vec<ActualCall>,
        options: CheckOptions,
    ) -> Self {
        let gold: Arc<GoldSpec> = gold.into();
        let metrics = evaluate(&gold.calls, &actual, options.mode, options.weights);
        let arksim = gold
            .match_mode
            .is_some()
            .then(|| match_trajectory(&actual, &gold));
        let rows = rows_for(&gold, &actual, options, &metrics.pairing);
        let uncaptured = actual.iter().filter(|c| c.args.is_none()).count();
        let mut notes = Vec::new();
        if uncaptured > 0 {
            notes.push(format!(
                "{uncaptured} call(s) have no captured arguments; they are scored as {{}}"
            ));
        }
        DiffReport {
            invocation: invocation.into(),
            name: None,
            gold,
            actual,
            metrics,
            arksim,
            rows,
            options,
            notes,
            evaluator: Vec::new(),
            conversation: None,
        }
    }

    /// Re-lines the rows with another policy (metrics and the verdict do not change).
    pub fn realign(&mut self, alignment: Alignment) {
        self.options.alignment = alignment;
        self.rows = rows_for(
            &self.gold,
            &self.actual,
            self.options,
            &self.metrics.pairing,
        );
    }

    /// Whether the run matches its gold. It never depends on the alignment the rows are drawn
    /// with: an arksim assertion is judged by its own `match_mode` rules (recomputed here); any
    /// other gold is an ordered trajectory, matched when the run made exactly the gold's calls
    /// in the gold's order, each with acceptable arguments and none failed
    /// ([`in_order_match`]).
    pub fn passed(&self) -> bool {
        match &self.arksim {
            Some(verdict) => verdict.matched,
            None => in_order_match(&self.gold.calls, &self.actual, self.options.mode),
        }
    }

    /// Why the gold's own rules accept a row that is not a plain match (arksim's modes allow
    /// reordering, extra or skipped calls, and never look at call errors).
    pub fn tolerated(&self, row: &Row) -> Option<&'static str> {
        let mode = self.gold.match_mode.as_deref()?;
        let unordered = matches!(mode, "unordered" | "contains" | "within");
        match row.kind {
            RowKind::Moved if unordered && row.args_ok => Some("order not checked"),
            RowKind::Failed => Some("call errors not checked"),
            RowKind::Extra if mode == "contains" => Some("extra calls allowed"),
            RowKind::Missing if mode == "within" => Some("calls may be skipped"),
            _ => None,
        }
    }

    /// Whether a row counts against the gold (differs, and the gold's rules do not allow it).
    pub fn row_differs(&self, row: &Row) -> bool {
        row.differs() && self.tolerated(row).is_none()
    }

    /// `tool(key=value, …)` for one side of a row, shaped by the reveal mode and masked
    /// (tool names and argument keys are free text too); still to be made inert for a screen.
    pub fn gold_cell(&self, row: &Row, reveal: Reveal) -> String {
        row.gold
            .and_then(|g| self.gold.calls.get(g))
            .map(|c| match &c.args {
                None => format!("{}(…any args…)", c.tool),
                Some(args) => call_text(&c.tool, args, reveal),
            })
            .map(|cell| redact::mask_text(&cell, reveal).into_owned())
            .unwrap_or_default()
    }

    pub fn actual_cell(&self, row: &Row, reveal: Reveal) -> String {
        row.actual
            .and_then(|a| self.actual.get(a))
            .map(|c| match &c.args {
                None => format!("{}(?)", c.name),
                Some(args) => call_text(&c.name, args, reveal),
            })
            .map(|cell| redact::mask_text(&cell, reveal).into_owned())
            .unwrap_or_default()
    }

    /// The verdict column: kind plus the failure message, if any, masked (the label quotes
    /// the gold's match mode as the trace wrote it).
    pub fn verdict_text(&self, row: &Row, reveal: Reveal) -> String {
        let mut text = redact::mask_text(&self.verdict_label(row), reveal).into_owned();
        if let Some(error) = row
            .actual
            .and_then(|a| self.actual.get(a))
            .filter(|_| row.failed)
            .and_then(|c| c.shown_error(reveal))
        {
            let _ = write!(text, ": {}", redact::sanitize_line(&error));
        }
        text
    }

    /// The verdict without the failure message (for narrow columns).
    pub fn verdict_label(&self, row: &Row) -> String {
        let mut text = match row.kind {
            RowKind::Match => "✓ match".to_string(),
            RowKind::Moved => {
                let from = row.actual.map_or(0, |a| a + 1);
                let mut t = format!("↕ moved (actual #{from})");
                if !row.args_ok {
                    t.push_str(", args differ");
                }
                t
            }
            RowKind::Failed => "✗ failed".to_string(),
            RowKind::ArgMismatch => "≠ argument mismatch".to_string(),
            RowKind::WrongTool => "≠ wrong tool".to_string(),
            RowKind::Missing => "− missing".to_string(),
            RowKind::Extra => "+ extra".to_string(),
        };
        if row.failed && row.kind != RowKind::Failed {
            text.push_str(", call failed");
        }
        if let Some(why) = self.tolerated(row) {
            let mode = self.gold.match_mode.as_deref().unwrap_or("");
            let _ = write!(text, " (allowed: {why} in {mode} mode)");
        }
        text
    }

    /// Per-argument lines for a row (empty when every key is plainly equal), masked.
    pub fn arg_lines(&self, row: &Row, reveal: Reveal) -> Vec<String> {
        let mut out = Vec::new();
        if let (RowKind::WrongTool, Some(g), Some(a)) = (
            row.kind,
            row.gold.and_then(|g| self.gold.calls.get(g)),
            row.actual.and_then(|a| self.actual.get(a)),
        ) {
            {
                out.push(format!(
                    "tool: {} → {}",
                    redact::sanitize_line(&g.tool),
                    redact::sanitize_line(&a.name)
                ));
            }
        }
        for diff in &row.args {
            if diff.verdict == ArgVerdict::Equal {
                continue;
            }
            out.extend(arg_diff_lines(diff, reveal));
        }
        for line in &mut out {
            if let Cow::Owned(masked) = redact::mask_text(line, reveal) {
                *line = masked;
            }
        }
        out
    }

    pub fn tool_lists(&self) -> ToolLists {
        tool_lists(&self.gold.calls, &self.actual)
    }

    /// Rows that differ, for `n`/`N` navigation.
    pub fn differing_rows(&self) -> Vec<usize> {
        (0..self.rows.len())
            .filter(|&i| self.row_differs(&self.rows[i]))
            .collect()
    }

    /// The metrics as short display lines, each value with its counts, rounded.
    pub fn metric_lines(&self) -> Vec<String> {
        let m = &self.metrics;
        let e = &m.efficiency;
        let t = &m.tool_correctness;
        let mut lines = vec![
            format!(
                "score {} ({})  selection {}/{}={}  args {}  sequence {} edit(s)/{} → {}",
                fmt2(m.score),
                m.grade,
                m.selected_calls,
                m.trace_calls,
                fmt2(m.selection_accuracy),
                argument_counts(m),
                m.sequence.edit_distance,
                m.sequence.max_len,
                fmt2(m.sequence.sequence_accuracy),
            ),
            format!(
                "trajectory {}/{} steps × {} = {}  invocation {}  tools {}/{}  redundant {}/{}  identical {}  errors {}/{}  retries {}  required {}",
                m.trajectory.correct_steps,
                m.trajectory.total_expected_steps,
                fmt2(m.trajectory.path_efficiency),
                fmt2(m.trajectory.trajectory_accuracy),
                fmt2(m.invocation_accuracy),
                t.correct_count,
                t.total_expected,
                e.redundant_count,
                e.total_calls,
                e.identical_count,
                e.error_count,
                e.total_calls,
                e.retry_after_error_count,
                match m.required_call_recall {
                    Some(_) => format!("{} of {} met", m.required_calls_met, m.gold_calls),
                    None => "n/a".into(),
                },
            ),
        ];
        let mut third = format!(
            "weights {}  compare {}  align {}",
            WEIGHT_KEYS
                .iter()
                .zip(m.weights.0)
                .map(|(k, w)| format!("{}={}", short_weight(k), fmt2(w)))
                .collect::<Vec<_>>()
                .join(" "),
            self.options.mode.as_str(),
            self.options.alignment.as_str(),
        );
        let t = self.tool_lists();
        if !t.missing_tools.is_empty() {
            let names = redact::sanitize_line(&t.missing_tools.join(", "));
            let _ = write!(third, "  missing tools [{names}]");
        }
        if !t.extra_tools.is_empty() {
            let names = redact::sanitize_line(&t.extra_tools.join(", "));
            let _ = write!(third, "  extra tools [{names}]");
        }
        lines.push(third);
        lines.extend(self.verdict_lines());
        lines
    }

    /// Who judged what: toolcap's recomputation of an arksim assertion (labelled as toolcap's),
    /// then what the evaluator itself wrote, quoted and attributed, only when it wrote it.
    pub fn verdict_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(v) = &self.arksim {
            let mut line = arksim_line(v, self.gold.match_mode.as_deref().unwrap_or(""));
            if let Some(scope) = &self.conversation {
                let _ = write!(line, "  over all {} turn(s)", scope.turns.len());
            }
            lines.push(line);
        }
        lines.extend(self.evaluator.iter().map(|l| redact::sanitize_line(l)));
        lines
    }

    /// The side-by-side text of `check`.
    pub fn to_text(&self, reveal: Reveal) -> String {
        const CELL: usize = 38;
        let mut out = String::new();
        let status = if self.passed() {
            "toolcap gold: ✓ MATCHES"
        } else {
            "toolcap gold: ✗ DIFFERS"
        };
        let _ = writeln!(
            out,
            "━━ {}{}  gold: {}  {status}",
            redact::shown_line(&self.invocation, reveal),
            self.name
                .as_deref()
                .map(|n| format!(" ({})", redact::shown_line(n, reveal)))
                .unwrap_or_default(),
            redact::shown_line(&self.gold.source, reveal),
        );
        for line in self.metric_lines() {
            let _ = writeln!(out, "{}", redact::shown_line(&line, reveal));
        }
        for note in &self.notes {
            let _ = writeln!(out, "! {}", redact::shown_line(note, reveal));
        }
        let _ = writeln!(
            out,
            "{:>3}  {} │ {} │ verdict",
            "#",
            pad("gold", CELL),
            pad("actual", CELL)
        );
        for (i, row) in self.rows.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>3}  {} │ {} │ {}",
                i + 1,
                pad(
                    &redact::shown_line(&self.gold_cell(row, reveal), reveal),
                    CELL
                ),
                pad(
                    &redact::shown_line(&self.actual_cell(row, reveal), reveal),
                    CELL
                ),
                redact::shown_line(&self.verdict_text(row, reveal), reveal),
            );
            for line in self.arg_lines(row, reveal) {
                let _ = writeln!(out, "       {}", redact::shown_line(&line, reveal));
            }
        }
        out
    }
}

/// The lines of each alignment, except that a run matching an ordered gold is drawn as the
/// one pairing that makes it match (so no alignment can show a ≠ row under a ✓ verdict).
fn rows_for(
    gold: &GoldSpec,
    actual: &[ActualCall],
    options: CheckOptions,
    pairing: &[Option<usize>],
) -> Vec<Row> {
    if gold.match_mode.is_none() && in_order_match(&gold.calls, actual, options.mode) {
        return position_rows(&gold.calls, actual, options.mode);
    }
    align(
        &gold.calls,
        actual,
        options.alignment,
        options.mode,
        pairing,
    )
}

/// Argument precision and recall with the counts behind them, saying why when a count has
/// nothing to count (never a bare `0/0` beside calls that exist).
pub fn argument_counts(m: &Metrics) -> String {
    let a = &m.arguments;
    let f1 = fmt2(a.f1);
    if m.gold_calls == 0 && m.trace_calls == 0 {
        return format!("F1 {f1} (no calls on either side)");
    }
    if a.expected == 0 && a.actual == 0 && a.vacuous_matches > 0 {
        return format!(
            "F1 {f1} ({} paired call(s), no argument keys to compare)",
            a.vacuous_matches
        );
    }
    let precision = if a.actual > 0 {
        format!("P {}/{}", a.correct, a.actual)
    } else if m.trace_calls == 0 {
        "P – (no actual call)".to_string()
    } else if m.gold_calls == 0 {
        format!("P – ({} actual call(s), none expected)", m.trace_calls)
    } else if m.pairing.iter().all(Option::is_none) {
        format!(
            "P – ({} actual call(s), none pairs with a gold call)",
            m.trace_calls
        )
    } else {
        "P – (paired calls have no argument keys)".to_string()
    };
    let recall = if a.expected > 0 {
        format!("R {}/{}", a.correct, a.expected)
    } else if m.gold_calls == 0 {
        "R – (no gold call)".to_string()
    } else {
        "R – (gold lists no argument keys)".to_string()
    };
    format!("{precision} {recall} F1 {f1}")
}

fn short_weight(key: &str) -> &'static str {
    match key {
        "selection_accuracy" => "sel",
        "argument_f1" => "arg",
        "sequence_accuracy" => "seq",
        "redundant_rate" => "red",
        _ => "req",
    }
}

/// toolcap's own recomputation of an arksim assertion, in toolcap's words: arksim's phrasing
/// is kept for what arksim itself wrote (see [`DiffReport::evaluator_lines`]).
fn arksim_line(v: &ArksimVerdict, mode: &str) -> String {
    let mut line = format!(
        "toolcap gold (arksim {mode} rules, recomputed): {}",
        if v.matched {
            "✓ matched"
        } else {
            "✗ not matched"
        }
    );
    if !v.missing_calls.is_empty() {
        let _ = write!(
            line,
            "  missing [{}]",
            redact::sanitize_line(&v.missing_calls.join(", "))
        );
    }
    if !v.extra_calls.is_empty() {
        let _ = write!(
            line,
            "  extra [{}]",
            redact::sanitize_line(&v.extra_calls.join(", "))
        );
    }
    if !v.ordering_issues.is_empty() {
        let _ = write!(line, "  out of order: {}", v.ordering_issues.len());
    }
    if let Some(label) = v.failure_label.filter(|_| !v.matched) {
        let _ = write!(line, "  (arksim's label for this: {label})");
    }
    line
}

/// Rounds for display: 0.9999999999999999 shows as 1.00.
pub fn fmt2(value: f64) -> String {
    format!("{value:.2}")
}

/// A value for display: its shape when redacted, its escaped text (secrets masked) when revealed.
pub fn show_value(value: &Value, reveal: Reveal) -> String {
    match reveal {
        Reveal::Redacted => super::fingerprint::shape_and_fingerprint(value),
        Reveal::Revealed => {
            let mut masked = value.clone();
            redact::mask_secrets(&mut masked);
            render_value(&masked)
        }
    }
}

fn show_key_value(key: &str, value: &Value, reveal: Reveal) -> String {
    if reveal == Reveal::Revealed && redact::is_secret_key(key) && !value.is_null() {
        return redact::MASK.to_string();
    }
    show_value(value, reveal)
}

fn call_text(tool: &str, args: &Args, reveal: Reveal) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|(k, v)| format!("{k}={}", truncate(&show_key_value(k, v, reveal), 40)))
        .collect();
    format!("{tool}({})", parts.join(", "))
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(max_chars).collect();
        t.push('…');
        t
    }
}

/// Pads or cuts to a display width.
pub fn pad(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > width.saturating_sub(1) && text.width() > width {
            out.push('…');
            used += 1;
            break;
        }
        out.push(c);
        used += w;
    }
    out.push_str(&" ".repeat(width.saturating_sub(used)));
    out
}

/// One argument's verdict as display lines; nested differences name their leaf paths.
pub fn arg_diff_lines(diff: &ArgDiff, reveal: Reveal) -> Vec<String> {
    let key = redact::sanitize_line(&diff.key);
    let value = |v: &Option<Value>| {
        v.as_ref()
            .map(|v| show_key_value(&diff.key, v, reveal))
            .unwrap_or_default()
    };
    match &diff.verdict {
        ArgVerdict::Equal => vec![format!("{key}: equal")],
        ArgVerdict::Coerced { coercion, path } => {
            let at = if path.is_empty() {
                String::new()
            } else {
                format!(" at {path}")
            };
            vec![format!(
                "{key}: {} ≈ {}  equal after coercion ({}){at}",
                value(&diff.gold),
                value(&diff.actual),
                coercion.as_str()
            )]
        }
        ArgVerdict::Differs(leaves) => {
            let nested = leaves.iter().any(|l| !l.path.is_empty());
            let mut lines = Vec::new();
            for leaf in leaves {
                let path = if leaf.path.is_empty() {
                    key.clone()
                } else {
                    format!("{key}.{}", redact::sanitize_line(&leaf.path)).replace(".[", "[")
                };
                let side = |v: &Option<Value>| {
                    v.as_ref().map_or("(absent)".to_string(), |v| {
                        show_key_value(&diff.key, v, reveal)
                    })
                };
                let mut line = format!(
                    "{path}: {} → {}  differs",
                    side(&leaf.gold),
                    side(&leaf.actual)
                );
                if let Some(note) = leaf.note {
                    let _ = write!(line, " ({note})");
                }
                lines.push(line);
            }
            if nested {
                lines.push(format!(
                    "  (scored per top-level key: all of {key} counts as wrong)"
                ));
            }
            lines
        }
        ArgVerdict::Missing => vec![format!("{key}: missing (gold {})", value(&diff.gold))],
        ArgVerdict::Unexpected => vec![format!("{key}: unexpected ({})", value(&diff.actual))],
        ArgVerdict::NotChecked => vec![format!("{key}: not checked ({})", value(&diff.actual))],
    }
}
