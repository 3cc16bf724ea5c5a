//! The failure summary (`S`): what kind of failures the listed runs have, and how many. Its
//! tables and charts are [`Breakdown`] over what the list shows (so it follows the filter), the
//! same computation as the report's tables. Up/Down select a row; Enter applies the row's query
//! as the list's filter and closes the summary; Esc closes it.
//!
//! The state holds the breakdown and the list version it was computed for; `refresh` computes
//! it again when the list changed (a new filter, runs arriving live), and `render` is a pure
//! function of the state and the app.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Clear, Paragraph, Sparkline};

use super::{Outcome, Overlay, any_key};
use crate::breakdown::{Breakdown, Distribution, Row};
use crate::query::worker::GoldSnapshot;
use crate::redact;
use crate::sources::SourceStatus;
use crate::store::Invocation;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::keymap::{KeyContext, Keymap, Scope};
use crate::tui::layout::centered;
use crate::tui::theme::Role;
use crate::views::summary::SEVERAL_ROWS;

/// Movement selects a row, Enter filters by it, either toggle or Cancel closes.
pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Summary,
    inherits: &[
        Action::ToggleSummary,
        Action::ToggleHelp,
        Action::Cancel,
        Action::Down,
        Action::Up,
        Action::PageDown,
        Action::PageUp,
        Action::Top,
        Action::Bottom,
        Action::Quit,
    ],
    text_input: false,
};

/// The open summary: the breakdown of the listed runs, and the selected row.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub breakdown: Breakdown,
    /// The list version the breakdown is of ([`refresh`] computes it again when it moved).
    pub list_version: u64,
    /// Index into [`Summary::rows`].
    pub selected: usize,
    /// When the breakdown was computed, and how long that took: while runs keep arriving, it
    /// is computed again only once the UI thread has spent [`OTHER_WORK_PER_SUMMARY`] times as
    /// long on everything else (see [`due`]).
    pub computed_at: Instant,
    pub took: Duration,
}

/// While the list keeps changing, the summary takes at most one part in this many of the UI
/// thread's time: computing it over 100,000 runs takes tens of milliseconds.
const OTHER_WORK_PER_SUMMARY: u32 = 9;
/// However long the last computation took, a changed list shows in the summary this soon.
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// One line of the summary's body: a section heading or a row of it.
enum Item<'a> {
    Heading(&'static str),
    Row(&'a Row),
}

impl Summary {
    /// The summary of what `app` lists now.
    pub fn of(app: &App) -> Summary {
        let computed_at = Instant::now();
        let breakdown = breakdown_of(app);
        Summary {
            breakdown,
            list_version: app.list.version,
            selected: 0,
            computed_at,
            took: computed_at.elapsed(),
        }
    }

    /// Whether the list changed since the breakdown was computed.
    pub fn is_stale(&self, app: &App) -> bool {
        self.list_version != app.list.version
    }

    /// Every selectable row in the order shown: the tables, then the distributions' bins.
    pub fn rows(&self) -> Vec<&Row> {
        self.items()
            .into_iter()
            .filter_map(|item| match item {
                Item::Row(row) => Some(row),
                Item::Heading(_) => None,
            })
            .collect()
    }

    fn items(&self) -> Vec<Item<'_>> {
        let mut items = Vec::new();
        for table in &self.breakdown.tables {
            items.push(Item::Heading(table.kind.title()));
            items.extend(table.rows.iter().map(Item::Row));
        }
        for distribution in &self.breakdown.distributions {
            if distribution.bins.is_empty() {
                continue;
            }
            items.push(Item::Heading(distribution.measure.title()));
            items.extend(distribution.bins.iter().map(Item::Row));
        }
        items
    }

    pub fn update(&mut self, action: Action, app: &mut App) -> Outcome {
        let last = self.rows().len().saturating_sub(1);
        match action {
            Action::Down => self.selected = (self.selected + 1).min(last),
            Action::Up => self.selected = self.selected.saturating_sub(1),
            Action::PageDown => self.selected = (self.selected + 10).min(last),
            Action::PageUp => self.selected = self.selected.saturating_sub(10),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = last,
            Action::ApplyRowFilter => {
                let query = self.rows().get(self.selected).map(|row| row.query.clone());
                match query {
                    Some(Some(query)) => {
                        crate::tui::app::apply_list_filter(app, &query);
                        return Outcome::Close;
                    }
                    Some(None) => {
                        app.message = Some(
                            "this row has no filter (its text is masked, or no query spells it)"
                                .into(),
                        );
                    }
                    None => {}
                }
            }
            Action::ToggleSummary | Action::Cancel => return Outcome::Close,
            Action::ToggleHelp | Action::Quit | Action::Resize { .. } => {
                return Outcome::NotHandled;
            }
            _ => {}
        }
        Outcome::Handled
    }

    pub fn render(&self, frame: &mut Frame, screen: Rect, app: &App) {
        let theme = &app.config.theme;
        let area = centered(screen, 90, 90);
        let mut title = title(&app.config.keymap, &self.breakdown);
        if self.is_stale(app) {
            title.push_str("· updating ");
        }
        let block = Block::bordered()
            .title(Span::styled(title, theme.style(Role::Title)))
            .border_style(theme.border(true));
        let inner = block.inner(area);
        frame.render_widget(Clear, area);
        frame.render_widget(block, area);
        let live = is_live(app);
        let charts_height = if inner.height >= 24 { 9 } else { 0 };
        let spark_height = if live && inner.height >= 30 { 3 } else { 0 };
        let [body, charts, spark, footer] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(charts_height),
            Constraint::Length(spark_height),
            Constraint::Length(1),
        ])
        .areas(inner);
        self.render_rows(frame, body, app);
        if charts_height > 0 {
            render_charts(frame, charts, app, &self.breakdown.distributions);
        }
        if spark_height > 0 {
            render_failures_over_time(frame, spark, app, &self.breakdown);
        }
        let selected_query = self.rows().get(self.selected).map(|row| row.query.clone());
        let footer_text = match selected_query {
            Some(Some(query)) => format!("Enter filters: {query}"),
            Some(None) => "this row has no filter".to_owned(),
            None => "nothing listed".to_owned(),
        };
        frame.render_widget(
            Paragraph::new(Line::styled(
                redact::sanitize_line(&footer_text),
                theme.style(Role::Dim),
            )),
            footer,
        );
    }

    fn render_rows(&self, frame: &mut Frame, area: Rect, app: &App) {
        let theme = &app.config.theme;
        let width = area.width as usize;
        // Room for the counts: runs, then calls, failed calls and the rate on tool rows.
        let label_width = width.saturating_sub(52).clamp(12, 60);
        let mut lines = Vec::new();
        let mut selected_line = 0;
        let mut row_index = 0;
        for item in self.items() {
            match item {
                Item::Heading(title) => {
                    if !lines.is_empty() {
                        lines.push(Line::raw(""));
                    }
                    lines.push(Line::styled(title, theme.style(Role::Header)));
                }
                Item::Row(row) => {
                    let selected = row_index == self.selected;
                    if selected {
                        selected_line = lines.len();
                    }
                    lines.push(row_line(row, selected, label_width, app));
                    row_index += 1;
                }
            }
        }
        let height = area.height as usize;
        // The selected row stays on screen, a line of its section above it when there is room.
        let offset = (selected_line + 2)
            .saturating_sub(height)
            .min(lines.len().saturating_sub(height));
        let shown: Vec<Line> = lines.into_iter().skip(offset).take(height).collect();
        frame.render_widget(Paragraph::new(shown), area);
    }
}

