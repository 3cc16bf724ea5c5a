//! The gold-vs-actual diff view: gold on the left, actual on the right, rows aligned and
//! coloured by verdict, the selected row's per-argument diff below, metrics in a header.
//! Pure: [`render`] draws a [`DiffReport`] and [`apply`] updates [`DiffViewState`]; the keys
//! are the `diff` scope of the keymap ([`KEYS`]). [`DiffOverlay`] is the component the app
//! holds while the view is open (`app::gold_diff` decides which gold applies and opens it).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, Clear, Paragraph, Row as TableRow, Table, TableState,
};

use super::{FooterItem, Outcome, first_keys};
use crate::gold::align::{Alignment, RowKind};
use crate::gold::conversation::{row_in_turn, turn_share};
use crate::gold::report::{DiffReport, argument_counts, fmt2};
use crate::redact::{Reveal, shown_line};
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::config::Config;
use crate::tui::keymap::{KeyContext, Keymap, Scope};
use crate::tui::theme::{Role, Theme};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiffViewState {
    pub selected_row: usize,
    pub alignment: Alignment,
}

impl DiffViewState {
    /// Starts on the first row that differs (or the first row); for a turn of a
    /// whole-conversation gold, on the first row of that turn's share.
    pub fn new(report: &DiffReport) -> Self {
        let in_focus = |r: usize| match &report.conversation {
            Some(scope) => scope
                .focus
                .is_none_or(|turn| row_in_turn(scope, &report.rows[r], turn)),
            None => true,
        };
        let differing = report.differing_rows();
        let selected_row = differing
            .iter()
            .copied()
            .find(|&r| in_focus(r))
            .or_else(|| (0..report.rows.len()).find(|&r| in_focus(r)))
            .or_else(|| differing.first().copied())
            .unwrap_or(0);
        DiffViewState {
            selected_row,
            alignment: report.options.alignment,
        }
    }
}

/// The open diff: the run it compares, its report, and where the view stands.
#[derive(Debug)]
pub struct DiffOverlay {
    pub invocation: String,
    pub report: DiffReport,
    pub state: DiffViewState,
}

impl DiffOverlay {
    pub fn new(invocation: String, report: DiffReport) -> Self {
        let state = DiffViewState::new(&report);
        DiffOverlay {
            invocation,
            report,
            state,
        }
    }

    /// Applies an action ([`apply`]); going to a call closes the view and selects the call's
    /// span in the tree. The mouse does nothing here: the panes it would hit are hidden under
    /// the overlay.
    pub fn update(&mut self, action: Action, app: &mut App) -> Outcome {
        if matches!(
            action,
            Action::Click { .. } | Action::ScrollUp { .. } | Action::ScrollDown { .. }
        ) {
            return Outcome::Handled;
        }
        match apply(&mut self.state, &mut self.report, action) {
            DiffAction::None => Outcome::Handled,
            DiffAction::NotMine => Outcome::NotHandled,
            DiffAction::Close => Outcome::Close,
            DiffAction::JumpToSpan(span) => {
                app.show_span_in_tree(&self.invocation, span);
                Outcome::Close
            }
        }
    }

    pub fn render(&self, frame: &mut Frame, area: Rect, app: &App) {
        frame.render_widget(Clear, area);
        render(
            frame,
            area,
            &self.report,
            &self.state,
            app.reveal,
            &app.config,
        );
    }
}

/// While the diff is open its own scope has the keys; of the global bindings only movement,
/// reveal, close and quit still work (the panes under it must not change unseen).
pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Diff,
    inherits: &[
        Action::Down,
        Action::Up,
        Action::Top,
        Action::Bottom,
        Action::ToggleReveal,
        Action::Cancel,
        Action::Quit,
    ],
    text_input: false,
};

/// The footer while the diff is open.
pub const FOOTER: &[FooterItem] = &[
    (&[Action::Top, Action::Bottom], "first/last row"),
    (
        &[Action::NextDifference, Action::PrevDifference],
        "next/prev difference",
    ),
    (&[Action::Down, Action::Up], "move"),
    (&[Action::CycleAlignment], "alignment"),
    (&[Action::GoToCall], "go to span"),
    (&[Action::ToggleReveal], "reveal"),
    (&[Action::Cancel], "close"),
];

/// What the caller should do after an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffAction {
    /// The view handled it (or it means nothing here).
    None,
    /// Show this span of the invocation in the tree (index into `Invocation::spans`).
    JumpToSpan(usize),
    Close,
    /// Not the view's: the app applies it as usual (reveal, quit, resize).
    NotMine,
}

