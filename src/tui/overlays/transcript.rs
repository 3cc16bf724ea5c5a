//! The transcript of a run (`t`): the whole run as one conversation, from the first message to
//! the final answer. Each model call adds the messages it had not been given before and its
//! answer; the tool spans it asked for follow inline with their status, duration and result;
//! the evaluator's verdict closes it. `n`/`N` step through messages, tool calls and errors,
//! `Enter` shows the one stepped to in the tree. Redacted, each part shows its shape only.

use std::sync::{Mutex, MutexGuard};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{Outcome, any_key};
use crate::formats;
use crate::model::{EvalVerdict, Health, SpanKind};
use crate::redact::{self, Reveal};
use crate::store::Invocation;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::chat::{ChatLayout, arguments_text, chat_lines};
use crate::tui::format::duration_ms;
use crate::tui::keymap::{KeyContext, Keymap, Scope};
use crate::tui::theme::{Role, Theme};
use crate::tui::ui::highlight;
use crate::tui::wrap::wrap_line_at_words;
use toolcap_formats::messages::{Message, Part, Role as Speaker, Side, read_messages};

/// Its own scope (`n`/`N`, `Enter`), then movement, reveal, close and quit.
pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Transcript,
    inherits: &[
        Action::ToggleTranscript,
        Action::Cancel,
        Action::Down,
        Action::Up,
        Action::PageDown,
        Action::PageUp,
        Action::Top,
        Action::Bottom,
        Action::ToggleReveal,
        Action::ToggleFold,
        Action::StartSearch,
        Action::Quit,
    ],
    text_input: false,
};

/// One step of the run: a message, a tool call's outcome, or a note on what could not be read.
#[derive(Debug, Clone)]
enum Entry {
    Message {
        span: usize,
        message: Message,
    },
    Tool {
        span: usize,
        name: String,
        call_id: Option<String>,
        /// As recorded: JSON text, or any text.
        arguments: Option<String>,
        health: Health,
        duration_ms: f64,
        result: Option<String>,
        error: Option<crate::model::ErrorInfo>,
    },
    Unreadable {
        span: usize,
        what: String,
    },
}

impl Entry {
    fn span(&self) -> usize {
        match self {
            Entry::Message { span, .. }
            | Entry::Tool { span, .. }
            | Entry::Unreadable { span, .. } => *span,
        }
    }
}

/// The transcript's lines at one mode and width, and where each entry starts.
#[derive(Debug, Default)]
struct Laid {
    key: Option<(Reveal, u16, bool)>,
    lines: Vec<Line<'static>>,
    /// First line of each entry, in entry order.
    starts: Vec<usize>,
}

/// The open transcript: its run's entries, the entry stepped to, the scroll.
#[derive(Debug)]
pub struct Transcript {
    pub invocation: String,
    title: String,
    entries: Vec<Entry>,
    /// The evaluator's verdict, shown last.
    verdict: Option<EvalVerdict>,
    pub cursor: usize,
    pub scroll: usize,
    expand_system: bool,
    /// Laid out again only when the mode, the width or the folding changes.
    laid: Mutex<Laid>,
}

