//! The detail pane (and its full-screen form): a window onto lines built by `inspect` when
//! the selection changed.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Paragraph};

use crate::tui::action::Action;
use crate::tui::app::{App, Pane};
use crate::tui::keymap::{Keymap, Scope};
use crate::tui::theme::Role;
use crate::tui::ui::highlight;

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.config.theme;
    let focused = app.focus == Pane::Detail || app.payload_fullscreen;
    let lines = &app.detail.content.lines;
    let height = area.height.saturating_sub(2) as usize;
    let first = app.detail.scroll.min(lines.len());
    let last = (first + height).min(lines.len());
    let position = if lines.len() > height {
        format!(" {}–{} of {} ", first + 1, last, lines.len())
    } else {
        String::new()
    };
    let name = if app.payload_fullscreen {
        full_screen_title(&app.config.keymap)
    } else {
        " Detail ".into()
    };
    let (mode_text, mode_role) = match app.reveal {
        crate::redact::Reveal::Redacted => (" redacted ", Role::ModeRedacted),
        crate::redact::Reveal::Revealed => (" revealed ", Role::ModeRevealed),
    };
    let block = Block::bordered()
        .title(Span::styled(name, theme.style(Role::Title)))
        .title(Span::styled(mode_text, theme.style(mode_role)))
        .title_bottom(Span::styled(position, theme.style(Role::Dim)))
        .border_style(theme.border(focused));
    let window = lines.get(first..last).unwrap_or_default();
    // The matched text of a found span is marked in what the pane shows (already redacted
    // or masked), never in hidden payload text.
    let find_query = app.find.query.as_ref().filter(|_| {
        app.selected_span_index()
            .is_some_and(|span| app.find.is_match(span))
    });
    let window: Vec<ratatui::text::Line> = match (app.detail_find.needle(), find_query) {
        // Text found in the pane is marked in what it shows, like a span's match.
        (Some(needle), _) => window
            .iter()
            .map(|l| highlight::mark_text(l, needle, theme.style(Role::Match)))
            .collect(),
        (None, Some(q)) => window
            .iter()
            .map(|l| highlight::highlight_line(l, q, theme.style(Role::Match)))
            .collect(),
        (None, None) => window.to_vec(),
    };
    frame.render_widget(Paragraph::new(window).block(block), area);
}

/// ` Span detail · full screen (f/Esc closes) `, with the keys bound now.
fn full_screen_title(keymap: &Keymap) -> String {
    let scopes = [Scope::Payload, Scope::Global];
    let keys: Vec<String> = [Action::TogglePayloadFullscreen, Action::Cancel]
        .into_iter()
        .filter_map(|action| keymap.first_key(&scopes, action))
        .collect();
    match keys.is_empty() {
        true => " Span detail · full screen ".into(),
        false => format!(" Span detail · full screen ({} closes) ", keys.join("/")),
    }
}
