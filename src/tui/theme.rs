//! The theme as data: semantic colour roles (never raw colours in widgets), built-in defaults,
//! string overrides from the config file, and `NO_COLOR` support.

use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};

use crate::model::{Health, SpanKind};

/// A semantic colour slot. Widgets ask for a role; the theme decides the style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Text,
    Dim,
    Title,
    Border,
    BorderFocused,
    Selection,
    Header,
    StatusOk,
    StatusDegraded,
    StatusError,
    SpanLlm,
    SpanTool,
    SpanEmbedding,
    SpanRerank,
    SpanRetrieval,
    SpanAgent,
    SpanNode,
    SpanOther,
    Waterfall,
    Attempt,
    Orphan,
    ModeRedacted,
    ModeRevealed,
    Truncated,
    Missing,
    HintKey,
    HintText,
    Message,
    Search,
    /// Characters a search or find matched.
    Match,
    JsonKey,
    JsonString,
    JsonNumber,
    JsonLiteral,
    JsonPunct,
    DiffAdded,
    DiffRemoved,
    DiffChanged,
    DiffMoved,
}

impl Role {
    pub const ALL: [Role; 39] = [
        Role::Text,
        Role::Dim,
        Role::Title,
        Role::Border,
        Role::BorderFocused,
        Role::Selection,
        Role::Header,
        Role::StatusOk,
        Role::StatusDegraded,
        Role::StatusError,
        Role::SpanLlm,
        Role::SpanTool,
        Role::SpanEmbedding,
        Role::SpanRerank,
        Role::SpanRetrieval,
        Role::SpanAgent,
        Role::SpanNode,
        Role::SpanOther,
        Role::Waterfall,
        Role::Attempt,
        Role::Orphan,
        Role::ModeRedacted,
        Role::ModeRevealed,
        Role::Truncated,
        Role::Missing,
        Role::HintKey,
        Role::HintText,
        Role::Message,
        Role::Search,
        Role::Match,
        Role::JsonKey,
        Role::JsonString,
        Role::JsonNumber,
        Role::JsonLiteral,
        Role::JsonPunct,
        Role::DiffAdded,
        Role::DiffRemoved,
        Role::DiffChanged,
        Role::DiffMoved,
    ];

    /// The name used in the config file's `[theme]` table.
    pub fn key(self) -> &'static str {
        match self {
            Role::Text => "text",
            Role::Dim => "dim",
            Role::Title => "title",
            Role::Border => "border",
            Role::BorderFocused => "border.focused",
            Role::Selection => "selection",
            Role::Header => "header",
            Role::StatusOk => "status.ok",
            Role::StatusDegraded => "status.degraded",
            Role::StatusError => "status.error",
            Role::SpanLlm => "span.llm",
            Role::SpanTool => "span.tool",
            Role::SpanEmbedding => "span.embedding",
            Role::SpanRerank => "span.rerank",
            Role::SpanRetrieval => "span.retrieval",
            Role::SpanAgent => "span.agent",
            Role::SpanNode => "span.node",
            Role::SpanOther => "span.other",
            Role::Waterfall => "waterfall",
            Role::Attempt => "attempt",
            Role::Orphan => "orphan",
            Role::ModeRedacted => "mode.redacted",
            Role::ModeRevealed => "mode.revealed",
            Role::Truncated => "payload.truncated",
            Role::Missing => "payload.missing",
            Role::HintKey => "hint.key",
            Role::HintText => "hint.text",
            Role::Message => "message",
            Role::Search => "search",
            Role::Match => "match",
            Role::JsonKey => "json.key",
            Role::JsonString => "json.string",
            Role::JsonNumber => "json.number",
            Role::JsonLiteral => "json.literal",
            Role::JsonPunct => "json.punct",
            Role::DiffAdded => "diff.added",
            Role::DiffRemoved => "diff.removed",
            Role::DiffChanged => "diff.changed",
            Role::DiffMoved => "diff.moved",
        }
    }

    pub fn from_key(key: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.key() == key)
    }

    /// The built-in style of every role (dark terminals; works on light ones too).
    pub fn default_style(self) -> Style {
        let fg = |c: Color| Style::new().fg(c);
        match self {
            Role::Text => Style::new(),
            Role::Dim => Style::new().add_modifier(Modifier::DIM),
            Role::Title => Style::new().add_modifier(Modifier::BOLD),
            Role::Border => fg(Color::DarkGray),
            Role::BorderFocused => fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Role::Selection => Style::new().add_modifier(Modifier::REVERSED),
            Role::Header => Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            Role::StatusOk => fg(Color::Green),
            Role::StatusDegraded => fg(Color::Yellow),
            Role::StatusError => fg(Color::Red).add_modifier(Modifier::BOLD),
            Role::SpanLlm => fg(Color::Magenta),
            Role::SpanTool => fg(Color::Cyan),
            Role::SpanEmbedding | Role::SpanRerank | Role::SpanRetrieval => fg(Color::Blue),
            Role::SpanAgent => fg(Color::LightGreen),
            Role::SpanNode => fg(Color::Gray),
            Role::SpanOther => fg(Color::DarkGray),
            Role::Waterfall => fg(Color::Blue),
            Role::Attempt => fg(Color::Yellow),
            Role::Orphan => fg(Color::Yellow).add_modifier(Modifier::ITALIC),
            Role::ModeRedacted => fg(Color::Black)
                .bg(Color::Green)
                .add_modifier(Modifier::BOLD),
            Role::ModeRevealed => fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            Role::Truncated => fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Role::Missing => fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
            Role::HintKey => fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Role::HintText => Style::new().add_modifier(Modifier::DIM),
            Role::Message => fg(Color::Yellow),
            Role::Search => fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Role::Match => fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::UNDERLINED),
            Role::JsonKey => fg(Color::Cyan),
            Role::JsonString => fg(Color::Green),
            Role::JsonNumber => fg(Color::Magenta),
            Role::JsonLiteral => fg(Color::Yellow),
            Role::JsonPunct => fg(Color::DarkGray),
            Role::DiffAdded => fg(Color::Green),
            Role::DiffRemoved => fg(Color::Red),
            Role::DiffChanged => fg(Color::Yellow),
            Role::DiffMoved => fg(Color::Blue),
        }
    }
}

