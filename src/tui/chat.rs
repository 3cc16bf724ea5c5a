//! Chat messages as the detail pane shows them: a role gutter, text wrapped at words, tool
//! calls inline as `name(key=value, …)` with their call id dimmed, tool results under a `←`,
//! errors in the error style, media as placeholders, and system prompts folded to their first
//! line. Redacted, each part shows only its shape (kind and size); revealed, its text with
//! secrets masked. Every piece of text passes `redact::sanitize_line`.

use ratatui::text::{Line, Span};
use serde_json::Value;

use super::format::bytes;
use super::theme::{Role as Style, Theme};
use super::wrap::wrap_line_at_words;
use crate::redact::{self, Reveal};
use toolcap_formats::messages::{Message, Part, Role};

/// Whether a laid-out line begins a message (its role in the gutter), a tool call, a tool
/// result or an error: where `}`/`{` stop in the detail.
pub fn starts_a_step(line: &Line) -> bool {
    let [label, bar, body, ..] = line.spans.as_slice() else {
        return false;
    };
    bar.content == " │ "
        && (!label.content.trim().is_empty()
            || ["→ ", "← result", "✗ error"]
                .iter()
                .any(|lead| body.content.starts_with(lead)))
}

/// Cells of the role gutter: the longest role name, then ` │ `.
const GUTTER: usize = 12;

/// How messages are laid out besides the reveal mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChatLayout {
    /// System prompts shown whole, not folded to their first line.
    pub expand_system: bool,
}

/// The lines of `messages`, already wrapped to `width`.
pub fn chat_lines(
    messages: &[Message],
    mode: Reveal,
    layout: ChatLayout,
    theme: &Theme,
    width: u16,
) -> Vec<Line<'static>> {
    let body_width = (width as usize).saturating_sub(GUTTER).max(8) as u16;
    let mut out = Vec::new();
    for message in messages {
        let mut body: Vec<Line<'static>> = Vec::new();
        for part in &message.parts {
            part_lines(part, message.role, mode, layout, theme, &mut body);
        }
        if message.parts.is_empty() {
            body.push(Line::styled("(no content)", theme.style(Style::Missing)));
        }
        if let Some(reason) = &message.finish_reason {
            body.push(Line::styled(
                format!("finish: {}", shown(reason, mode)),
                theme.style(Style::Dim),
            ));
        }
        let mut first = true;
        for line in body {
            for piece in wrap_line_at_words(line, body_width) {
                let label = if first { message.role.as_str() } else { "" };
                first = false;
                let mut spans = vec![
                    Span::styled(format!("{label:>9}"), role_style(message.role, theme)),
                    Span::styled(" │ ", theme.style(Style::Border)),
                ];
                spans.extend(piece.spans);
                out.push(Line::from(spans));
            }
        }
    }
    out
}

fn role_style(role: Role, theme: &Theme) -> ratatui::style::Style {
    theme.style(match role {
        Role::System => Style::Dim,
        Role::User => Style::Header,
        Role::Assistant => Style::SpanLlm,
        Role::Tool => Style::SpanTool,
    })
}

