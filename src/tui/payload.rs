//! A payload's text as display lines: parsed (stringified JSON unescaped), redacted to its
//! shape or revealed with secrets masked, pretty-printed, and highlighted with syntect. Every
//! piece of text passes `redact::sanitize_line` before it becomes a `Span`.

mod key_order;

use std::sync::OnceLock;

use ratatui::text::{Line, Span};
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

use super::theme::{Role, Theme};
use crate::redact::{self, PayloadValue, Reveal};

/// Lines beyond this are not built (the pane says how many were left out).
pub const MAX_LINES: usize = 20_000;
/// Highlighting is sequential and slow on huge values; the rest is shown plain.
pub const MAX_HIGHLIGHTED_LINES: usize = 3_000;

struct Json {
    syntaxes: SyntaxSet,
    key: Scope,
    string: Scope,
    number: Scope,
    literal: Scope,
    punct: Scope,
}

fn json() -> Option<&'static Json> {
    static JSON: OnceLock<Option<Json>> = OnceLock::new();
    JSON.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        syntaxes.find_syntax_by_extension("json")?;
        Some(Json {
            syntaxes,
            key: Scope::new("meta.structure.dictionary.key").ok()?,
            string: Scope::new("string").ok()?,
            number: Scope::new("constant.numeric").ok()?,
            literal: Scope::new("constant.language").ok()?,
            punct: Scope::new("punctuation").ok()?,
        })
    })
    .as_ref()
}

/// Display lines for one payload text under the given mode.
pub fn payload_lines(text: &str, mode: Reveal, theme: &Theme) -> Vec<Line<'static>> {
    let parsed = redact::parse_payload(text);
    match redact::present(&parsed, mode) {
        PayloadValue::Json(value) => {
            // Keys as the document wrote them, not sorted: `role` before `parts`.
            let pretty = key_order::pretty_in_order(&value, &key_order::KeyOrder::of(text));
            highlight_json(&pretty, theme)
        }
        PayloadValue::Text(text) => {
            let style = theme.style(if mode == Reveal::Redacted {
                Role::Dim
            } else {
                Role::Text
            });
            limited(
                text.lines()
                    .map(|l| Line::styled(redact::sanitize_line(l), style)),
                text.lines().count(),
                theme,
            )
        }
    }
}

fn limited<'a>(
    lines: impl Iterator<Item = Line<'a>>,
    total: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let mut out: Vec<Line<'a>> = lines.take(MAX_LINES).collect();
    if total > MAX_LINES {
        out.push(Line::styled(
            format!(
                "… {} more lines not shown (display limit)",
                total - MAX_LINES
            ),
            theme.style(Role::Truncated),
        ));
    }
    out
}

/// Highlights pretty-printed JSON, mapping syntect scopes onto theme roles.
pub fn highlight_json(pretty: &str, theme: &Theme) -> Vec<Line<'static>> {
    let total = pretty.lines().count();
    let Some(json) = json() else {
        return limited(
            pretty.lines().map(|l| Line::raw(redact::sanitize_line(l))),
            total,
            theme,
        );
    };
    let syntax: &SyntaxReference = match json.syntaxes.find_syntax_by_extension("json") {
        Some(s) => s,
        None => {
            return limited(
                pretty.lines().map(|l| Line::raw(redact::sanitize_line(l))),
                total,
                theme,
            );
        }
    };
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::with_capacity(total.min(MAX_LINES));
    for (n, line) in pretty.lines().enumerate() {
        if n >= MAX_LINES {
            break;
        }
        if n >= MAX_HIGHLIGHTED_LINES {
            out.push(Line::styled(
                redact::sanitize_line(line),
                theme.style(Role::Text),
            ));
            continue;
        }
        let with_newline = format!("{line}\n");
        let ops = state
            .parse_line(&with_newline, &json.syntaxes)
            .unwrap_or_default();
        let mut spans = Vec::new();
        let mut at = 0;
        for (pos, op) in ops {
            let pos = pos.min(line.len());
            if pos > at {
                spans.push(styled(json, &stack, &line[at..pos], theme));
                at = pos;
            }
            // A scope error only affects colours, never the text.
            let _ = stack.apply(&op);
        }
        if at < line.len() {
            spans.push(styled(json, &stack, &line[at..], theme));
        }
        out.push(Line::from(spans));
    }
    if total > MAX_LINES {
        out.push(Line::styled(
            format!(
                "… {} more lines not shown (display limit)",
                total - MAX_LINES
            ),
            theme.style(Role::Truncated),
        ));
    }
    out
}

fn styled(json: &Json, stack: &ScopeStack, text: &str, theme: &Theme) -> Span<'static> {
    let scopes = stack.as_slice();
    let has = |prefix: Scope| scopes.iter().any(|s| prefix.is_prefix_of(*s));
    let role = if has(json.key) {
        Role::JsonKey
    } else if has(json.string) {
        Role::JsonString
    } else if has(json.number) {
        Role::JsonNumber
    } else if has(json.literal) {
        Role::JsonLiteral
    } else if has(json.punct) {
        Role::JsonPunct
    } else {
        Role::Text
    };
    Span::styled(redact::sanitize_line(text), theme.style(role))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(lines: &[Line]) -> String {
        crate::tui::plain_text(lines)
    }

    #[test]
    fn keys_and_strings_get_their_roles() {
        let theme = Theme::default();
        let lines = highlight_json("{\n  \"city\": \"Oslo\",\n  \"n\": 3\n}", &theme);
        let key = lines[1]
            .spans
            .iter()
            .find(|s| s.content.contains("city"))
            .unwrap();
        assert_eq!(key.style, theme.style(Role::JsonKey));
        let value = lines[1]
            .spans
            .iter()
            .find(|s| s.content.contains("Oslo"))
            .unwrap();
        assert_eq!(value.style, theme.style(Role::JsonString));
        assert_eq!(text_of(&lines), "{\n  \"city\": \"Oslo\",\n  \"n\": 3\n}");
    }

    #[test]
    fn redacted_payload_shows_shape_not_values() {
        let theme = Theme::default();
        let text = r#"{"args": "{\"city\": \"Reykjavik\"}"}"#;
        let redacted = text_of(&payload_lines(text, Reveal::Redacted, &theme));
        assert!(redacted.contains("city"));
        assert!(!redacted.contains("Reykjavik"));
        let revealed = text_of(&payload_lines(text, Reveal::Revealed, &theme));
        assert!(revealed.contains("Reykjavik"));
        // Stringified JSON is shown as JSON, not as an escaped string.
        assert!(!revealed.contains("\\\""));
    }

    #[test]
    fn huge_payloads_say_how_much_is_not_shown() {
        let theme = Theme::default();
        let items: Vec<String> = (0..30_000).map(|i| i.to_string()).collect();
        let text = format!("[{}]", items.join(","));
        let lines = payload_lines(&text, Reveal::Revealed, &theme);
        // Pretty-printed: "[", 30,000 items, "]" = 30,002 lines; MAX_LINES are built.
        assert_eq!(lines.len(), MAX_LINES + 1);
        let last = lines.last().unwrap().to_string();
        assert!(
            last.contains(&format!("{} more lines not shown", 30_002 - MAX_LINES)),
            "{last}"
        );
    }
}
