//! The verdict block that opens the detail pane of a failing run's root: which facets fail,
//! the evaluator's label, score and reason verbatim, the failed spans with their errors, and
//! the first differing gold row. Built with the detail lines, not per frame.

use ratatui::text::{Line, Span};

use super::theme::{Role, Theme};
use crate::model::EvalVerdict;
use crate::redact::{self, Reveal};
use crate::store::Invocation;
use crate::triage::{EvalFacet, Facets, GoldOutcome};

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

/// A failed verdict's label in `room` columns (the list's row, compare's case row): whole when
/// it fits, else the scorers that failed the run (`includes=I`). Cut short, the whole label
/// would start with whichever scorer comes first, which may have passed. `failing` (masked
/// names) is asked only when the label does not fit; when it names none, the label stays
/// whole for the view to cut.
pub fn failed_label_in(
    label: String,
    room: usize,
    failing: impl FnOnce() -> Vec<String>,
) -> String {
    if unicode_width::UnicodeWidthStr::width(label.as_str()) <= room {
        return label;
    }
    let failing = failing();
    match failing.is_empty() {
        true => label,
        false => failing.join(" "),
    }
}

/// The triage note block of the detail pane: label, text (masked like any text until
/// revealed), author and time.
pub fn note_lines(note: &crate::notes::Note, mode: Reveal, theme: &Theme) -> Vec<Line<'static>> {
    let label = match note.label.as_str() {
        "" => String::new(),
        label => format!(" [{label}]"),
    };
    let mut lines = vec![Line::styled(
        format!("── note{label} ──"),
        theme.style(Role::Title),
    )];
    if !note.note.is_empty() {
        lines.push(Line::styled(
            text(&note.note, mode),
            theme.style(Role::Text),
        ));
    }
    lines.push(Line::styled(
        format!(
            "{}, {}",
            text(&note.author, mode),
            redact::sanitize_line(&note.time)
        ),
        theme.style(Role::Dim),
    ));
    lines.push(Line::raw(""));
    lines
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
        lines.extend(evaluator_lines(
            eval,
            inv.eval(),
            ("evaluator", 9),
            mode,
            theme,
        ));
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

/// The evaluator's verdict as the detail shows it: `head` and its label (with its score and
/// threshold), its reason verbatim, what it expected (the dataset's target), then each scorer
/// of a verdict made of several (Inspect) with its answer and explanation (the target, answers
/// and explanations their length until revealed), every text masked under `mode`. Labels are
/// padded to `width` columns (at least 7: " answer" and "scorer" fit).
pub fn evaluator_lines(
    eval: &EvalFacet,
    verdict: Option<&EvalVerdict>,
    (head, width): (&str, usize),
    mode: Reveal,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let dim = theme.style(Role::Dim);
    let plain = theme.style(Role::Text);
    let width = width.max(7);
    let glyph_of = |failed: bool| {
        if failed {
            ("✗", theme.style(Role::StatusError))
        } else {
            ("✓", theme.style(Role::StatusOk))
        }
    };
    // Verbatim, one screen line per line of the text, labelled on its first. Masked whole
    // first: a secret spanning lines (a PEM key block) is only recognised in one piece.
    let labelled = |lines: &mut Vec<Line<'static>>, label: &str, said: &str| {
        let said = redact::mask_text(said, mode);
        for (k, part) in said.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let label = if k == 0 { label } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{label:<width$} "), dim),
                Span::styled(text(part, mode), plain),
            ]));
        }
    };
    let (glyph, style) = glyph_of(eval.failed);
    let mut first = vec![
        Span::styled(format!("{head:<width$} "), dim),
        Span::styled(format!("{glyph} {}", text(&eval.label, mode)), style),
    ];
    if let Some(score) = eval.score {
        let threshold = eval
            .threshold
            .map(|t| format!(" (threshold {t:.2})"))
            .unwrap_or_default();
        first.push(Span::styled(
            format!("  score {score:.2}{threshold}"),
            plain,
        ));
    }
    let mut lines = vec![Line::from(first)];
    labelled(&mut lines, "reason", &eval.shown_reason(mode));
    if let Some(target) = verdict.and_then(|v| v.target.as_ref()) {
        labelled(&mut lines, "target", &redact::shown_quote(target, mode));
    }
    if let Some(limit) = verdict.and_then(|v| v.limit.as_ref()) {
        labelled(&mut lines, "limit", limit);
    }
    let scorers = verdict.map(|v| v.scorers.as_slice()).unwrap_or(&[]);
    for scorer in scorers {
        let (glyph, style) = glyph_of(scorer.fails_by_default());
        lines.push(Line::from(vec![
            Span::styled(format!("{:<width$} ", "scorer"), dim),
            Span::styled(
                format!(
                    "{glyph} {} = {}",
                    text(&scorer.name, mode),
                    text(&scorer.value_text(), mode)
                ),
                style,
            ),
        ]));
        // They quote the model's completion: its length until revealed, like the payload.
        for (label, said) in [(" answer", &scorer.answer), (" why", &scorer.explanation)] {
            if let Some(said) = said {
                labelled(&mut lines, label, &redact::shown_quote(said, mode));
            }
        }
    }
    lines
}

#[cfg(test)]
mod label_tests {
    use super::failed_label_in;

    /// A label wider than its room names the scorers that failed, whatever the room: a wide
    /// column cut a label of four scorers as a narrow one cut a label of two.
    #[test]
    fn a_failed_label_that_does_not_fit_names_the_scorers_that_failed() {
        let failing = || vec!["includes=I".to_owned(), "style=I".to_owned()];
        let four = "expected_tools=C includes=I answer=C style=I".to_owned();
        assert_eq!(
            failed_label_in(four.clone(), 28, failing),
            "includes=I style=I"
        );
        assert_eq!(failed_label_in(four.clone(), 60, failing), four);
        // Nothing named as failing (a label with no scorers): whole, for the view to cut.
        assert_eq!(failed_label_in(four.clone(), 10, Vec::new), four);
    }
}