/// Moves the selection between rows and differences, re-aligns the report, or asks the caller
/// to jump to the actual call's span or to close.
pub fn apply(state: &mut DiffViewState, report: &mut DiffReport, action: Action) -> DiffAction {
    let last = report.rows.len().saturating_sub(1);
    match action {
        Action::NextDifference => {
            if let Some(&next) = report
                .differing_rows()
                .iter()
                .find(|&&r| r > state.selected_row)
            {
                state.selected_row = next;
            }
        }
        Action::PrevDifference => {
            if let Some(&prev) = report
                .differing_rows()
                .iter()
                .rev()
                .find(|&&r| r < state.selected_row)
            {
                state.selected_row = prev;
            }
        }
        Action::Down => state.selected_row = (state.selected_row + 1).min(last),
        Action::Up => state.selected_row = state.selected_row.saturating_sub(1),
        Action::Top => state.selected_row = 0,
        Action::Bottom => state.selected_row = last,
        Action::CycleAlignment => {
            state.alignment = state.alignment.next();
            report.realign(state.alignment);
            state.selected_row = state.selected_row.min(report.rows.len().saturating_sub(1));
        }
        Action::GoToCall => {
            let span = report
                .rows
                .get(state.selected_row)
                .and_then(|r| r.actual)
                .and_then(|a| report.actual.get(a))
                .and_then(|c| c.span);
            if let Some(span) = span {
                return DiffAction::JumpToSpan(span);
            }
        }
        Action::Cancel => return DiffAction::Close,
        Action::ToggleReveal | Action::Quit | Action::Resize { .. } => return DiffAction::NotMine,
        _ => {}
    }
    DiffAction::None
}

/// The selected row's title: ` row 3 · missing · n/N next/prev diff · a align `.
fn detail_title(report: &DiffReport, state: &DiffViewState, keymap: &Keymap) -> String {
    let Some(row) = report.rows.get(state.selected_row) else {
        return String::new();
    };
    let mut parts = vec![
        format!("row {}", state.selected_row + 1),
        row.kind.as_str().to_string(),
    ];
    let steps = [Action::NextDifference, Action::PrevDifference];
    if let Some(keys) = first_keys(keymap, &KEYS, &steps) {
        parts.push(format!("{keys} next/prev diff"));
    }
    if let Some(keys) = first_keys(keymap, &KEYS, &[Action::CycleAlignment]) {
        parts.push(format!("{keys} align"));
    }
    format!(" {} ", parts.join(" · "))
}

/// The theme slot each verdict is drawn with (so a theme file and NO_COLOR reach the view).
pub fn kind_role(kind: RowKind) -> Role {
    match kind {
        RowKind::Match => Role::StatusOk,
        RowKind::ArgMismatch | RowKind::WrongTool => Role::DiffChanged,
        RowKind::Missing => Role::DiffRemoved,
        RowKind::Failed => Role::StatusError,
        RowKind::Extra => Role::DiffAdded,
        RowKind::Moved => Role::DiffMoved,
    }
}

fn header_lines(report: &DiffReport, reveal: Reveal, theme: &Theme) -> Vec<Line<'static>> {
    let m = &report.metrics;
    let status = if report.passed() {
        Span::styled("toolcap gold: ✓ matches", theme.style(Role::StatusOk))
    } else {
        Span::styled("toolcap gold: ✗ differs", theme.style(Role::StatusError))
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(
                format!(
                    "{}  ",
                    shown_line(report.name.as_deref().unwrap_or(&report.invocation), reveal)
                ),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            status,
            Span::raw(format!(
                "  {} · align {} · {} · gold {}",
                report.options.mode.as_str(),
                report.options.alignment.as_str(),
                match reveal {
                    Reveal::Redacted => "redacted",
                    Reveal::Revealed => "revealed",
                },
                shown_line(&report.gold.source, reveal),
            )),
        ]),
        Line::from(format!(
            "score {} {} │ sel {}/{} │ args {} │ seq {} edits/{} → {}",
            fmt2(m.score),
            m.grade,
            m.selected_calls,
            m.trace_calls,
            argument_counts(m),
            m.sequence.edit_distance,
            m.sequence.max_len,
            fmt2(m.sequence.sequence_accuracy),
        )),
        Line::from(format!(
            "traj {}/{}×{} │ req {} │ redund {}/{} │ repeats {} │ errors {}/{} │ retries {}",
            m.trajectory.correct_steps,
            m.trajectory.total_expected_steps,
            fmt2(m.trajectory.path_efficiency),
            match m.required_call_recall {
                Some(_) => format!("{}/{}", m.required_calls_met, m.gold_calls),
                None => "n/a".into(),
            },
            m.efficiency.redundant_count,
            m.efficiency.total_calls,
            m.efficiency.identical_count,
            m.efficiency.error_count,
            m.efficiency.total_calls,
            m.efficiency.retry_after_error_count,
        )),
    ];
    if let Some(scope) = &report.conversation
        && let Some(turn) = scope.focus
    {
        let share = scope
            .turns
            .get(turn)
            .and_then(|id| turn_share(report, id))
            .unwrap_or_default();
        lines.push(Line::from(format!(
            "this turn's share (▸): {} of {} row(s), {} differing · the verdict is the whole conversation's ({} turns)",
            share.rows,
            report.rows.len(),
            share.differing,
            scope.turns.len()
        )));
    }
    lines.extend(
        report
            .verdict_lines()
            .into_iter()
            .map(|l| Line::from(shown_line(&l, reveal))),
    );
    lines
}

