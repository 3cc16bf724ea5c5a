//! The `?` overlay: every binding of every scope, from the same keymap table as the footer,
//! then each overlay's keys (its own scope and what it inherits).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{Outcome, OverlayKind, any_key, first_keys, global_key};
use crate::redact;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::keymap::{Hint, KeyContext, Keymap, Scope};
use crate::tui::theme::Role;

/// While the help is open: scrolling, and the keys that close it (either toggle closes it,
/// as `p` from here would otherwise stack a second overlay).
pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Help,
    inherits: &[
        Action::ToggleHelp,
        Action::ToggleProblems,
        Action::Cancel,
        Action::Down,
        Action::Up,
        Action::PageDown,
        Action::PageUp,
        Action::Top,
        Action::Quit,
    ],
    text_input: false,
};

fn hint_lines<'a>(hints: Vec<Hint>, app: &'a App) -> impl Iterator<Item = Line<'static>> + 'a {
    let theme = &app.config.theme;
    hints.into_iter().map(move |hint| {
        Line::from(vec![
            Span::styled(
                format!("  {:<22}", hint.keys.join(" ")),
                theme.style(Role::HintKey),
            ),
            Span::raw(describe(app, hint.action)),
        ])
    })
}

/// What a binding does: the action's description, or for a preset its name and query.
fn describe(app: &App, action: Action) -> String {
    match action {
        Action::Preset(n) => match app.config.presets.get(usize::from(n).wrapping_sub(1)) {
            Some((name, query)) => format!(
                "preset {}: {}",
                redact::sanitize_line(name),
                redact::sanitize_line(query)
            ),
            None => format!("preset {n} (not in the config file)"),
        },
        other => other.description().unwrap_or("").to_owned(),
    }
}

/// The overlay's lines (also used by tests to check every binding is listed).
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let theme = &app.config.theme;
    let keymap = &app.config.keymap;
    let mut lines = Vec::new();
    for scope in Scope::PANES {
        let hints = keymap.hints(scope);
        if hints.is_empty() {
            continue;
        }
        lines.push(Line::styled(scope.title(), theme.style(Role::Title)));
        lines.extend(hint_lines(hints, app));
        lines.push(Line::raw(""));
    }
    // The diff first: of the overlays it has the most keys of its own.
    for overlay in [
        OverlayKind::GoldDiff,
        OverlayKind::Search,
        OverlayKind::Transcript,
        OverlayKind::Note,
        OverlayKind::Summary,
        OverlayKind::Help,
        OverlayKind::Problems,
    ] {
        lines.push(Line::styled(
            overlay.heading(keymap),
            theme.style(Role::Title),
        ));
        lines.extend(hint_lines(keymap.hints_in(overlay.keys()), app));
        if overlay == OverlayKind::Search {
            lines.push(Line::styled(
                "  readline editing: C-u C-w C-a C-e C-b C-f M-b M-f, ← →, ↑ ↓ history",
                theme.style(Role::Dim),
            ));
        }
        if overlay == OverlayKind::Note {
            lines.push(Line::styled(
                "  a digit picks a label before any text is typed; no label and no text clears the note",
                theme.style(Role::Dim),
            ));
        }
        lines.push(Line::raw(""));
    }
    lines.extend(query_lines(app));
    lines.extend(glyph_lines(app));
    let reveal = match global_key(keymap, Action::ToggleReveal) {
        Some(key) => format!("until `{key}`"),
        None => "until revealed".into(),
    };
    lines.push(Line::styled(
        format!("Payloads are redacted (structure only) {reveal}; secrets stay masked either way."),
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

/// The query language, as typed after the search key in the list (filters runs) or the tree
/// (finds spans), and `dump --filter` (the config file's presets are bindings: listed with the
/// list's keys).
fn query_lines(app: &App) -> Vec<Line<'static>> {
    let theme = &app.config.theme;
    let mut lines = vec![Line::styled(
        "Queries (list: filter runs · tree: find spans · dump --filter)",
        theme.style(Role::Title),
    )];
    for (syntax, meaning) in [
        (
            "words",
            "fuzzy over run, span, agent and tool names, model, service",
        ),
        (
            "\"exact text\"",
            "substring in names, errors, reasons, attribute values; payloads only while revealed",
        ),
        (
            "a b  -a  a OR b",
            "all of, not, either (also a | b); parentheses group",
        ),
        (
            "is:",
            "failing error degraded eval-failed gold-mismatch ok noted unnoted limited",
        ),
        (
            "field:value",
            "kind: tool: model: provider: service: name: format: source: id: conv: case: epoch: scorer:NAME[=VALUE] label:NAME attr:KEY[=VALUE]",
        ),
        (
            "whole values",
            "eval:LABEL reason:LINE case-id:ID error:TYPE tool-failed:NAME[=TYPE] (the summary's rows)",
        ),
        ("compare", "dur>2s tokens>=1k score<0.8 spans>100 tools>3"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("  {syntax:<18}"), theme.style(Role::HintKey)),
            Span::raw(meaning),
        ]));
    }
    lines.push(Line::raw(""));
    lines
}

