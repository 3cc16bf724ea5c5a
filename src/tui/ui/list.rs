//! The invocation list: one row per run, newest first, only the visible window is built.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};
use unicode_width::UnicodeWidthStr;

use crate::model::{AttrValue, Health};
use crate::redact;
use crate::store::Invocation;
use crate::triage::Facets;
use crate::tui::action::Action;
use crate::tui::app::{App, ListRow, Pane};
use crate::tui::format::{clock, duration_ms, tokens};
use crate::tui::keymap::Scope;
use crate::tui::theme::{Role, Theme};
use crate::tui::ui::highlight;
use crate::tui::verdict::failed_label_in;

/// Marks a run with a triage note, before its name.
pub const NOTED_GLYPH: &str = "✎";

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.config.theme;
    let total = app.store.len();
    let sort = app.sort.label();
    // While a new search runs, how many it has found so far (the rows may still be the
    // previous search's until a screenful has arrived).
    let shown = app.filter.found_so_far().unwrap_or(app.list.len());
    let searching = if app.filter.is_searching() {
        " · searching…"
    } else {
        ""
    };
    let keymap = &app.config.keymap;
    let scopes = [Scope::List, Scope::Global];
    let sort = match keymap.first_key(&scopes, Action::CycleSort) {
        Some(key) => format!("{sort} ({key})"),
        None => sort.to_owned(),
    };
    let clears = keymap.first_key(&scopes, Action::Cancel);
    let title = if app.searching {
        format!(
            " Invocations · /{} · {shown} of {total}{searching} · {sort} ",
            redact::sanitize_line(app.list_search.editor.text())
        )
    } else if app.search.is_empty() {
        format!(" Invocations ({total}){searching} · {sort} ")
    } else {
        let clears = clears
            .as_ref()
            .map(|key| format!("{key} clears · "))
            .unwrap_or_default();
        format!(
            " Invocations · filter: {} · {shown} of {total}{searching} · {clears}{sort} ",
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
    if app.list.is_empty() {
        let note = match (total, clears) {
            (0, _) => "no invocations yet — loading, or nothing recognised in the sources".into(),
            (_, Some(key)) => format!("no invocation matches the search ({key} clears it)"),
            (_, None) => "no invocation matches the search".into(),
        };
        frame.render_widget(
            Paragraph::new(Line::styled(note, theme.style(Role::Missing))).block(block),
            area,
        );
        return;
    }
    let columns = Columns::for_width(area.width);
    let height = area.height.saturating_sub(3) as usize;
    let selected = app.selected_invocation.as_deref();
    let cursor = app.selected_list_position();
    let rows: Vec<Row> = app
        .list
        .rows()
        .iter()
        .enumerate()
        .skip(app.list.offset)
        .take(height)
        .filter_map(|(pos, row)| {
            let is_selected = cursor == Some(pos);
            let row = match row {
                ListRow::Invocation(k) => {
                    // The store's current version of the run: a list shown while a search
                    // runs may hold an older one.
                    let id = &app.list.runs().get(*k)?.id;
                    let inv = app.store.get(id)?;
                    let facets = app.triage.facets_at(*k);
                    let nested = app.list.conversation_row_at(*k).is_some();
                    row_for(app, inv, facets, columns, is_selected, nested)
                }
                &ListRow::Conversation { turns, first } => conversation_row(
                    app,
                    app.list.conversation_id(row)?,
                    first as usize..(first + turns) as usize,
                    theme,
                    columns,
                    is_selected,
                ),
            };
            Some(if is_selected && selected.is_some() {
                row.style(theme.style(Role::Selection))
            } else {
                row
            })
        })
        .collect();
    let widths = [
        Constraint::Length(1),
        Constraint::Length(3),
        Constraint::Min(10),
        Constraint::Length(columns.start_width()),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(columns.eval_width()),
    ];
    let header = Row::new([
        "",
        "",
        "name",
        if columns.date { "start (UTC)" } else { "start" },
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

/// Which of the list's optional widths the terminal has room for. The name column, the one that
/// tells runs apart, keeps at least [`Columns::NAME_MIN`] columns: the room beyond it goes first
/// to the verdict's label (why a run failed), then to the start's date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Columns {
    /// The verdict's label at full width, and a triage note's label beside the name.
    wide_eval: bool,
    /// The start's date beside its time.
    date: bool,
    /// What is left for the name.
    name_width: u16,
}

impl Columns {
    const NAME_MIN: u16 = 28;
    /// Borders, the fixed columns (cursor 1, facets 3, duration 7, tools 7, llm 4, tokens 6)
    /// and the eight gaps between the nine columns.
    const FIXED: u16 = 2 + 1 + 3 + 7 + 7 + 4 + 6 + 8;

    fn for_width(width: u16) -> Columns {
        let room = |start: u16, eval: u16| width >= Self::FIXED + start + eval + Self::NAME_MIN;
        let (wide_eval, date) = (room(8, 30), room(19, 30));
        let mut columns = Columns {
            wide_eval,
            date,
            name_width: 0,
        };
        columns.name_width =
            width.saturating_sub(Self::FIXED + columns.start_width() + columns.eval_width());
        columns
    }

    fn start_width(self) -> u16 {
        if self.date { 19 } else { 8 }
    }

    fn eval_width(self) -> u16 {
        if self.wide_eval { 30 } else { 12 }
    }

    /// A run's start as the column has room for it: date and time, or the time alone.
    fn start(self, unix_nano: u64) -> String {
        let start = clock(unix_nano);
        match self.date {
            true => start,
            false => start.get(11..).unwrap_or("").to_owned(),
        }
    }
}

/// A run's name fitted to `room` columns. A name made of parts (`task · sample · epoch 2`,
/// `scenario · turn 1`) that does not fit gives up its first parts for `…`: its last ones tell
/// runs apart. One whose last part alone does not fit is left whole, for the table to cut at
/// its end as any other name.
fn fitted_name(name: String, room: usize) -> String {
    if name.width() <= room {
        return name;
    }
    let parts: Vec<&str> = name.split(" · ").collect();
    (1..parts.len())
        .map(|first| format!("… · {}", parts[first..].join(" · ")))
        .find(|shorter| shorter.width() <= room)
        .unwrap_or(name)
}

/// A gold source shortened for a border title: the file name (and a scenario's `[id]`), never
/// the directories, masked like any other text from the inputs.
fn gold_label(source: &str) -> String {
    let short = source.rsplit(['/', '\\']).next().unwrap_or(source);
    crate::redact::sanitize_line(short)
}

/// The facets column: the failing facets' glyphs (`✗`, `◐`, `⚑`, `≠`), or `✓`.
fn facet_cell<'a>(facets: Option<&Facets>, theme: &Theme) -> Cell<'a> {
    match facets {
        Some(f) if f.failing() => Cell::from(Span::styled(
            f.glyphs(),
            theme.style(
                if f.health == Health::Error || f.eval_failed() || f.gold_mismatch() {
                    Role::StatusError
                } else {
                    Role::StatusDegraded
                },
            ),
        )),
        _ => Cell::from(Span::styled("✓", theme.health(Health::Ok))),
    }
}

/// A conversation's row: its id, turns, how many fail, and its own verdict when the
/// evaluator gave one (arksim `evaluation_status`, goal completion).
fn conversation_row<'a>(
    app: &App,
    id: &str,
    listed_turns: std::ops::Range<usize>,
    theme: &Theme,
    columns: Columns,
    selected: bool,
) -> Row<'a> {
    let turns = listed_turns.len();
    let turn_facets: Vec<&Facets> = listed_turns
        .clone()
        .filter_map(|pos| app.triage.facets_at(pos))
        .collect();
    let members: Vec<&Invocation> = listed_turns
        .filter_map(|pos| app.store.get(app.list.id(pos)?))
        .collect();
    let failing = turn_facets.iter().filter(|f| f.failing()).count();
    let mut glyphs: Vec<char> = Vec::new();
    for facet in turn_facets.iter().flat_map(|f| f.list()) {
        if !glyphs.contains(&facet.glyph()) {
            glyphs.push(facet.glyph());
        }
    }
    let facet = if glyphs.is_empty() {
        Span::styled("✓", theme.health(Health::Ok))
    } else {
        Span::styled(
            glyphs.into_iter().collect::<String>(),
            theme.style(Role::StatusError),
        )
    };
    let folded = app.folded_conversations.contains(id);
    let start = members
        .iter()
        .map(|i| i.summary().start_unix_nano)
        .min()
        .unwrap_or(0);
    let end = members
        .iter()
        .map(|i| i.summary().end_unix_nano)
        .max()
        .unwrap_or(0);
    let tokens_total: u64 = members
        .iter()
        .map(|i| i.summary().tokens())
        .fold(0u64, u64::saturating_add);
    let tools: usize = members.iter().map(|i| i.summary().tool_calls.len()).sum();
    let llm: usize = members
        .iter()
        .map(|i| i.summary().counts.llm as usize)
        .sum();
    let verdict = conversation_verdict(&members);
    let verdict_cell = match verdict {
        Some((passed, text)) => Line::styled(
            format!("{} {text}", if passed { "✓" } else { "✗" }),
            theme.style(if passed {
                Role::StatusOk
            } else {
                Role::StatusError
            }),
        ),
        None if failing > 0 => Line::styled(
            format!("✗ {failing} of {turns} failing"),
            theme.style(Role::StatusError),
        ),
        None => Line::raw(""),
    };
    Row::new([
        Cell::from(Span::styled(
            if selected { "›" } else { " " },
            theme.style(Role::BorderFocused),
        )),
        Cell::from(facet),
        Cell::from(Span::styled(
            format!(
                "{} {turns} turns · {}",
                if folded { "▸" } else { "▾" },
                redact::shown_line(id, app.reveal)
            ),
            theme.style(Role::Title),
        )),
        Cell::from(columns.start(start)),
        Cell::from(duration_ms(end.saturating_sub(start) as f64 / 1e6)),
        Cell::from(tools.to_string()),
        Cell::from(llm.to_string()),
        Cell::from(tokens(tokens_total)),
        Cell::from(verdict_cell),
    ])
}

/// The conversation's own verdict from its evaluator records: arksim's `evaluation_status`
/// and goal completion score, carried by the evaluation spans of its turns.
pub fn conversation_verdict(members: &[&Invocation]) -> Option<(bool, String)> {
    let attr = |key: &str| {
        members.iter().find_map(|inv| {
            inv.spans
                .iter()
                .filter(|s| s.is_evaluator())
                .find_map(|s| s.attr(key).map(|v| (*v).clone()))
        })
    };
    let status = attr("arksim.conversation.evaluation_status")
        .and_then(|v| v.as_str().map(str::to_owned))?;
    let goal = attr("arksim.conversation.goal_completion_score").and_then(|v| match v {
        AttrValue::Float(f) => Some(f),
        AttrValue::Int(i) => Some(i as f64),
        _ => None,
    });
    let passed = matches!(
        status.trim().to_ascii_lowercase().as_str(),
        "done" | "passed" | "pass" | "success" | "completed"
    );
    let mut text = status;
    if let Some(goal) = goal {
        text.push_str(&format!(" · goal {goal:.2}"));
    }
    Some((passed, text))
}

fn row_for<'a>(
    app: &App,
    inv: &Invocation,
    facets: Option<&Facets>,
    columns: Columns,
    selected: bool,
    nested: bool,
) -> Row<'a> {
    let gold_score = app.gold.score(&inv.id);
    let mode = app.reveal;
    let theme = &app.config.theme;
    let s = inv.summary();
    let start = columns.start(s.start_unix_nano);
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
    let eval = match inv.eval() {
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
            let failed = facets.is_some_and(Facets::eval_failed) || !v.passed;
            let (glyph, role) = if failed {
                ("✗", Role::StatusError)
            } else {
                ("✓", Role::StatusOk)
            };
            let score = v.score.map(|x| format!("{x:.2} ")).unwrap_or_default();
            // A failed verdict names itself, in the room its glyph and score leave; a pass
            // needs only its score.
            let label = if failed && !v.label.trim().is_empty() {
                let room = usize::from(columns.eval_width())
                    .saturating_sub(glyph.width() + 1 + score.width());
                failed_label_in(redact::shown_line(&v.label, mode), room, || {
                    app.store
                        .scorer_rule()
                        .failing(v)
                        .map(|scorer| redact::shown_line(&scorer.label(), mode))
                        .collect()
                })
            } else {
                String::new()
            };
            Line::styled(
                format!("{glyph} {score}{label}").trim_end().to_owned(),
                theme.style(role),
            )
        }
    };
    Row::new([
        Cell::from(Span::styled(
            if selected { "›" } else { " " },
            theme.style(Role::BorderFocused),
        )),
        facet_cell(facets, theme),
        Cell::from({
            let note = app.store.notes().of_run(&inv.id.text());
            let room = usize::from(columns.name_width)
                .saturating_sub(if nested { 2 } else { 0 } + if note.is_some() { 2 } else { 0 });
            let name = fitted_name(redact::shown_line(&s.name, mode), room);
            let marks = app
                .list_search
                .query
                .as_ref()
                .map(|q| q.highlight(&name))
                .unwrap_or_default();
            let mut spans = Vec::new();
            if nested {
                spans.push(Span::raw("  "));
            }
            if note.is_some() {
                spans.push(Span::styled(
                    format!("{NOTED_GLYPH} "),
                    theme.style(Role::Search),
                ));
            }
            spans.extend(highlight::marked_spans(
                &name,
                &marks,
                theme.name(s.health),
                theme.style(Role::Match),
            ));
            // The label is a plain word (the notes file's reader refuses any other).
            if let Some(note) = note.filter(|n| columns.wide_eval && !n.label.is_empty()) {
                spans.push(Span::styled(
                    format!(" [{}]", note.label),
                    theme.style(Role::Dim),
                ));
            }
            Line::from(spans)
        }),
        Cell::from(start),
        Cell::from(duration_ms(s.duration_ms())),
        Cell::from(tools),
        Cell::from(s.counts.llm.to_string()),
        Cell::from(tokens(s.tokens())),
        Cell::from(eval),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_of_parts_gives_up_its_first_parts_to_fit() {
        let fit = |name: &str, room| fitted_name(name.to_owned(), room);
        assert_eq!(fit("geo_tools · geo-05", 22), "geo_tools · geo-05");
        assert_eq!(
            fit("capital_epochs · cap-01 · epoch 1", 22),
            "… · cap-01 · epoch 1"
        );
        assert_eq!(fit("capital_epochs · cap-01 · epoch 1", 12), "… · epoch 1");
        // The last part alone does not fit: the name stays whole, for the table to cut.
        let long = "anthropic messages · toolscore/anthropic-missing-call.json";
        assert_eq!(fit(long, 22), long);
        assert_eq!(
            fit("invoke_agent research-assistant", 10),
            "invoke_agent research-assistant"
        );
    }
}
