//! The verdict block that opens the detail pane of a failing run's root: which facets fail,
//! the evaluator's label, score and reason verbatim, the failed spans with their errors, and
//! the first differing gold row. Built with the detail lines, not per frame.

use ratatui::text::{Line, Span};

use super::theme::{Role, Theme};
use crate::redact::{self, Reveal};
use crate::store::Invocation;
use crate::triage::{Facets, GoldOutcome};

/// Failed spans listed in the block; the rest are counted.
const LISTED_SPANS: usize = 8;

/// The first differing row of a gold comparison, already shaped for the reveal mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldRow {
    pub position: usize,
    pub gold: String,
    pub actual: String,
    pub verdict: String,
}

fn text(value: &str, mode: Reveal) -> String {
    redact::shown_line(value, mode)
}

pub fn verdict_lines(
    inv: &Invocation,
    facets: &Facets,
    gold_row: Option<&GoldRow>,
    mode: Reveal,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let error = theme.style(Role::StatusError);
    let dim = theme.style(Role::Dim);
    let plain = theme.style(Role::Text);
    let mut lines = vec![Line::styled(
        format!("── verdict · {} failing ──", facets.glyphs()),
        theme.style(Role::Title),
    )];
    for facet in facets.list() {
        lines.push(Line::from(vec![
            Span::styled(format!("{} ", facet.glyph()), error),
            Span::styled(format!("{:<14}", facet.name()), error),
            Span::styled(facet.describe(), plain),
        ]));
    }
    if let Some(eval) = &facets.eval {
        let (glyph, role) = if eval.failed {
            ("✗", Role::StatusError)
        } else {
            ("✓", Role::StatusOk)
        };
        let mut head = vec![
            Span::styled(format!("{:<10}", "evaluator"), dim),
            Span::styled(
                format!("{glyph} {}", text(&eval.label, mode)),
                theme.style(role),
            ),
        ];
        if let Some(score) = eval.score {
            let threshold = eval
                .threshold
                .map(|t| format!(" (threshold {t:.2})"))
                .unwrap_or_default();
            head.push(Span::styled(
                format!("  score {score:.2}{threshold}"),
                plain,
            ));
        }
        lines.push(Line::from(head));
        // Verbatim, one screen line per line of the evaluator's text. Masked whole first: a
        // secret spanning lines (a PEM key block) is only recognised in one piece.
        let reason = redact::mask_text(&eval.reason, mode);
        for (k, part) in reason.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let label = if k == 0 { "reason" } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{label:<10}"), dim),
                Span::styled(text(part, mode), plain),
            ]));
        }
        // Each scorer of a verdict made of several (Inspect): its value, then its answer and
        // explanation verbatim, masked as the reason is.
        for scorer in inv.eval().map(|e| e.scorers.as_slice()).unwrap_or(&[]) {
            let (glyph, role) = if scorer.fails_by_default() {
                ("✗", Role::StatusError)
            } else {
                ("✓", Role::StatusOk)
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{:<10}", "scorer"), dim),
                Span::styled(
                    format!(
                        "{glyph} {} = {}",
                        text(&scorer.name, mode),
                        text(&scorer.value_text(), mode)
                    ),
                    theme.style(role),
                ),
            ]));
            for (label, said) in [("answer", &scorer.answer), ("why", &scorer.explanation)] {
                let Some(said) = said else { continue };
                let said = redact::mask_text(said, mode);
                for (k, part) in said.lines().filter(|l| !l.trim().is_empty()).enumerate() {
                    let label = if k == 0 { label } else { "" };
                    lines.push(Line::from(vec![
                        Span::styled(format!("  {label:<8}"), dim),
                        Span::styled(text(part, mode), plain),
                    ]));
                }
            }
        }
    }
    if facets.failed_spans().len() > 0 {
        lines.push(Line::styled(
            format!("failed spans ({})", facets.failed_spans().len()),
            dim,
        ));
        for i in facets.failed_spans().take(LISTED_SPANS) {
            let Some(span) = inv.spans.get(i) else {
                continue;
            };
            let mut why = String::new();
            if let Some(t) = span.error_type() {
                why.push_str(t);
            }
            // A failed tool's result is a payload: redacted, only its size is said.
            if let Some(m) = span.error().and_then(|e| redact::error_message(e, mode)) {
                if !why.is_empty() {
                    why.push_str(": ");
                }
                why.push_str(&m);
            }
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  ✗ {} {} ", span.kind.glyph(), text(&span.name, mode)),
                    error,
                ),
                Span::styled(text(&why, mode), plain),
            ]));
        }
        if facets.failed_spans().len() > LISTED_SPANS {
            lines.push(Line::styled(
                format!(
                    "  … {} more (n walks them)",
                    facets.failed_spans().len() - LISTED_SPANS
                ),
                dim,
            ));
        }
    }
    match (facets.gold, gold_row) {
        (GoldOutcome::Differs { score }, Some(row)) => {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<10}", "gold"), dim),
                Span::styled(
                    format!(
                        "score {score:.2} · first difference, row {}",
                        row.position + 1
                    ),
                    plain,
                ),
            ]));
            lines.push(Line::from(vec![
                Span::styled("  gold    ", dim),
                Span::styled(text(&row.gold, mode), plain),
            ]));
            lines.push(Line::from(vec![
                Span::styled("  actual  ", dim),
                Span::styled(text(&row.actual, mode), plain),
            ]));
            lines.push(Line::from(vec![
                Span::styled("  ", dim),
                Span::styled(text(&row.verdict, mode), error),
                Span::styled("  (d opens the diff)", dim),
            ]));
        }
        (GoldOutcome::Differs { score }, None) => lines.push(Line::from(vec![
            Span::styled(format!("{:<10}", "gold"), dim),
            Span::styled(format!("score {score:.2} (d opens the diff)"), plain),
        ])),
        _ => {}
    }
    lines.push(Line::raw(""));
    lines
}
