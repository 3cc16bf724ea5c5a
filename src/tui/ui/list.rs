//! The invocation list: one row per run, newest first, only the visible window is built.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use crate::redact;
use crate::store::Invocation;
use crate::tui::app::{App, Pane};
use crate::tui::format::{clock, duration_ms, tokens};
use crate::tui::theme::{Role, Theme};
use crate::tui::ui::highlight;

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.config.theme;
    let total = app.store.len();
    let shown = app.list.ids.len();
    let title = if app.searching {
        format!(
            " Invocations · /{} · {shown} of {total} ",
            redact::sanitize_line(app.list_search.editor.text())
        )
    } else if app.search.is_empty() {
        format!(" Invocations ({total}) ")
    } else {
        format!(
            " Invocations · filter: {} · {shown} of {total} · Esc clears ",
            redact::sanitize_line(&app.search)
        )
    };
    let mut block = Block::bordered()
        .title(Span::styled(title, theme.style(Role::Title)))
        .border_style(theme.border(app.focus == Pane::List));
    // Which gold the selected run is scored against (rows only have room for the ◇ score).
    if let Some(source) = app
        .selected_invocation
        .as_deref()
        .and_then(|id| app.gold.source(id))
    {
        block = block.title_bottom(Span::styled(
            format!(" ◇ gold: {} ", gold_label(source)),
            theme.style(Role::Title),
        ));
    }
    if app.list.ids.is_empty() {
        let note = if total == 0 {
            "no invocations yet — loading, or nothing recognised in the sources"
        } else {
            "no invocation matches the search (Esc clears it)"
        };
        frame.render_widget(
            Paragraph::new(Line::styled(note, theme.style(Role::Missing))).block(block),
            area,
        );
        return;
    }
    let wide = area.width >= 100;
    let height = area.height.saturating_sub(3) as usize;
    let selected = app.selected_invocation.as_deref();
    let rows: Vec<Row> = app
        .list
        .ids
        .iter()
        .skip(app.list.offset)
        .take(height)
        .filter_map(|id| app.store.get(id))
        .map(|inv| {
            let is_selected = Some(inv.id.as_str()) == selected;
            let row = row_for(
                inv,
                app.gold.score(&inv.id),
                app.reveal,
                theme,
                wide,
                is_selected,
                app.list_search.query.as_ref(),
            );
            if is_selected {
                row.style(theme.style(Role::Selection))
            } else {
                row
            }
        })
        .collect();
    let widths = [
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(10),
        Constraint::Length(if wide { 19 } else { 8 }),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(if wide { 10 } else { 7 }),
    ];
    let header = Row::new([
        "",
        "",
        "name",
        if wide { "start (UTC)" } else { "start" },
        "dur",
        "tools",
        "llm",
        "tokens",
        "eval",
    ])
    .style(theme.style(Role::Header));
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .style(theme.style(Role::Text))
        .block(block);
    frame.render_widget(table, area);
}

/// A gold source shortened for a border title: the file name (and a scenario's `[id]`), never
/// the directories, masked like any other text from the inputs.
fn gold_label(source: &str) -> String {
    let short = source.rsplit(['/', '\\']).next().unwrap_or(source);
    crate::redact::sanitize_line(short)
}

fn row_for<'a>(
    inv: &Invocation,
    gold_score: Option<(f64, bool)>,
    mode: crate::redact::Reveal,
    theme: &Theme,
    wide: bool,
    selected: bool,
    query: Option<&crate::query::Query>,
) -> Row<'a> {
    let s = inv.summary();
    let start = clock(s.start_unix_nano);
    let start = if wide {
        start
    } else {
        start.get(11..).unwrap_or("").to_owned()
    };
    let tools = if s.failed_tool_calls > 0 {
        Line::from(vec![
            Span::raw(format!("{} ", s.tool_calls.len())),
            Span::styled(
                format!("✗{}", s.failed_tool_calls),
                theme.style(Role::StatusError),
            ),
        ])
    } else {
        Line::raw(s.tool_calls.len().to_string())
    };
    let eval = match &inv.eval {
        None => match gold_score {
            // A gold check: ◇ marks a score from the gold diff rather than an evaluator.
            Some((score, passed)) => Line::styled(
                format!("◇{score:.2}"),
                theme.style(if passed {
                    Role::StatusOk
                } else {
                    Role::StatusError
                }),
            ),
            None => Line::raw(""),
        },
        Some(v) => {
            let (glyph, role) = if v.passed {
                ("✓", Role::StatusOk)
            } else {
                ("✗", Role::StatusError)
            };
            let score = v.score.map(|x| format!(" {x:.2}")).unwrap_or_default();
            Line::styled(format!("{glyph}{score}"), theme.style(role))
        }
    };
    Row::new([
        Cell::from(Span::styled(
            if selected { "›" } else { " " },
            theme.style(Role::BorderFocused),
        )),
        Cell::from(Span::styled(
            s.health.glyph().to_string(),
            theme.health(s.health),
        )),
        Cell::from({
            let name = redact::shown_line(&s.name, mode);
            let marks = query.map(|q| q.highlight(&name)).unwrap_or_default();
            Line::from(highlight::marked_spans(
                &name,
                &marks,
                theme.name(s.health),
                theme.style(Role::Match),
            ))
        }),
        Cell::from(start),
        Cell::from(duration_ms(s.duration_ms())),
        Cell::from(tools),
        Cell::from(s.counts.llm.to_string()),
        Cell::from(tokens(s.input_tokens + s.output_tokens)),
        Cell::from(eval),
    ])
}
