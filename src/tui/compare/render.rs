//! Drawing the comparison view: a pure function of [`CompareState`]. The list draws only its
//! visible rows; the detail draws the lines the state built for the selection.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Bordered, Borders, Clear, Paragraph};
use unicode_width::UnicodeWidthStr;

use super::detail::Block;
use super::keys::{BINDINGS, Binding, GOLD_BINDINGS};
use super::state::{CompareState, GoldView, ListRow, Overlay};
use super::summary::CLASS_MEANINGS;
use crate::gold::report::pad;
use crate::redact::{self, Reveal};
use crate::tui::layout::centered;
use crate::tui::overlays::diff;
use crate::tui::theme::{Role, Theme};
use crate::tui::verdict::failed_label_in;
use crate::tui::wrap::wrap_line_at_words;
use crate::views::compare::Side;

/// Where each part of the screen is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    pub header: Rect,
    pub list: Rect,
    pub detail: Rect,
    pub status: Rect,
    pub footer: Rect,
}

impl Regions {
    /// The list and the detail together: what the gold overlay covers.
    pub fn body(&self) -> Rect {
        self.list.union(self.detail)
    }
}

/// The screen's parts for a terminal of `size` (columns, rows).
pub fn regions(size: (u16, u16)) -> Regions {
    regions_in(Rect::new(0, 0, size.0, size.1))
}

fn regions_in(area: Rect) -> Regions {
    let [header, body, status, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let list_width = (body.width / 3).clamp(24.min(body.width), 50);
    let [list, detail] =
        Layout::horizontal([Constraint::Length(list_width), Constraint::Fill(1)]).areas(body);
    Regions {
        header,
        list,
        detail,
        status,
        footer,
    }
}

/// Rows inside a bordered pane.
pub fn inner_height(pane: Rect) -> u16 {
    pane.height.saturating_sub(2)
}

/// Columns inside a bordered pane.
pub fn inner_width(pane: Rect) -> u16 {
    pane.width.saturating_sub(2)
}

/// Draws the whole view.
pub fn render(frame: &mut Frame, state: &CompareState) {
    let regions = regions_in(frame.area());
    let theme = &state.config.theme;
    frame.render_widget(Paragraph::new(header_lines(state)), regions.header);
    render_list(frame, regions.list, state);
    render_detail(frame, regions.detail, state);
    frame.render_widget(Paragraph::new(status_line(state)), regions.status);
    let footer = match &state.overlay {
        None => footer_line(BINDINGS, theme),
        Some(Overlay::Gold(_)) => footer_line(GOLD_BINDINGS, theme),
        Some(Overlay::Help) => Line::from(vec![
            Span::styled("j/k", theme.style(Role::HintKey)),
            Span::styled(" scroll  ", theme.style(Role::HintText)),
            Span::styled("? Esc", theme.style(Role::HintKey)),
            Span::styled(" close", theme.style(Role::HintText)),
        ]),
    };
    frame.render_widget(Paragraph::new(footer), regions.footer);
    match &state.overlay {
        Some(Overlay::Help) => render_help(frame, state),
        Some(Overlay::Gold(view)) => render_gold(frame, regions.body(), view, state),
        None => {}
    }
}

/// Where A and B come from and how their runs were paired, then the runs as wholes.
fn header_lines(state: &CompareState) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let comparison = &state.comparison;
    let (keyed_a, keyed_b) = (comparison.keyed_by.words(0), comparison.keyed_by.words(1));
    let keyed = if keyed_a == keyed_b {
        keyed_a
    } else {
        format!("A by {keyed_a}, B by {keyed_b}")
    };
    let (a, b) = (&comparison.summary.a, &comparison.summary.b);
    let percent = |rate: Option<f64>| rate.map_or("-".to_owned(), |r| format!("{:.1}%", r * 100.0));
    let counts: Vec<String> = comparison
        .classes()
        .iter()
        .map(|(name, entries)| format!("{name} {}", entries.len()))
        .collect();
    let bold = theme.style(Role::Header).add_modifier(Modifier::BOLD);
    vec![
        Line::from(vec![
            Span::styled("A ", bold),
            Span::styled(state.sources[0].clone(), theme.style(Role::Text)),
            Span::styled("  →  B ", bold),
            Span::styled(state.sources[1].clone(), theme.style(Role::Text)),
        ]),
        Line::from(vec![
            Span::styled(
                format!(
                    "pass rate {} → {}",
                    percent(a.pass_rate),
                    percent(b.pass_rate)
                ),
                bold,
            ),
            Span::styled(
                format!(
                    " · failing {} of {} → {} of {} · paired by {keyed} · {}",
                    a.failing,
                    a.runs,
                    b.failing,
                    b.runs,
                    counts.join(" · ")
                ),
                theme.style(Role::Text),
            ),
        ]),
    ]
}