fn detail_lines(
    report: &DiffReport,
    state: &DiffViewState,
    reveal: Reveal,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let Some(row) = report.rows.get(state.selected_row) else {
        return vec![Line::from("no calls on either side")];
    };
    let mut lines = Vec::new();
    if let Some(call) = row.actual.and_then(|a| report.actual.get(a)) {
        let mut facts = Vec::new();
        if call.failed {
            let error = call.shown_error(reveal);
            facts.push(format!(
                "FAILED: {}",
                error.as_deref().unwrap_or("(no message)")
            ));
        }
        if let Some(d) = call.duration_s {
            facts.push(format!("{:.3}s", d));
        }
        if let Some(id) = &call.call_id {
            facts.push(format!("call id {id}"));
        }
        if call.args.is_none() {
            facts.push("arguments not captured".into());
        }
        if !facts.is_empty() {
            lines.push(Line::styled(
                shown_line(&facts.join(" · "), reveal),
                if call.failed {
                    theme.style(Role::StatusError)
                } else {
                    Style::default()
                },
            ));
        }
    }
    let args = report.arg_lines(row, reveal);
    if args.is_empty() && lines.is_empty() {
        lines.push(Line::from(match row.kind {
            RowKind::Missing => "the agent never made this call".to_string(),
            RowKind::Extra => "the gold has no such call".to_string(),
            _ => "every argument is equal".to_string(),
        }));
    }
    lines.extend(args.iter().map(|l| Line::from(shown_line(l, reveal))));
    lines
}

/// Draws the diff view into `area`; the titles name the keys `config` binds.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    report: &DiffReport,
    state: &DiffViewState,
    reveal: Reveal,
    config: &Config,
) {
    let theme = &config.theme;
    let header = header_lines(report, reveal, theme);
    let [top, middle, bottom] = Layout::vertical([
        Constraint::Length(header.len() as u16),
        Constraint::Min(3),
        Constraint::Length((area.height / 3).clamp(4, 12)),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header), top);

    let marked = report
        .conversation
        .as_ref()
        .is_some_and(|s| s.focus.is_some());
    let rows: Vec<TableRow> = report
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mark = match &report.conversation {
                Some(scope) if scope.focus.is_some_and(|t| row_in_turn(scope, row, t)) => "▸",
                _ => "",
            };
            TableRow::new(vec![
                Cell::from(format!("{mark}{}", i + 1)),
                Cell::from(shown_line(&report.gold_cell(row, reveal), reveal)),
                Cell::from(shown_line(&report.actual_cell(row, reveal), reveal)),
                Cell::from(shown_line(&report.verdict_label(row), reveal)),
            ])
            .style(theme.style(if report.tolerated(row).is_some() {
                Role::StatusOk
            } else {
                kind_role(row.kind)
            }))
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(if marked { 4 } else { 3 }),
            Constraint::Percentage(34),
            Constraint::Percentage(34),
            Constraint::Fill(1),
        ],
    )
    .header(
        TableRow::new(vec!["#", "gold", "actual", "verdict"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .highlight_symbol("›")
    .block(Block::default().borders(Borders::TOP));
    let mut table_state = TableState::default().with_selected(
        (!report.rows.is_empty()).then_some(state.selected_row.min(report.rows.len() - 1)),
    );
    frame.render_stateful_widget(table, middle, &mut table_state);

    let title = detail_title(report, state, &config.keymap);
    frame.render_widget(
        Paragraph::new(detail_lines(report, state, reveal, theme))
            .block(Block::default().borders(Borders::TOP).title(title)),
        bottom,
    );
}