impl Transcript {
    /// The transcript of `inv`: its spans in tree order, model calls' payloads read now.
    pub fn of(inv: &Invocation) -> Transcript {
        let tree = inv.tree();
        let order: Vec<usize> = tree.rows.iter().map(|row| row.span()).collect();
        // Tool results that a tool span of the run shows are not repeated from the messages.
        let tool_call_ids: Vec<String> = order
            .iter()
            .filter_map(|&i| inv.spans[i].tool()?.call_id.map(str::to_owned))
            .collect();
        let mut entries = Vec::new();
        // Every call is given the conversation so far: what was said is looked up, not scanned.
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        // A run whose root records the turn as plain text (an arksim turn: the user's message
        // in, the agent's answer out) opens with the message and closes with the answer.
        let root = order.first().copied();
        let root_text = |side: Side| {
            let span = &inv.spans[root?];
            let payload = match side {
                Side::Input => span.input(),
                Side::Output => span.output(),
            };
            let text = formats::load_payload(&payload).ok()??;
            let text = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(serde_json::Value::String(inner)) => inner,
                Ok(_) => return None,
                Err(_) => text,
            };
            let role = match side {
                Side::Input => Speaker::User,
                Side::Output => Speaker::Assistant,
            };
            (!text.trim().is_empty()).then(|| Message {
                role,
                name: None,
                parts: vec![Part::Text(text)],
                finish_reason: None,
            })
        };
        if let (Some(index), Some(message)) = (root, root_text(Side::Input)) {
            seen.insert(said(&message));
            entries.push(Entry::Message {
                span: index,
                message,
            });
        }
        for &index in &order {
            let span = &inv.spans[index];
            match span.kind {
                SpanKind::Llm => {
                    for (payload, side) in
                        [(span.input(), Side::Input), (span.output(), Side::Output)]
                    {
                        if !payload.is_captured() {
                            continue;
                        }
                        let text = match formats::load_payload(&payload) {
                            Ok(Some(text)) => text,
                            Ok(None) => continue,
                            Err(why) => {
                                entries.push(Entry::Unreadable {
                                    span: index,
                                    what: format!("could not load the {side:?} messages: {why}"),
                                });
                                continue;
                            }
                        };
                        let Some(messages) = read_messages(&text, side) else {
                            continue;
                        };
                        for mut message in messages {
                            let key = said(&message);
                            if side == Side::Input && seen.contains(&key) {
                                continue;
                            }
                            seen.insert(key);
                            message.parts.retain(|part| match part {
                                Part::ToolResult { id: Some(id), .. } => {
                                    !tool_call_ids.contains(id)
                                }
                                _ => true,
                            });
                            if message.parts.is_empty() {
                                continue;
                            }
                            entries.push(Entry::Message {
                                span: index,
                                message,
                            });
                        }
                    }
                }
                SpanKind::Tool => {
                    let tool = span.tool();
                    let read = |payload: &crate::model::Payload| match payload.is_captured() {
                        true => formats::load_payload(payload).ok().flatten(),
                        false => None,
                    };
                    let arguments = read(&span.input());
                    let result = read(&span.output());
                    entries.push(Entry::Tool {
                        span: index,
                        name: tool.and_then(|t| t.name).unwrap_or(&span.name).to_owned(),
                        call_id: tool.and_then(|t| t.call_id).map(str::to_owned),
                        arguments,
                        health: inv.health_of(index),
                        duration_ms: span.duration_ms(),
                        result,
                        error: span.error().cloned(),
                    });
                }
                _ => {}
            }
        }
        if let (Some(index), Some(answer)) = (root, root_text(Side::Output))
            && !seen.contains(&said(&answer))
        {
            entries.push(Entry::Message {
                span: index,
                message: answer,
            });
        }
        let verdict = inv.eval().cloned();
        Transcript {
            invocation: inv.id.to_string(),
            title: inv
                .display_name()
                .or_else(|| order.first().map(|&root| &*inv.spans[root].name))
                .unwrap_or_default()
                .to_owned(),
            entries,
            verdict,
            cursor: 0,
            scroll: 0,
            expand_system: false,
            laid: Mutex::default(),
        }
    }

    pub fn update(&mut self, action: Action, app: &mut App) -> Outcome {
        let page = app.screen.height.saturating_sub(6).max(1) as usize;
        // `/` looks for text in the transcript, with the detail's find prompt and state.
        let finding = &mut app.detail_find;
        match action {
            Action::StartSearch => {
                finding.editing = true;
                return Outcome::Handled;
            }
            Action::SearchInput(c) if finding.editing => {
                finding.editor.insert(c);
                self.find_from(self.scroll, finding.editor.text(), true);
                return Outcome::Handled;
            }
            Action::SearchBackspace if finding.editing => {
                finding.editor.backspace();
                self.find_from(self.scroll, finding.editor.text(), true);
                return Outcome::Handled;
            }
            Action::SearchEdit(key) if finding.editing => {
                finding.editor.edit(key);
                return Outcome::Handled;
            }
            Action::SearchAccept if finding.editing => {
                finding.editing = false;
                finding.active = !finding.editor.text().is_empty();
                return Outcome::Handled;
            }
            Action::Cancel if finding.editing || finding.active => {
                finding.editing = false;
                finding.active = false;
                return Outcome::Handled;
            }
            Action::NextMessage | Action::PrevMessage if finding.active => {
                let forward = action == Action::NextMessage;
                let needle = finding.editor.text().to_owned();
                let from = match forward {
                    true => self.scroll + 1,
                    false => self.scroll.saturating_sub(1),
                };
                self.find_from(from, &needle, forward);
                return Outcome::Handled;
            }
            _ => {}
        }
        match action {
            Action::NextMessage => self.step(1),
            Action::PrevMessage => self.step(-1),
            Action::GoToCall => {
                if let Some(entry) = self.entries.get(self.cursor) {
                    app.show_span_in_tree(&self.invocation, entry.span());
                }
                return Outcome::Close;
            }
            Action::Down => self.scroll += 1,
            Action::Up => self.scroll = self.scroll.saturating_sub(1),
            Action::PageDown => self.scroll += page,
            Action::PageUp => self.scroll = self.scroll.saturating_sub(page),
            Action::Top => self.scroll = 0,
            Action::Bottom => self.scroll = usize::MAX / 2,
            Action::ToggleFold => self.expand_system = !self.expand_system,
            Action::ToggleTranscript | Action::Cancel => return Outcome::Close,
            Action::ToggleReveal | Action::Quit | Action::Resize { .. } => {
                return Outcome::NotHandled;
            }
            _ => {}
        }
        Outcome::Handled
    }

    /// Scrolls to the first line at or after `from` (or at or before it, going back) that holds
    /// `needle`, as last laid out; wraps around the ends.
    fn find_from(&mut self, from: usize, needle: &str, forward: bool) {
        if needle.is_empty() {
            return;
        }
        let holding: Vec<usize> = self
            .laid()
            .lines
            .iter()
            .enumerate()
            .filter(|(_, line)| {
                !highlight::text_marks(&highlight::line_text(line), needle).is_empty()
            })
            .map(|(n, _)| n)
            .collect();
        let found = match forward {
            true => holding.iter().find(|&&n| n >= from).or(holding.first()),
            false => holding
                .iter()
                .rev()
                .find(|&&n| n <= from)
                .or(holding.last()),
        };
        if let Some(&line) = found {
            self.scroll = line;
        }
    }

    /// Moves the cursor by `delta` entries and scrolls its first line to the top.
    fn step(&mut self, delta: isize) {
        if self.entries.is_empty() {
            return;
        }
        let last = self.entries.len() - 1;
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
        let start = self.laid().starts.get(self.cursor).copied();
        if let Some(start) = start {
            self.scroll = start;
        }
    }

    /// The lines at `mode` and `width`, laid out once per change of either.
    fn lay_out(&self, mode: Reveal, width: u16, theme: &Theme) -> MutexGuard<'_, Laid> {
        let key = (mode, width, self.expand_system);
        let mut held = self.laid();
        if held.key != Some(key) {
            let layout = ChatLayout {
                expand_system: self.expand_system,
            };
            let mut laid = Laid {
                key: Some(key),
                ..Laid::default()
            };
            for entry in &self.entries {
                laid.starts.push(laid.lines.len());
                laid.lines
                    .extend(entry_lines(entry, mode, layout, theme, width));
            }
            laid.lines.push(Line::raw(""));
            laid.lines.extend(self.verdict_lines(mode, theme, width));
            *held = laid;
        }
        held
    }

    /// The lines last laid out (a poisoned lock only means a panic mid-layout: lay out again).
    fn laid(&self) -> MutexGuard<'_, Laid> {
        self.laid.lock().unwrap_or_else(|poisoned| {
            let mut held = poisoned.into_inner();
            held.key = None;
            held
        })
    }

    fn verdict_lines(&self, mode: Reveal, theme: &Theme, width: u16) -> Vec<Line<'static>> {
        let Some(verdict) = &self.verdict else {
            return vec![Line::styled(
                "── no evaluator verdict ──",
                theme.style(Role::Dim),
            )];
        };
        let (glyph, role) = match verdict.passed {
            true => ("✓ passed", Role::StatusOk),
            false => ("✗ failed", Role::StatusError),
        };
        let mut lines = vec![Line::styled(
            format!(
                "── verdict · {glyph} · {} ──",
                redact::shown_line(&verdict.label, mode)
            ),
            theme.style(role),
        )];
        for line in redact::mask_text(&verdict.shown_reason(mode), mode).lines() {
            lines.extend(wrap_line_at_words(
                Line::styled(redact::sanitize_line(line), theme.style(Role::Text)),
                width,
            ));
        }
        // What the sample expected, dataset text like the messages: its length until revealed.
        // Then the limit that ended it, in the evaluator's words.
        let target = verdict
            .target
            .as_ref()
            .map(|target| ("target: ", redact::shown_quote(target, mode)));
        let limit = verdict
            .limit
            .as_ref()
            .map(|limit| ("limit:  ", limit.clone()));
        for (label, said) in target.into_iter().chain(limit) {
            let shown = redact::mask_text(&said, mode);
            for (k, line) in shown.lines().enumerate() {
                let label = if k == 0 { label } else { "        " };
                lines.extend(wrap_line_at_words(
                    Line::from(vec![
                        Span::styled(label, theme.style(Role::Dim)),
                        Span::styled(redact::sanitize_line(line), theme.style(Role::Text)),
                    ]),
                    width,
                ));
            }
        }
        lines
    }

    /// Draws over `area`: the panes, above the status bar and the footer.
    pub fn render(&self, frame: &mut Frame, area: Rect, app: &App) {
        let theme = &app.config.theme;
        let width = area.width.saturating_sub(4);
        let laid = self.lay_out(app.reveal, width, theme);
        let height = area.height.saturating_sub(2) as usize;
        let scroll = self.scroll.min(laid.lines.len().saturating_sub(height));
        let cursor_line = laid.starts.get(self.cursor).copied();
        let needle = app.detail_find.needle();
        let lines: Vec<Line<'static>> = laid
            .lines
            .iter()
            .enumerate()
            .skip(scroll)
            .take(height)
            .map(|(n, line)| {
                let marker = if Some(n) == cursor_line { "› " } else { "  " };
                let mut spans = vec![Span::styled(marker, theme.style(Role::Selection))];
                match needle {
                    Some(needle) => {
                        spans.extend(
                            highlight::mark_text(line, needle, theme.style(Role::Match)).spans,
                        );
                    }
                    None => spans.extend(line.spans.iter().cloned()),
                }
                Line::from(spans)
            })
            .collect();
        let mode = match app.reveal {
            Reveal::Redacted => "redacted",
            Reveal::Revealed => "revealed",
        };
        let title = format!(
            " Transcript · {} · {} entries · {mode} — {} ",
            redact::shown_line(&self.title, app.reveal),
            self.entries.len(),
            keys_hint(&app.config.keymap)
        );
        let block = Block::bordered()
            .title(Span::styled(title, theme.style(Role::Title)))
            .border_style(theme.border(true));
        frame.render_widget(Clear, area);
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}