fn part_lines(
    part: &Part,
    role: Role,
    mode: Reveal,
    layout: ChatLayout,
    theme: &Theme,
    out: &mut Vec<Line<'static>>,
) {
    let dim = theme.style(Style::Dim);
    let redacted = mode == Reveal::Redacted;
    match part {
        Part::Text(text) if redacted => out.push(Line::styled(sized("text", text), dim)),
        Part::Text(text) if role == Role::System && !layout.expand_system => {
            let lines: Vec<&str> = text.lines().collect();
            let first = lines.first().copied().unwrap_or("");
            out.push(Line::styled(shown(first, mode), theme.style(Style::Text)));
            if lines.len() > 1 {
                out.push(Line::styled(
                    format!(
                        "… {} more lines, {} (Space expands)",
                        lines.len() - 1,
                        bytes(text.len() as u64)
                    ),
                    dim,
                ));
            }
        }
        Part::Text(text) => text_lines(text, theme.style(Style::Text), out),
        Part::Reasoning(text) if redacted => out.push(Line::styled(sized("reasoning", text), dim)),
        Part::Reasoning(text) => {
            out.push(Line::styled("thinking:", dim));
            text_lines(text, dim, out);
        }
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let mut spans = vec![
                Span::styled("→ ", theme.style(Style::SpanTool)),
                Span::styled(
                    format!("{}({})", shown(name, mode), arguments_text(arguments, mode)),
                    theme.style(Style::SpanTool),
                ),
            ];
            if let Some(id) = id {
                spans.push(Span::styled(format!("  {}", shown(id, mode)), dim));
            }
            out.push(Line::from(spans));
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => {
            let (glyph, style) = if *is_error {
                ("✗ error", theme.style(Style::StatusError))
            } else {
                ("← result", theme.style(Style::Text))
            };
            let id = id
                .as_deref()
                .map(|id| format!(" {}", shown(id, mode)))
                .unwrap_or_default();
            if redacted {
                out.push(Line::from(vec![
                    Span::styled(glyph.to_owned(), style),
                    Span::styled(format!("{id} · {}", sized("text", content)), dim),
                ]));
            } else {
                out.push(Line::from(vec![
                    Span::styled(glyph.to_owned(), style),
                    Span::styled(id, dim),
                ]));
                text_lines(content, style, out);
            }
        }
        Part::Media { kind, bytes: size } => {
            let size = size.map(|b| format!(" · {}", bytes(b))).unwrap_or_default();
            out.push(Line::styled(format!("[{}{size}]", shown(kind, mode)), dim));
        }
    }
}

/// Each line of `text`, secrets masked and sanitized.
fn text_lines(text: &str, style: ratatui::style::Style, out: &mut Vec<Line<'static>>) {
    let masked = redact::mask_text(text, Reveal::Revealed);
    for line in masked.lines() {
        out.push(Line::styled(redact::sanitize_line(line), style));
    }
    if masked.is_empty() {
        out.push(Line::raw(""));
    }
}

/// A name, id, kind or line of text as one terminal line: masked under `mode` like all free
/// text, then made inert.
fn shown(text: &str, mode: Reveal) -> String {
    redact::shown_line(text, mode)
}

fn sized(kind: &str, text: &str) -> String {
    format!("{kind} ({} chars)", text.chars().count())
}

