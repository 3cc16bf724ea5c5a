//! The span tree of the selected invocation, drawn row by row for the visible window only
//! (a 10k-span run costs what fits on screen). Each row: fold marker, kind glyph, name, tool or
//! model, attempt tag, duration and a waterfall bar placing the span within the run.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::model::Health;
use crate::redact;
use crate::store::{Invocation, TreeRow};
use crate::tui::app::{App, Pane};
use crate::tui::format::duration_ms;
use crate::tui::theme::{Role, Theme};
use crate::tui::ui::highlight;

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.config.theme;
    let focused = app.focus == Pane::Tree;
    let Some(inv) = app.invocation() else {
        let block = Block::bordered()
            .title(Span::styled(" Spans ", theme.style(Role::Title)))
            .border_style(theme.border(focused));
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let finding = app.find.editing || app.find.active;
    let title = if finding {
        format!(
            " Spans · find: {}{} · {} ",
            redact::sanitize_line(app.find.editor.text()),
            if app.find.editing { "▏" } else { "" },
            app.find.position_label()
        )
    } else {
        format!(
            " Spans · {} ({} of {}) ",
            redact::shown_line(&inv.summary().name, app.reveal),
            app.tree.visible.len(),
            inv.spans.len()
        )
    };
    let block = Block::bordered()
        .title(Span::styled(title, theme.style(Role::Title)))
        .border_style(theme.border(focused));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let selected = app.selected_span_index();
    let tree = inv.tree();
    let rows = &tree.rows;
    let lines: Vec<Line> = app
        .tree
        .visible
        .iter()
        .skip(app.tree.offset)
        .take(inner.height as usize)
        .filter_map(|&r| rows.get(r))
        .map(|row| {
            let health = tree.health(row.span());
            let mut line = row_line(app, inv, row, health, inner.width.saturating_sub(1), theme);
            if let Some(q) = app
                .find
                .query
                .as_ref()
                .filter(|_| app.find.is_match(row.span()))
            {
                line = highlight::highlight_line(&line, q, theme.style(Role::Match));
            }
            let (cursor, style) = if Some(row.span()) == selected {
                ("›", theme.style(Role::Selection))
            } else {
                (" ", ratatui::style::Style::new())
            };
            // A matched span is marked even when its name shows no matched text.
            let cursor = if cursor == " " && app.find.is_match(row.span()) {
                "•"
            } else {
                cursor
            };
            let mut spans = vec![Span::styled(cursor, theme.style(Role::BorderFocused))];
            spans.extend(line.spans);
            Line::from(spans).patch_style(style)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn bar_width(width: u16) -> usize {
    if width < 36 {
        0
    } else {
        (width as usize / 5).clamp(6, 24)
    }
}

fn row_line<'a>(
    app: &App,
    inv: &Invocation,
    row: &TreeRow,
    health: Health,
    width: u16,
    theme: &Theme,
) -> Line<'a> {
    let Some(span) = inv.spans.get(row.span()) else {
        return Line::raw("");
    };
    let bar_w = bar_width(width);
    let right_w = 8 + if bar_w > 0 { bar_w + 1 } else { 0 };
    let left_budget = (width as usize).saturating_sub(right_w);

    let indent = "  ".repeat(row.depth().min(left_budget / 6));
    let fold = if row.child_count() == 0 {
        "  "
    } else if app.is_collapsed(&inv.id.text(), &span.span_id.text()) {
        "▸ "
    } else {
        "▾ "
    };
    let mut left: Vec<(String, ratatui::style::Style)> = vec![
        (format!("{indent}{fold}"), theme.style(Role::Dim)),
        (format!("{} ", span.kind.glyph()), theme.kind(span.kind)),
        (
            redact::shown_line(&span.name, app.reveal),
            theme.name(health),
        ),
    ];
    if let Some(tool) = span.tool_name().filter(|t| !span.name.contains(*t)) {
        left.push((
            format!(" ⚒ {}", redact::shown_line(tool, app.reveal)),
            theme.style(Role::SpanTool),
        ));
    }
    if let Some(model) = span.model().filter(|m| !span.name.contains(*m)) {
        left.push((
            format!(" · {}", redact::shown_line(model, app.reveal)),
            theme.style(Role::SpanLlm),
        ));
    }
    if let Some(tag) = attempt_tag(inv, row.span()) {
        left.push((format!(" {tag}"), theme.style(Role::Attempt)));
    }
    if health == Health::Degraded {
        left.push((" ◐".into(), theme.style(Role::StatusDegraded)));
    }
    if span.status.is_error() {
        left.push((" ✗".into(), theme.style(Role::StatusError)));
    }
    if row.orphan {
        left.push((" ⚠ orphan".into(), theme.style(Role::Orphan)));
    }
    if row.cycle {
        left.push((" ↻ cycle".into(), theme.style(Role::Orphan)));
    }
    if row.child_count() > 0 && app.is_collapsed(&inv.id.text(), &span.span_id.text()) {
        left.push((format!(" (+{})", row.child_count()), theme.style(Role::Dim)));
    }

    let mut spans = Vec::new();
    let mut used = 0;
    for (text, style) in left {
        let remaining = left_budget.saturating_sub(used);
        if remaining == 0 {
            break;
        }
        let cut = truncate(&text, remaining);
        used += cut.width();
        spans.push(Span::styled(cut, style));
    }
    spans.push(Span::raw(" ".repeat(left_budget.saturating_sub(used))));
    spans.push(Span::styled(
        format!("{:>8}", duration_ms(span.duration_ms())),
        theme.style(Role::Dim),
    ));
    if bar_w > 0 {
        spans.push(Span::raw(" "));
        let bar_role = match health {
            Health::Error => theme.style(Role::StatusError),
            _ => theme.style(Role::Waterfall),
        };
        let (before, len) = bar_cells(inv, row.span(), bar_w);
        spans.push(Span::styled("·".repeat(before), theme.style(Role::Dim)));
        spans.push(Span::styled("━".repeat(len), bar_role));
        spans.push(Span::raw(" ".repeat(bar_w - before - len)));
    }
    Line::from(spans)
}

/// `↻ 2/3` for the second of three sibling attempts of one LLM call.
fn attempt_tag(inv: &Invocation, index: usize) -> Option<String> {
    let span = inv.spans.get(index)?;
    let attempt = span.identity().node.attempt_index?;
    let siblings = span
        .parent_span_id
        .as_ref()
        .and_then(|p| inv.span_by_id(p))
        .map(|p| {
            inv.tree()
                .children_of(p)
                .filter_map(|k| inv.spans.get(k))
                .filter(|s| s.kind == span.kind && s.identity().node.attempt_index.is_some())
                .count()
        })
        .unwrap_or(1)
        .max(attempt as usize + 1);
    (siblings > 1 || attempt > 0).then(|| format!("↻ attempt {}/{siblings}", attempt + 1))
}

/// Cells before the bar and the bar's length, for a span within its run.
fn bar_cells(inv: &Invocation, index: usize, width: usize) -> (usize, usize) {
    let summary = inv.summary();
    let Some(span) = inv.spans.get(index) else {
        return (0, 0);
    };
    let total = summary
        .end_unix_nano
        .saturating_sub(summary.start_unix_nano)
        .max(1) as f64;
    let start = span.start_unix_nano.saturating_sub(summary.start_unix_nano) as f64 / total;
    let dur = span.end_unix_nano.saturating_sub(span.start_unix_nano) as f64 / total;
    let before = ((start * width as f64).floor() as usize).min(width.saturating_sub(1));
    let len = ((dur * width as f64).ceil() as usize).clamp(1, width - before);
    (before, len)
}

fn truncate(text: &str, max: usize) -> String {
    if text.width() <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}
