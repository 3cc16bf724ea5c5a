//! The `?` overlay: every binding of every scope, from the same keymap table as the footer.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::layout::centered;
use crate::redact;
use crate::tui::app::App;
use crate::tui::keymap::Scope;
use crate::tui::theme::Role;

fn scope_title(scope: Scope) -> &'static str {
    match scope {
        Scope::Global => "Everywhere",
        Scope::List => "Invocation list",
        Scope::Tree => "Span tree",
        Scope::Detail => "Detail pane",
        Scope::Payload => "Full-screen detail",
    }
}

/// The overlay's lines (also used by tests to check every binding is listed).
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let theme = &app.config.theme;
    let mut lines = Vec::new();
    for scope in Scope::ALL {
        let hints = app.config.keymap.hints(scope);
        if hints.is_empty() {
            continue;
        }
        lines.push(Line::styled(scope_title(scope), theme.style(Role::Title)));
        for hint in hints {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {:<22}", hint.keys.join(" ")),
                    theme.style(Role::HintKey),
                ),
                Span::raw(hint.action.description().unwrap_or("").to_owned()),
            ]));
        }
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled("Gold diff view (d)", theme.style(Role::Title)));
    for (keys, what) in super::status::DIFF_HINTS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {keys:<22}"), theme.style(Role::HintKey)),
            Span::raw((*what).to_owned()),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Payloads are redacted (structure only) until `r`; secrets stay masked either way.",
        theme.style(Role::Dim),
    ));
    let path = app
        .config
        .path
        .as_ref()
        .map(|p| redact::sanitize_line(&p.display().to_string()))
        .unwrap_or_else(|| "$TOOLCAP_TUI_CONFIG or <config dir>/toolcap-tui/config.toml".into());
    lines.push(Line::styled(
        format!("Keys and colours: [keys.<scope>] and [theme] in {path}"),
        theme.style(Role::Dim),
    ));
    lines
}

/// The problems overlay's lines: errors and warnings in arrival order, then the notes (files
/// skipped because they are not traces) under their own heading, so they never read as failures.
pub fn problem_lines(app: &App) -> Vec<Line<'static>> {
    let theme = &app.config.theme;
    let problems = app.store.problems();
    let (counted, notes): (Vec<_>, Vec<_>) = problems.iter().partition(|p| p.is_counted());
    let mut lines: Vec<Line<'static>> = counted
        .iter()
        .map(|p| {
            let role = match p.severity {
                crate::model::Severity::Error => Role::StatusError,
                _ => Role::StatusDegraded,
            };
            Line::styled(
                redact::shown_line(&p.to_string(), app.reveal),
                theme.style(role),
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled("no problems", theme.style(Role::Dim)));
    }
    if !notes.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("notes ({}): skipped, not counted as problems", notes.len()),
            theme.style(Role::Dim),
        ));
        lines.extend(notes.iter().map(|p| {
            Line::styled(
                redact::shown_line(&p.to_string(), app.reveal),
                theme.style(Role::Dim),
            )
        }));
    }
    lines
}

pub fn render(frame: &mut Frame, screen: Rect, app: &App) {
    overlay(
        frame,
        screen,
        app,
        " Keys — ? or Esc closes, j/k scroll ",
        help_lines(app),
    );
}

pub fn render_problems(frame: &mut Frame, screen: Rect, app: &App) {
    overlay(
        frame,
        screen,
        app,
        " Problems — p or Esc closes ",
        problem_lines(app),
    );
}

fn overlay(frame: &mut Frame, screen: Rect, app: &App, title: &str, lines: Vec<Line<'static>>) {
    let theme = &app.config.theme;
    let area = centered(screen, 80, 90);
    let height = area.height.saturating_sub(2) as usize;
    let scroll = app.help_scroll.min(lines.len().saturating_sub(height));
    let block = Block::bordered()
        .title(Span::styled(title.to_owned(), theme.style(Role::Title)))
        .border_style(theme.border(true));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(scroll).collect::<Vec<_>>()).block(block),
        area,
    );
}