/// Resolved styles, one per role.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    styles: Vec<Style>,
}

impl Default for Theme {
    fn default() -> Self {
        Theme {
            styles: Role::ALL.iter().map(|r| r.default_style()).collect(),
        }
    }
}

impl Theme {
    pub fn style(&self, role: Role) -> Style {
        self.styles.get(role as usize).copied().unwrap_or_default()
    }

    pub fn set(&mut self, role: Role, style: Style) {
        if let Some(slot) = self.styles.get_mut(role as usize) {
            *slot = style;
        }
    }

    /// Drops every colour, keeping bold/reverse/underline so selection and errors stay visible
    /// (https://no-color.org).
    pub fn without_colour(mut self) -> Self {
        for style in &mut self.styles {
            let mut plain = Style::new();
            plain.add_modifier = style.add_modifier;
            plain.sub_modifier = style.sub_modifier;
            *style = plain;
        }
        self
    }

    pub fn kind(&self, kind: SpanKind) -> Style {
        self.style(match kind {
            SpanKind::Llm => Role::SpanLlm,
            SpanKind::Tool => Role::SpanTool,
            SpanKind::Embedding => Role::SpanEmbedding,
            SpanKind::Rerank => Role::SpanRerank,
            SpanKind::Retrieval => Role::SpanRetrieval,
            SpanKind::Agent => Role::SpanAgent,
            SpanKind::Node => Role::SpanNode,
            SpanKind::Other => Role::SpanOther,
        })
    }

    pub fn health(&self, health: Health) -> Style {
        self.style(match health {
            Health::Ok => Role::StatusOk,
            Health::Degraded => Role::StatusDegraded,
            Health::Error => Role::StatusError,
        })
    }

    /// Style for a span or row name: ok spans stay in the normal text colour.
    pub fn name(&self, health: Health) -> Style {
        match health {
            Health::Ok => self.style(Role::Text),
            other => self.health(other),
        }
    }

    pub fn border(&self, focused: bool) -> Style {
        self.style(if focused {
            Role::BorderFocused
        } else {
            Role::Border
        })
    }
}

/// Parses `"bold red on black"`, `"#ff8800"`, `"italic 244"`; `"default"` is the empty style.
pub fn parse_style(text: &str) -> Result<Style, crate::Error> {
    let mut style = Style::new();
    let words = text.split_whitespace();
    let mut background = false;
    for word in words {
        let lower = word.to_ascii_lowercase();
        let modifier = match lower.as_str() {
            "bold" => Some(Modifier::BOLD),
            "dim" => Some(Modifier::DIM),
            "italic" => Some(Modifier::ITALIC),
            "underlined" | "underline" => Some(Modifier::UNDERLINED),
            "reversed" | "reverse" => Some(Modifier::REVERSED),
            "crossed_out" | "strikethrough" => Some(Modifier::CROSSED_OUT),
            _ => None,
        };
        if let Some(m) = modifier {
            style = style.add_modifier(m);
            continue;
        }
        if lower == "on" {
            background = true;
            continue;
        }
        if lower == "default" {
            continue;
        }
        let colour = Color::from_str(&lower)
            .map_err(|_| crate::Error::UnknownColour { word: word.into() })?;
        style = if background {
            style.bg(colour)
        } else {
            style.fg(colour)
        };
        background = false;
    }
    Ok(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_indexed_by_their_position() {
        for (i, role) in Role::ALL.iter().enumerate() {
            assert_eq!(*role as usize, i, "{role:?}");
            assert_eq!(Role::from_key(role.key()), Some(*role));
        }
    }

    #[test]
    fn styles_parse_from_words() {
        let s = parse_style("bold red on black").unwrap();
        assert_eq!(s.fg, Some(Color::Red));
        assert_eq!(s.bg, Some(Color::Black));
        assert!(s.add_modifier.contains(Modifier::BOLD));
        assert_eq!(
            parse_style("#ff8800").unwrap().fg,
            Some(Color::Rgb(255, 136, 0))
        );
        assert!(parse_style("mauve-ish").is_err());
    }

    #[test]
    fn no_colour_keeps_modifiers_only() {
        let theme = Theme::default().without_colour();
        assert_eq!(theme.style(Role::SpanLlm).fg, None);
        assert!(
            theme
                .style(Role::Selection)
                .add_modifier
                .contains(Modifier::REVERSED)
        );
    }
}