fn pane(title: String, theme: &Theme, focused: bool) -> Bordered<'static> {
    let border = if focused {
        Role::BorderFocused
    } else {
        Role::Border
    };
    Bordered::default()
        .borders(Borders::ALL)
        .border_style(theme.style(border))
        .title(Span::styled(title, theme.style(Role::Title)))
}

/// A case row's columns besides the case and the evaluator: `› `, then ` ✓ ✗ `; with flaky
/// cases in the comparison, ` ✓~✗~ ` (each side's verdict, then its flaky mark).
fn verdict_columns(marks_flaky: bool) -> usize {
    if marks_flaky { 9 } else { 7 }
}

fn render_list(frame: &mut Frame, area: Rect, state: &CompareState) {
    let theme = &state.config.theme;
    let cases = state.rows.len() - state.class_rows.len();
    let block = pane(format!(" Cases ({cases}) "), theme, state.overlay.is_none());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = usize::from(inner.height);
    let visible: Vec<(usize, ListRow)> = state
        .rows
        .iter()
        .copied()
        .enumerate()
        .skip(state.list_offset)
        .take(height)
        .collect();
    let width = usize::from(inner.width);
    // Only a comparison that has flaky cases spends columns on marking them.
    let marks_flaky = !state.comparison.flaky.is_empty();
    let verdict_columns = verdict_columns(marks_flaky);
    // The case column is as wide as the widest visible case, leaving room for the selection
    // mark and the verdicts (`› ` and ` ✓~✗~ `); the evaluator's change gets what is left.
    let case_width = visible
        .iter()
        .filter_map(|&(_, row)| state.entry(row))
        .map(|entry| case_text(&entry.case.id, entry.case.index, state.reveal).width())
        .max()
        .unwrap_or(0)
        .min(width.saturating_sub(verdict_columns));
    let lines: Vec<Line> = visible
        .into_iter()
        .map(|(n, row)| {
            let selected = n == state.selected;
            let mut line = match (row, state.entry(row)) {
                (ListRow::Case { .. }, Some(entry)) => {
                    let case = case_text(&entry.case.id, entry.case.index, state.reveal);
                    let rest = width.saturating_sub(case_width + verdict_columns);
                    let change =
                        eval_change(entry.a.as_ref(), entry.b.as_ref(), state.reveal, rest);
                    let mut spans = vec![
                        Span::raw(if selected { "› " } else { "  " }),
                        Span::styled(pad(&case, case_width), theme.style(Role::Text)),
                    ];
                    for side in [entry.a.as_ref(), entry.b.as_ref()] {
                        spans.push(Span::raw(" "));
                        spans.push(glyph(side, theme));
                        if marks_flaky {
                            spans.push(flaky_mark(side, theme));
                        }
                    }
                    spans.push(Span::raw(" "));
                    spans.push(Span::styled(pad(&change, rest), theme.style(Role::Dim)));
                    Line::from(spans)
                }
                _ => {
                    let (name, entries) = state.comparison.classes()[row.class()];
                    let role = if entries.is_empty() {
                        Role::Dim
                    } else {
                        Role::Title
                    };
                    Line::from(vec![
                        Span::raw(if selected { "› " } else { "" }),
                        Span::styled(format!("{name} ({})", entries.len()), theme.style(role)),
                    ])
                }
            };
            if selected {
                line = line.style(theme.style(Role::Selection));
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// A case as the list names it: its id and index.
fn case_text(id: &str, index: u64, mode: Reveal) -> String {
    format!("{} · {index}", redact::shown_line(id, mode))
}

/// ✓ passing, ✗ failing, · not run.
fn glyph(side: Option<&Side>, theme: &Theme) -> Span<'static> {
    match side {
        None => Span::styled("·", theme.style(Role::Dim)),
        Some(side) if side.failing => Span::styled("✗", theme.style(Role::StatusError)),
        Some(_) => Span::styled("✓", theme.style(Role::StatusOk)),
    }
}

/// `~` when the case is flaky on that side (its epochs, repeats disagree), else a blank.
fn flaky_mark(side: Option<&Side>, theme: &Theme) -> Span<'static> {
    match side {
        Some(side) if side.flaky => Span::styled(FLAKY_MARK, theme.style(Role::StatusDegraded)),
        _ => Span::raw(" "),
    }
}

/// The list's mark of a side on which the case is flaky.
pub const FLAKY_MARK: &str = "~";

/// The evaluator's label and score on each side: once when they agree, else what changed. A
/// label of `key=value` words (one per scorer) names only the words that changed
/// (`includes=C→I`); any other label shows whole on both sides (`A → B`). A failed label the
/// same on both sides that is wider than `room` names only the scorers that failed it: cut,
/// it would start with whichever scorer comes first, which may have passed.
fn eval_change(a: Option<&Side>, b: Option<&Side>, mode: Reveal, room: usize) -> String {
    let eval = |side: Option<&Side>| {
        side.and_then(|side| side.eval.as_ref()).map(|eval| {
            let label = redact::shown_line(&eval.label, mode);
            match eval.score {
                Some(score) => format!("{label} {score:.2}"),
                None => label,
            }
        })
    };
    match (eval(a), eval(b)) {
        (None, None) => String::new(),
        (Some(label), Some(same)) if label == same => failed_label_in(label, room, || {
            b.and_then(|side| side.eval.as_ref())
                .map(|eval| {
                    let names = eval.failing_scorers.iter();
                    names.map(|name| redact::shown_line(name, mode)).collect()
                })
                .unwrap_or_default()
        }),
        (Some(a), Some(b)) => scorer_changes(&a, &b).unwrap_or_else(|| format!("{a} → {b}")),
        (a, b) => format!(
            "{} → {}",
            a.unwrap_or_else(|| "-".into()),
            b.unwrap_or_else(|| "-".into())
        ),
    }
}

/// `key=a→b` for each word of two labels that changed, when both are the same keys in the same
/// order.
fn scorer_changes(a: &str, b: &str) -> Option<String> {
    let (words_a, words_b): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    if words_a.len() != words_b.len() {
        return None;
    }
    let mut changes = Vec::new();
    for (word_a, word_b) in words_a.into_iter().zip(words_b) {
        let (key_a, value_a) = word_a.split_once('=')?;
        let (key_b, value_b) = word_b.split_once('=')?;
        if key_a != key_b {
            return None;
        }
        if value_a != value_b {
            changes.push(format!("{key_a}={value_a}→{value_b}"));
        }
    }
    Some(changes.join(" "))
}

fn render_detail(frame: &mut Frame, area: Rect, state: &CompareState) {
    let theme = &state.config.theme;
    let mode = match state.reveal {
        Reveal::Redacted => "redacted",
        Reveal::Revealed => "revealed, secrets masked",
    };
    let what = match state.rows.get(state.selected) {
        Some(ListRow::Class(class)) => CLASS_MEANINGS[*class],
        _ => "A │ B",
    };
    let width = inner_width(area);
    let height = usize::from(inner_height(area));
    let lines = match &state.shown {
        Some(shown) => detail_lines(&shown.blocks, width, theme.style(Role::Border)),
        None => Vec::new(),
    };
    // A detail longer than the pane says which of its lines are drawn.
    let position = if lines.len() > height {
        let last = (state.detail_scroll + height).min(lines.len());
        format!(
            " · lines {}-{last} of {}",
            state.detail_scroll + 1,
            lines.len()
        )
    } else {
        String::new()
    };
    let block = pane(format!(" {what} · {mode}{position} "), theme, false);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines: Vec<Line> = lines
        .into_iter()
        .skip(state.detail_scroll)
        .take(height)
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The detail's blocks as screen lines `width` wide: a pair's (or triple's) cells each wrapped
/// within its column, side by side, the shorter padded, `separator` the style of the rule
/// between them.
pub fn detail_lines(blocks: &[Block], width: u16, separator: Style) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for block in blocks {
        match block {
            Block::Full(line) => out.extend(wrap_line_at_words(line.clone(), width)),
            Block::Pair(left, right) => {
                out.extend(columns(&[left, right], width, separator));
            }
            Block::Triple(a, b, gold) => out.extend(columns(&[a, b, gold], width, separator)),
        }
    }
    out
}

/// Cells side by side in equal columns, each wrapped within its own, separated by a rule.
fn columns(cells: &[&Vec<Line<'static>>], width: u16, separator: Style) -> Vec<Line<'static>> {
    let count = cells.len().max(1) as u16;
    let column = width.saturating_sub(3 * (count - 1)) / count;
    let wrapped: Vec<Vec<Line<'static>>> = cells
        .iter()
        .map(|lines| {
            lines
                .iter()
                .flat_map(|line| wrap_line_at_words(line.clone(), column))
                .collect()
        })
        .collect();
    let height = wrapped.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(height);
    for n in 0..height {
        let mut spans = Vec::new();
        for (k, cell) in wrapped.iter().enumerate() {
            let line = cell.get(n);
            if k + 1 < wrapped.len() {
                let used = line.map_or(0, Line::width);
                spans.extend(line.map(spans_of).unwrap_or_default());
                spans.push(Span::raw(
                    " ".repeat(usize::from(column).saturating_sub(used)),
                ));
                spans.push(Span::styled(" │ ", separator));
            } else if let Some(line) = line {
                spans.extend(spans_of(line));
            }
        }
        out.push(Line::from(spans));
    }
    out
}

/// A line's spans with the line's own style folded into each, so they keep it in another line.
fn spans_of(line: &Line<'static>) -> Vec<Span<'static>> {
    line.spans
        .iter()
        .map(|span| Span::styled(span.content.clone(), line.style.patch(span.style)))
        .collect()
}

fn status_line(state: &CompareState) -> Line<'static> {
    let theme = &state.config.theme;
    let (label, role) = match state.reveal {
        Reveal::Redacted => (" REDACTED ", Role::ModeRedacted),
        Reveal::Revealed => (" REVEALED · secrets masked ", Role::ModeRevealed),
    };
    let cases = state.rows.len() - state.class_rows.len();
    let newly = state.newly_failing_rows.len();
    let mut spans = vec![
        Span::styled(label, theme.style(role)),
        Span::styled(format!(" {cases} cases"), theme.style(Role::Text)),
        Span::styled(
            format!(" · {newly} newly failing in B"),
            theme.style(if newly > 0 {
                Role::StatusError
            } else {
                Role::StatusOk
            }),
        ),
    ];
    if let Some(message) = &state.message {
        spans.push(Span::styled(
            format!(" · {}", redact::shown_line(message, state.reveal)),
            theme.style(Role::Message),
        ));
    }
    Line::from(spans)
}

fn footer_line(bindings: &[Binding], theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for binding in bindings {
        if let Some(what) = binding.footer {
            spans.push(Span::styled(binding.keys, theme.style(Role::HintKey)));
            spans.push(Span::styled(
                format!(" {what}  "),
                theme.style(Role::HintText),
            ));
        }
    }
    Line::from(spans)
}

/// The help's lines: every key of the view and of the gold overlay, then what the glyphs mean.
pub fn help_lines(theme: &Theme) -> Vec<Line<'static>> {
    let key_lines = |bindings: &[Binding]| -> Vec<Line<'static>> {
        bindings
            .iter()
            .map(|binding| {
                Line::from(vec![
                    Span::styled(
                        format!("  {:<14}", binding.keys),
                        theme.style(Role::HintKey),
                    ),
                    Span::raw(binding.what),
                ])
            })
            .collect()
    };
    let title = theme.style(Role::Title);
    let dim = theme.style(Role::Dim);
    let mut lines = vec![Line::styled("Comparison", title)];
    lines.extend(key_lines(BINDINGS));
    lines.push(Line::raw(""));
    lines.push(Line::styled("Gold diffs (d)", title));
    lines.extend(key_lines(GOLD_BINDINGS));
    lines.push(Line::raw(""));
    lines.push(Line::styled("Glyphs", title));
    for (glyph, what) in [
        (
            "✓ ✗ ·",
            "the case passes, fails, did not run (A's then B's)",
        ),
        (
            FLAKY_MARK,
            "after a verdict: the case is flaky there (its epochs disagree)",
        ),
        ("[✗]", "in a strip of a case's epochs: the one shown"),
        ("▶", "the first tool call where the runs part ways"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("  {glyph:<14}"), theme.style(Role::HintKey)),
            Span::raw(what),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Payloads are redacted (structure only) until `r`; secrets stay masked either way.",
        dim,
    ));
    lines.push(Line::styled(
        "`x` writes the Markdown of `compare --md`, redacted, beside you.",
        dim,
    ));
    lines
}

fn render_help(frame: &mut Frame, state: &CompareState) {
    let theme = &state.config.theme;
    let area = centered(frame.area(), 70, 80);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(help_lines(theme))
            .scroll((state.help_scroll, 0))
            .block(pane(" Keys — ? or Esc closes ".into(), theme, true)),
        area,
    );
}

fn render_gold(frame: &mut Frame, body: Rect, view: &GoldView, state: &CompareState) {
    let theme = &state.config.theme;
    frame.render_widget(Clear, body);
    let parts = Layout::vertical(vec![Constraint::Fill(1); view.sides.len().max(1)]).split(body);
    for (n, (side, area)) in view.sides.iter().zip(parts.iter()).enumerate() {
        let title = format!(
            " {} against its gold · {} ",
            side.name,
            redact::shown_line(&view.case, state.reveal)
        );
        let block = pane(title, theme, n == view.focus);
        let inner = block.inner(*area);
        frame.render_widget(block, *area);
        diff::render(
            frame,
            inner,
            &side.report,
            &side.view,
            state.reveal,
            &state.config,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scorer_labels_show_only_the_scorers_that_changed() {
        assert_eq!(
            scorer_changes("expected_tools=C includes=C", "expected_tools=I includes=C"),
            Some("expected_tools=C→I".to_owned())
        );
        assert_eq!(scorer_changes("a=1 b=2", "b=1 a=2"), None, "other keys");
        assert_eq!(scorer_changes("no failure", "false information"), None);
    }

    /// A failed label the same on both sides names the scorers that failed it when the label
    /// does not fit, and shows whole when it does.
    #[test]
    fn a_label_that_does_not_fit_names_the_scorers_that_failed() {
        let side = |failing: &[&str]| Side {
            id: "run".into(),
            run: crate::model::Id::from_bytes(b"run"),
            failing: !failing.is_empty(),
            flaky: false,
            index_is_repeat: false,
            facets: Vec::new(),
            eval: Some(crate::views::compare::EvalSide {
                label: "expected_tools=C includes=I".into(),
                reason: String::new(),
                score: None,
                failing_scorers: failing.iter().map(|s| (*s).to_owned()).collect(),
            }),
            note: None,
        };
        let (a, b) = (side(&["includes=I"]), side(&["includes=I"]));
        let change = |room| eval_change(Some(&a), Some(&b), Reveal::Redacted, room);
        assert_eq!(change(40), "expected_tools=C includes=I");
        assert_eq!(change(20), "includes=I");
        // Nothing failed: the label is all there is to show.
        let (a, b) = (side(&[]), side(&[]));
        assert_eq!(
            eval_change(Some(&a), Some(&b), Reveal::Redacted, 20),
            "expected_tools=C includes=I"
        );
    }

    #[test]
    fn a_pair_is_two_columns_each_wrapped_in_its_half() {
        let blocks = [
            Block::Full(Line::raw("title")),
            Block::Pair(
                vec![Line::raw("left side is long")],
                vec![Line::raw("right")],
            ),
        ];
        let lines: Vec<String> = detail_lines(&blocks, 23, Style::default())
            .iter()
            .map(|line| line.to_string())
            .collect();
        assert_eq!(
            lines,
            ["title", "left side  │ right", "is long    │ "],
            "columns of (23 - 3) / 2 cells"
        );
    }
}
