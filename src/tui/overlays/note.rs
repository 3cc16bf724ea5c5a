//! The note prompt (`a`): a triage note on the selected run. A label from the configured set
//! (Tab and Shift-Tab cycle through them and "no label"; a digit picks one while the text is
//! still empty) and a line of free text; Enter appends it to the notes file through the same
//! writer as `annotate`, Esc leaves without writing. No label and no text clears the run's note.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{Outcome, any_key};
use crate::notes::{MAX_NOTE_CHARS, NoteCase};
use crate::redact;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::keymap::{KeyContext, Scope};
use crate::tui::search::EditKey;
use crate::tui::theme::Role;

/// Enter saves and Esc cancels (the prompt's own scope); Tab and Shift-Tab, which move between
/// panes elsewhere, cycle the label here; a plain character is typed.
pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Note,
    inherits: &[
        Action::FocusNext,
        Action::FocusPrev,
        Action::Cancel,
        Action::Quit,
    ],
    text_input: true,
};

/// The open prompt: which run, the label chosen (`None`: no label) and the text typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotePrompt {
    pub run: String,
    pub case: Option<NoteCase>,
    /// The run's name as the list shows it, for the title.
    pub name: String,
    pub labels: Vec<String>,
    pub label: Option<usize>,
    pub text: String,
}

/// The keymap first (save, cancel, label cycling, quit), then editing, then the key as text.
pub fn action_for_key(app: &App, key: &KeyEvent) -> Option<Action> {
    if let Some(action) = app.config.keymap.lookup_in(&KEYS, key) {
        return Some(action);
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('u') => Some(Action::SearchEdit(EditKey::KillToStart)),
            KeyCode::Char('w') | KeyCode::Backspace => {
                Some(Action::SearchEdit(EditKey::KillWordBack))
            }
            _ => None,
        };
    }
    match key.code {
        KeyCode::Backspace => Some(Action::SearchBackspace),
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::ALT) => {
            Some(Action::SearchInput(c))
        }
        _ => None,
    }
}

impl NotePrompt {
    pub fn update(&mut self, action: Action, app: &mut App) -> Outcome {
        match action {
            Action::SearchInput(c) => self.type_char(c),
            Action::SearchBackspace => {
                self.text.pop();
            }
            Action::SearchEdit(EditKey::KillToStart) => self.text.clear(),
            Action::SearchEdit(EditKey::KillWordBack) => {
                let kept = self.text.trim_end().len();
                let start = self.text[..kept].rfind(' ').map_or(0, |i| i + 1);
                self.text.truncate(start);
            }
            Action::FocusNext => self.cycle(true),
            Action::FocusPrev => self.cycle(false),
            Action::SaveNote => {
                crate::tui::app::notes::save(app, self);
                return Outcome::Close;
            }
            Action::Cancel => return Outcome::Close,
            Action::Quit | Action::Resize { .. } => return Outcome::NotHandled,
            _ => {}
        }
        Outcome::Handled
    }

    /// A digit picks label N while nothing is typed yet; anything else is text.
    fn type_char(&mut self, c: char) {
        if self.text.is_empty()
            && let Some(n) = c.to_digit(10)
            && (1..=self.labels.len()).contains(&(n as usize))
        {
            self.label = Some(n as usize - 1);
            return;
        }
        if !c.is_control() && self.text.chars().count() < MAX_NOTE_CHARS {
            self.text.push(c);
        }
    }

    /// The next (or previous) label, "no label" between the last and the first.
    fn cycle(&mut self, forward: bool) {
        let count = self.labels.len();
        self.label = match (self.label, forward) {
            (None, true) => (count > 0).then_some(0),
            (None, false) => count.checked_sub(1),
            (Some(i), true) => (i + 1 < count).then_some(i + 1),
            (Some(i), false) => i.checked_sub(1),
        };
    }

    /// The chosen label's text, empty for none.
    pub fn label_text(&self) -> &str {
        self.label
            .and_then(|i| self.labels.get(i))
            .map_or("", String::as_str)
    }

    pub fn render(&self, frame: &mut Frame, screen: Rect, app: &App) {
        let theme = &app.config.theme;
        let keymap = &app.config.keymap;
        let width = screen.width.clamp(20, 76);
        let height = 6.min(screen.height);
        let area = Rect::new(
            screen.x + (screen.width.saturating_sub(width)) / 2,
            screen.y + (screen.height.saturating_sub(height)) / 2,
            width,
            height,
        );
        let mut labels = vec![Span::styled("label ", theme.style(Role::Dim))];
        for (i, label) in self.labels.iter().enumerate() {
            let role = if self.label == Some(i) {
                Role::Selection
            } else {
                Role::Text
            };
            labels.push(Span::styled(
                format!("{} {label}", i + 1),
                theme.style(role),
            ));
            labels.push(Span::raw("  "));
        }
        labels.push(Span::styled(
            "none",
            theme.style(if self.label.is_none() {
                Role::Selection
            } else {
                Role::Dim
            }),
        ));
        // The text is the user's, shown like every other text: masked until revealed.
        let text = redact::shown_line(&self.text, app.reveal);
        let visible = (width as usize).saturating_sub(10);
        let skip = text.chars().count().saturating_sub(visible);
        let shown: String = text.chars().skip(skip).collect();
        let mut hint = vec![match self.labels.len() {
            0 => "no labels configured".to_owned(),
            1 => "Tab/1 label".to_owned(),
            n => format!("Tab/1-{} label", n.min(9)),
        }];
        if let Some(key) = any_key(keymap, &KEYS, &[Action::SaveNote]) {
            hint.push(format!("{key} saves"));
        }
        if let Some(key) = any_key(keymap, &KEYS, &[Action::Cancel]) {
            hint.push(format!("{key} cancels"));
        }
        let lines = vec![
            Line::from(labels),
            Line::from(vec![
                Span::styled("note  ", theme.style(Role::Dim)),
                Span::styled(format!("{shown}▏"), theme.style(Role::Search)),
            ]),
            Line::raw(""),
            Line::styled(hint.join(" · "), theme.style(Role::Dim)),
        ];
        let title = format!(" Note on {} ", redact::shown_line(&self.name, app.reveal));
        let block = Block::bordered()
            .title(Span::styled(title, theme.style(Role::Title)))
            .border_style(theme.border(true));
        frame.render_widget(Clear, area);
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}