/// ` Summary: 4 failing of 7 listed · a run may count in several rows — S or Esc closes `.
pub fn title(keymap: &Keymap, breakdown: &Breakdown) -> String {
    let counts = format!(
        " Summary: {} failing of {} listed · {SEVERAL_ROWS}",
        breakdown.failing, breakdown.listed
    );
    match any_key(keymap, &KEYS, &[Action::ToggleSummary, Action::Cancel]) {
        Some(close) => format!("{counts} — {close} closes "),
        None => format!("{counts} "),
    }
}

fn row_line(row: &Row, selected: bool, label_width: usize, app: &App) -> Line<'static> {
    let theme = &app.config.theme;
    // Trace text, shown like all of it: masked until revealed, made inert.
    let label = redact::shown_line(&row.shown_label(app.reveal), app.reveal);
    let label = fit(&label, label_width);
    let runs = if row.runs == 1 { "run " } else { "runs" };
    let mut text = format!("  {label:<label_width$} {:>6} {runs}", row.runs);
    if let Some(calls) = row.calls {
        let rate = row
            .error_rate()
            .map_or_else(String::new, |r| format!(" {:>4.0}%", r * 100.0));
        let noun = if calls == 1 { "call " } else { "calls" };
        text.push_str(&format!(
            " {calls:>6} {noun} {:>6} failed{rate}",
            row.failed_calls.unwrap_or(0)
        ));
    } else if let Some(failed) = row.failed_calls {
        text.push_str(&format!(" {failed:>6} failed calls"));
    }
    if row.query.is_none() {
        text.push_str("  (no filter)");
    }
    let style = if selected {
        theme.style(Role::Selection)
    } else if row.runs == 0 || row.query.is_none() {
        theme.style(Role::Dim)
    } else {
        theme.style(Role::Text)
    };
    Line::styled(text, style)
}