/// What the list's and tree's glyphs mean, read from the same functions that draw them.
fn glyph_lines(app: &App) -> Vec<Line<'static>> {
    use crate::model::{Health, SpanKind};
    use crate::triage::Facet;
    let theme = &app.config.theme;
    let kinds: Vec<String> = SpanKind::ALL
        .iter()
        .map(|kind| format!("{} {}", kind.glyph(), kind.as_str()))
        .collect();
    let mut rows = vec![
        (
            format!(
                "{} {} {}",
                Health::Ok.glyph(),
                Health::Degraded.glyph(),
                Health::Error.glyph()
            ),
            "ok · degraded (a descendant failed) · failed".to_owned(),
        ),
        (
            format!(
                "{} {}",
                Facet::EvalFailed.glyph(),
                Facet::GoldMismatch.glyph()
            ),
            format!(
                "{} · {}",
                Facet::EvalFailed.describe(),
                Facet::GoldMismatch.describe()
            ),
        ),
        (
            "◇0.85".to_owned(),
            "score from the gold diff (no evaluator score)".to_owned(),
        ),
        (
            "▾ ▸ (+N)".to_owned(),
            "open · folded · N hidden children".to_owned(),
        ),
        (
            "↻ attempt 2/3".to_owned(),
            "the second of three attempts of one LLM call".to_owned(),
        ),
        (
            "⚠ orphan ↻ cycle".to_owned(),
            "parent never arrived · parents form a cycle".to_owned(),
        ),
        (
            "› •".to_owned(),
            "cursor · a span the find matched".to_owned(),
        ),
        (
            "→ ← ✗ error".to_owned(),
            "in messages: a tool call asked for · its result · a failed result".to_owned(),
        ),
        (
            format!("{} [label]", crate::tui::ui::list::NOTED_GLYPH),
            "a run with a triage note (and its label, on wide screens)".to_owned(),
        ),
    ];
    rows.insert(0, ("span kinds".to_owned(), kinds.join("  ")));
    let mut lines = vec![Line::styled("Glyphs", theme.style(Role::Title))];
    for (glyph, meaning) in rows {
        lines.push(Line::from(vec![
            Span::styled(format!("  {glyph:<18}"), theme.style(Role::HintKey)),
            Span::raw(meaning),
        ]));
    }
    lines.push(Line::raw(""));
    lines
}

/// ` Keys — ? or Esc closes, j/k scroll `, with the keys bound now.
pub fn title(keymap: &Keymap) -> String {
    let mut parts = Vec::new();
    if let Some(close) = any_key(keymap, &KEYS, &[Action::ToggleHelp, Action::Cancel]) {
        parts.push(format!("{close} closes"));
    }
    if let Some(scroll) = first_keys(keymap, &KEYS, &[Action::Down, Action::Up]) {
        parts.push(format!("{scroll} scroll"));
    }
    match parts.is_empty() {
        true => " Keys ".into(),
        false => format!(" Keys — {} ", parts.join(", ")),
    }
}

/// The open help: how far it is scrolled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Help {
    pub scroll: usize,
}

impl Help {
    pub fn update(&mut self, action: Action, _app: &mut App) -> Outcome {
        super::scroll_text(&mut self.scroll, action)
    }

    pub fn render(&self, frame: &mut Frame, screen: Rect, app: &App) {
        super::draw_scrolled(
            frame,
            screen,
            app,
            &title(&app.config.keymap),
            help_lines(app),
            self.scroll,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Reveal;
    use crate::store::Store;
    use crate::tui::config;

    #[test]
    fn help_lists_the_query_language_and_the_configured_presets() {
        let config = config::from_toml(
            "[presets]\nfailing = \"is:failing\"\nslow = \"dur>2s\"\n",
            false,
        );
        let app = App::new(Store::new(), config, Reveal::Redacted);
        let help = crate::tui::plain_text(&help_lines(&app));
        for needle in [
            "Queries",
            "\"exact text\"",
            "gold-mismatch",
            "attr:KEY[=VALUE]",
            "dur>2s",
        ] {
            assert!(help.contains(needle), "{needle} missing from:\n{help}");
        }
        // The presets are bindings of the list, listed with its keys under their names.
        let list = help
            .split("Invocation list")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .expect("a list section");
        let line_of = |needle: &str| {
            list.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("{needle} missing from:\n{list}"))
                .trim()
                .to_owned()
        };
        assert!(line_of("preset failing: is:failing").starts_with("1 "));
        assert!(line_of("preset slow: dur>2s").starts_with("2 "));
        // The glyph legend names every span kind and facet glyph the list and tree draw.
        let glyphs = help.split("Glyphs").nth(1).expect("a glyph legend");
        for needle in [
            "◆ llm",
            "⚒ tool",
            "· other",
            "✓ ◐ ✗",
            "⚑ ≠",
            "◇0.85",
            "↻ attempt",
        ] {
            assert!(glyphs.contains(needle), "{needle} missing from:\n{glyphs}");
        }
    }
}
