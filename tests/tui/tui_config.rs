//! The keymap and theme tables are complete: every action has a default binding, every theme
//! slot a default and a config name, and the documented config file parses.

use toolcap::tui::action::Action;
use toolcap::tui::config::from_toml;
use toolcap::tui::keymap::Keymap;
use toolcap::tui::theme::{Role, Theme};

#[test]
fn every_action_has_a_default_binding() {
    let keymap = Keymap::default();
    for action in Action::BINDABLE {
        assert!(keymap.is_bound(action), "{action:?} has no key");
    }
}

#[test]
fn every_theme_slot_has_a_default_and_a_name() {
    let theme = Theme::default();
    let mut names = std::collections::HashSet::new();
    for role in Role::ALL {
        assert_eq!(theme.style(role), role.default_style());
        assert!(
            names.insert(role.key()),
            "duplicate slot name {}",
            role.key()
        );
    }
    for slot in [
        "span.llm",
        "span.tool",
        "status.error",
        "status.degraded",
        "selection",
        "border.focused",
        "diff.added",
    ] {
        assert!(Role::from_key(slot).is_some(), "{slot}");
    }
}

#[test]
fn the_documented_example_config_parses_cleanly() {
    let text = include_str!("../fixtures/tui/config.toml");
    let config = from_toml(text, false);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn no_color_draws_no_colours_but_keeps_the_selection_visible() {
    use ratatui::style::{Color, Modifier};
    let mut app = crate::support::sample_app(100, 30);
    app.config = from_toml("", true);
    // Rebuild cached detail lines with the colourless theme.
    crate::support::press(&mut app, "rr");
    let terminal = crate::support::draw(&app);
    let buffer = terminal.backend().buffer();
    for cell in buffer.content() {
        assert_eq!(cell.fg, Color::Reset, "{:?}", cell.symbol());
        assert_eq!(cell.bg, Color::Reset, "{:?}", cell.symbol());
    }
    assert!(
        buffer
            .content()
            .iter()
            .any(|c| c.modifier.contains(Modifier::REVERSED)),
        "the selection is still marked"
    );
}