/// The footer while the transcript is open.
pub const FOOTER: &[super::FooterItem] = &[
    (&[Action::NextMessage, Action::PrevMessage], "step"),
    (&[Action::StartSearch], "find"),
    (&[Action::GoToCall], "go to span"),
    (&[Action::ToggleReveal], "reveal"),
    (&[Action::ToggleFold], "system prompts"),
    (&[Action::Cancel], "close"),
];

/// What a message says (its role and parts, not how it ended): a message given again to a
/// later call, or a run's answer that its last call gave, is shown once.
fn said(message: &Message) -> String {
    format!("{:?} {:?}", message.role, message.parts)
}

/// `n/N step · Enter go to span · t closes`, with the keys bound now.
fn keys_hint(keymap: &Keymap) -> String {
    let step = super::first_keys(keymap, &KEYS, &[Action::NextMessage, Action::PrevMessage]);
    let go = super::first_keys(keymap, &KEYS, &[Action::GoToCall]);
    let close = any_key(keymap, &KEYS, &[Action::ToggleTranscript, Action::Cancel]);
    [
        step.map(|k| format!("{k} step")),
        go.map(|k| format!("{k} go to span")),
        close.map(|k| format!("{k} closes")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ")
}

fn entry_lines(
    entry: &Entry,
    mode: Reveal,
    layout: ChatLayout,
    theme: &Theme,
    width: u16,
) -> Vec<Line<'static>> {
    match entry {
        Entry::Message { message, .. } => {
            chat_lines(std::slice::from_ref(message), mode, layout, theme, width)
        }
        Entry::Unreadable { what, .. } => vec![Line::styled(
            redact::sanitize_line(what),
            theme.style(Role::StatusError),
        )],
        Entry::Tool {
            name,
            call_id,
            arguments,
            health,
            duration_ms: took,
            result,
            error,
            ..
        } => {
            let role = match health {
                Health::Ok => Role::StatusOk,
                Health::Degraded => Role::StatusDegraded,
                Health::Error => Role::StatusError,
            };
            let id = call_id
                .as_deref()
                .map(|id| format!("  {}", redact::shown_line(id, mode)))
                .unwrap_or_default();
            let mut lines = vec![Line::from(vec![
                Span::styled(format!("{:>9}", "⚒ tool"), theme.style(Role::SpanTool)),
                Span::styled(" │ ", theme.style(Role::Border)),
                Span::styled(
                    format!(
                        "{} {}({}) {}",
                        health.glyph(),
                        redact::shown_line(name, mode),
                        arguments
                            .as_deref()
                            .map(|text| arguments_text(
                                &serde_json::Value::String(text.to_owned()),
                                mode
                            ))
                            .unwrap_or_default(),
                        duration_ms(*took)
                    ),
                    theme.style(role),
                ),
                Span::styled(id, theme.style(Role::Dim)),
            ])];
            let body_width = width.saturating_sub(12).max(8);
            let mut body: Vec<Line<'static>> = Vec::new();
            // As the detail shows it: masked free text, or only the size of a tool result.
            if let Some(error) = error {
                let message = redact::error_message(error, mode).unwrap_or_default();
                let shown = match &error.error_type {
                    Some(kind) => format!("{kind}: {message}"),
                    None => message,
                };
                for line in shown.lines() {
                    body.push(Line::styled(
                        format!("✗ {}", redact::sanitize_line(line)),
                        theme.style(Role::StatusError),
                    ));
                }
            }
            match (result, mode) {
                (Some(text), Reveal::Redacted) => body.push(Line::styled(
                    format!("← result ({} chars)", text.chars().count()),
                    theme.style(Role::Dim),
                )),
                (Some(text), Reveal::Revealed) => {
                    let masked = redact::mask_text(text, mode);
                    for (n, line) in masked.lines().enumerate() {
                        let lead = if n == 0 { "← " } else { "  " };
                        body.push(Line::styled(
                            format!("{lead}{}", redact::sanitize_line(line)),
                            theme.style(Role::Text),
                        ));
                    }
                }
                (None, _) => {}
            }
            for line in body {
                for piece in wrap_line_at_words(line, body_width) {
                    let mut spans = vec![
                        Span::raw(" ".repeat(9)),
                        Span::styled(" │ ", theme.style(Role::Border)),
                    ];
                    spans.extend(piece.spans);
                    lines.push(Line::from(spans));
                }
            }
            lines
        }
    }
}