/// `text` cut to `width` characters, an ellipsis marking the cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn render_charts(frame: &mut Frame, area: Rect, app: &App, distributions: &[Distribution]) {
    let theme = &app.config.theme;
    let shown: Vec<&Distribution> = distributions
        .iter()
        .filter(|d| !d.bins.is_empty())
        .collect();
    if shown.is_empty() {
        return;
    }
    let areas = Layout::horizontal(vec![Constraint::Fill(1); shown.len()]).split(area);
    for (distribution, &area) in shown.into_iter().zip(areas.iter()) {
        let bins = distribution.bins.len().max(1) as u16;
        let bar_width = (area.width.saturating_sub(2) / bins)
            .saturating_sub(1)
            .clamp(1, 9);
        // A bar is labelled by where its range starts. A label wider than its bar would be cut:
        // then the bars go unlabelled and the title says the range they cover.
        let starts: Vec<String> = distribution
            .bins
            .iter()
            .map(|bin| redact::sanitize_line(bin.label.split(" – ").next().unwrap_or("")))
            .collect();
        let fits = starts
            .iter()
            .all(|s| s.chars().count() <= usize::from(bar_width));
        let bars: Vec<Bar> = distribution
            .bins
            .iter()
            .zip(starts)
            .map(|(bin, start)| {
                let label = if fits { start } else { String::new() };
                Bar::default()
                    .value(bin.runs as u64)
                    .label(Line::raw(label))
            })
            .collect();
        // From where the first bar starts to where the last one ends.
        let range = match (distribution.bins.first(), distribution.bins.last(), fits) {
            (Some(first), Some(last), false) => format!(
                "· {} … {} ",
                redact::sanitize_line(first.label.split(" – ").next().unwrap_or("")),
                redact::sanitize_line(last.label.rsplit(" – ").next().unwrap_or(""))
            ),
            _ => String::new(),
        };
        let chart = BarChart::default()
            .block(
                Block::bordered()
                    .title(Span::styled(
                        format!(" {} (runs) {range}", distribution.measure.title()),
                        theme.style(Role::Title),
                    ))
                    .border_style(theme.border(false)),
            )
            .data(BarGroup::default().bars(&bars))
            .bar_width(bar_width)
            .bar_gap(1)
            .bar_style(theme.style(Role::SpanTool))
            .value_style(theme.style(Role::Selection));
        frame.render_widget(chart, area);
    }
}

fn render_failures_over_time(frame: &mut Frame, area: Rect, app: &App, breakdown: &Breakdown) {
    let theme = &app.config.theme;
    let spark = Sparkline::default()
        .block(
            Block::bordered()
                .title(Span::styled(
                    " Failing runs over time (live) ",
                    theme.style(Role::Title),
                ))
                .border_style(theme.border(false)),
        )
        .data(&breakdown.failures_over_time)
        .style(theme.style(Role::StatusError));
    frame.render_widget(spark, area);
}

/// Whether runs can still arrive: a watched directory, a listener or an attached feed.
fn is_live(app: &App) -> bool {
    app.sources.iter().any(|s| {
        matches!(
            s,
            SourceStatus::Watching { .. }
                | SourceStatus::Listening { .. }
                | SourceStatus::Attached { .. }
        )
    })
}

/// The breakdown of the listed runs, with the gold outcomes the list's `is:` queries use.
fn breakdown_of(app: &App) -> Breakdown {
    let runs: Vec<&Invocation> = app.list.runs().iter().map(|inv| inv.as_ref()).collect();
    let gold = GoldSnapshot(app.gold.outcomes());
    Breakdown::of(&runs, &gold)
}

/// Opens the summary of what is listed.
pub fn open(app: &mut App) {
    app.overlay = Some(Overlay::Summary(Box::new(Summary::of(app))));
}

/// When the open summary, out of date, is to be computed again: `None` when it is current or
/// closed. A summary that took `t` to compute waits `OTHER_WORK_PER_SUMMARY × t` (at most
/// [`LONGEST_WAIT`]) after it was computed, so runs arriving live never keep the UI thread
/// busy with it; one that took microseconds is due at once.
pub fn due(app: &App) -> Option<Instant> {
    match &app.overlay {
        Some(Overlay::Summary(summary)) if summary.is_stale(app) => {
            let wait = (summary.took * OTHER_WORK_PER_SUMMARY).min(LONGEST_WAIT);
            Some(summary.computed_at + wait)
        }
        _ => None,
    }
}

/// Computes the open summary again when the list changed under it (a filter, runs arriving)
/// and it is due (see [`due`]); the selection stays where it was, within the rows. Until then
/// its title says it is updating, and the event loop wakes at the due time.
pub fn refresh(app: &mut App) {
    refresh_at(app, Instant::now());
}

/// [`refresh`] as at `now`.
pub fn refresh_at(app: &mut App, now: Instant) {
    if due(app).is_none_or(|due| now < due) {
        return;
    }
    let computed_at = Instant::now();
    let breakdown = breakdown_of(app);
    let took = computed_at.elapsed();
    let version = app.list.version;
    if let Some(Overlay::Summary(summary)) = &mut app.overlay {
        summary.breakdown = breakdown;
        summary.list_version = version;
        summary.computed_at = computed_at;
        summary.took = took;
        summary.selected = summary.selected.min(summary.rows().len().saturating_sub(1));
    }
}