/// A tool call's arguments inline: `key=value, …` revealed (secrets masked), `key=…` redacted;
/// a string that holds no JSON object is shown whole, or as its size.
pub fn arguments_text(arguments: &Value, mode: Reveal) -> String {
    let parsed;
    let arguments = match arguments {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => {
                parsed = value;
                &parsed
            }
            _ if mode == Reveal::Redacted => return sized("text", text),
            _ => return redact::shown_line(text, mode),
        },
        other => other,
    };
    match arguments {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| {
                let key = shown(key, mode);
                if mode == Reveal::Redacted {
                    format!("{key}=…")
                } else if redact::is_secret_key(&key) {
                    format!("{key}={}", redact::MASK)
                } else {
                    let value = match value {
                        Value::String(text) => format!("{text:?}"),
                        other => other.to_string(),
                    };
                    format!("{key}={}", redact::shown_line(&value, mode))
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other if mode == Reveal::Redacted => sized("value", &other.to_string()),
        other => redact::shown_line(&other.to_string(), mode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcap_formats::messages::{Side, read_messages};

    fn render(payload: &str, mode: Reveal, layout: ChatLayout) -> String {
        let messages = read_messages(payload, Side::Input).unwrap();
        crate::tui::plain_text(&chat_lines(&messages, mode, layout, &Theme::default(), 80))
    }

    const CONVERSATION: &str = r#"[
        {"role": "system", "content": "You are terse.\nNever guess.\nAlways cite."},
        {"role": "user", "content": "Weather in Paris? My key is sk-live-abcdefghijklmnopqrstuvwx"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "http_get", "arguments": "{\"url\": \"https://w.example/paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "503 Service Unavailable"}
    ]"#;

    #[test]
    fn revealed_messages_read_as_a_conversation() {
        let shown = render(CONVERSATION, Reveal::Revealed, ChatLayout::default());
        assert!(shown.contains("   system │ You are terse."), "{shown}");
        assert!(shown.contains("… 2 more lines"), "{shown}");
        assert!(!shown.contains("Never guess"), "folded: {shown}");
        assert!(shown.contains("     user │ Weather in Paris?"), "{shown}");
        assert!(
            shown.contains(r#"→ http_get(url="https://w.example/paris")  call_1"#),
            "{shown}"
        );
        assert!(shown.contains("     tool │ ← result call_1"), "{shown}");
        assert!(shown.contains("503 Service Unavailable"), "{shown}");
        assert!(
            !shown.contains("sk-live-abcdefghijklmnopqrstuvwx"),
            "{shown}"
        );
        assert!(!shown.contains("\"role\""), "no raw JSON: {shown}");
    }

    #[test]
    fn a_folded_system_prompt_masks_a_secret_on_its_first_line() {
        let payload = r#"[{"role": "system", "content": "Use key sk-live-abcdefghijklmnopqrstuvwx.\nBe brief."}]"#;
        let shown = render(payload, Reveal::Revealed, ChatLayout::default());
        assert!(shown.contains("system │ Use key"), "{shown}");
        assert!(
            !shown.contains("sk-live-abcdefghijklmnopqrstuvwx"),
            "{shown}"
        );
    }

    #[test]
    fn the_system_prompt_expands_whole() {
        let layout = ChatLayout {
            expand_system: true,
        };
        let shown = render(CONVERSATION, Reveal::Revealed, layout);
        assert!(shown.contains("Never guess.") && shown.contains("Always cite."));
    }

    #[test]
    fn redacted_messages_show_only_their_shape() {
        let shown = render(CONVERSATION, Reveal::Redacted, ChatLayout::default());
        assert!(shown.contains("   system │ text (40 chars)"), "{shown}");
        assert!(shown.contains("http_get(url=…)  call_1"), "{shown}");
        assert!(
            shown.contains("← result call_1 · text (23 chars)"),
            "{shown}"
        );
        for secret in ["Paris", "terse", "503", "w.example"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
    }

    #[test]
    fn long_text_wraps_at_words_under_the_gutter() {
        let words = "alpha beta gamma delta ".repeat(10);
        let payload = serde_json::json!([{"role": "user", "content": words}]).to_string();
        let messages = read_messages(&payload, Side::Input).unwrap();
        let lines = chat_lines(
            &messages,
            Reveal::Revealed,
            ChatLayout::default(),
            &Theme::default(),
            40,
        );
        assert!(lines.len() > 3);
        for (n, line) in crate::tui::plain_text(&lines).lines().enumerate() {
            assert!(line.chars().count() <= 40, "{line}");
            let gutter = if n == 0 {
                "     user │ "
            } else {
                "          │ "
            };
            assert!(line.starts_with(gutter), "{line:?}");
            let body = &line[gutter.len()..];
            for word in body.split_whitespace() {
                assert!(
                    ["alpha", "beta", "gamma", "delta"].contains(&word),
                    "a word was cut: {word:?} in {line:?}"
                );
            }
        }
    }

    #[test]
    fn escape_sequences_in_messages_never_reach_the_screen() {
        let payload = serde_json::json!([{"role": "user", "content": "hi \u{1b}[2J there"},
            {"role": "assistant", "tool_calls": [{"id": "\u{1b}]52;c;x\u{7}", "function": {"name": "a\u{1b}[31m", "arguments": {}}}]}])
        .to_string();
        let shown = render(&payload, Reveal::Revealed, ChatLayout::default());
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:?}"
        );
    }
}
