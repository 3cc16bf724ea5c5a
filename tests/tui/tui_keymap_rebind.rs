//! Rebinding keys in the config file changes every place a key is named: the footer, the help
//! overlay, the status bar and the title of every overlay — and the new keys work while the old
//! ones no longer do. Drawn into ratatui's `TestBackend`, asserted on the text.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use toolcap::model::{Batch, GoldCall, GoldSpec, Problem};
use toolcap::sources::IngestEvent;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::event_loop::action_for_event;
use toolcap::tui::overlays::Overlay;
use toolcap::tui::overlays::help::help_lines;

use crate::support::{press, sample_app, screen_text};

/// Function keys only, so none collides with a default binding or with typed text.
const REBOUND: &str = r#"
[keys.global]
"?" = "none"
"<f1>" = "toggle_help"
"<esc>" = "none"
"<f2>" = "cancel"
"p" = "none"
"<f3>" = "toggle_problems"
"d" = "none"
"<f4>" = "toggle_diff"
"j" = "none"
"<down>" = "none"
"<f11>" = "down"
[keys.list]
"s" = "none"
"<f9>" = "cycle_sort"
[keys.diff]
"n" = "none"
"<f5>" = "next_difference"
"a" = "none"
"<f6>" = "cycle_alignment"
[keys.search]
"<enter>" = "none"
"<f7>" = "search_accept"
"<esc>" = "none"
"<f8>" = "cancel"
"#;

fn rebound_app() -> App {
    let mut app = sample_app(160, 40);
    app.config = config::from_toml(REBOUND, false);
    assert!(app.config.warnings.is_empty(), "{:?}", app.config.warnings);
    let gold = GoldSpec {
        calls: vec![GoldCall {
            tool: "book_hotel".into(),
            args: json!({"city": "Lima"}).as_object().cloned(),
            ..Default::default()
        }],
        source: "test gold".into(),
        ..Default::default()
    };
    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            golds: vec![("trip".into(), gold)],
            problems: vec![Problem::error("traces/bad.jsonl", Some(7), "not JSON")],
            ..Default::default()
        }),
    );
    app
}

fn function_key(app: &mut App, n: u8) {
    let event = Event::Key(KeyEvent::new(KeyCode::F(n), KeyModifiers::NONE));
    if let Some(action) = action_for_event(app, &event) {
        app::update(app, action);
    }
}

fn footer(screen: &str) -> &str {
    screen.lines().last().unwrap()
}

#[test]
fn the_footer_status_bar_and_pane_titles_name_the_rebound_keys() {
    let app = rebound_app();
    let screen = screen_text(&app);
    let footer = footer(&screen);
    assert!(footer.contains("F1 help"), "{footer}");
    assert!(footer.contains("F9 sort"), "{footer}");
    assert!(!footer.contains("? help") && !footer.contains("s sort"));
    assert!(screen.contains("1 error (F3)"), "{screen}");
    assert!(screen.contains("newest first (F9)"), "{screen}");
}

#[test]
fn the_help_overlay_lists_the_rebound_keys_and_its_title_names_them() {
    let mut app = rebound_app();
    press(&mut app, "?");
    assert!(
        !matches!(app.overlay, Some(Overlay::Help(_))),
        "? is unbound"
    );
    function_key(&mut app, 1);
    assert!(matches!(app.overlay, Some(Overlay::Help(_))));
    let screen = screen_text(&app);
    assert!(
        screen.contains("Keys — F1 or F2 closes, F11/k scroll"),
        "{screen}"
    );
    let help: Vec<String> = help_lines(&app).iter().map(|l| l.to_string()).collect();
    let entry = |keys: &str, what: &str| {
        help.iter()
            .any(|l| l.trim_start().starts_with(keys) && l.trim_end().ends_with(what))
    };
    assert!(entry("F1", "help"), "{help:#?}");
    assert!(entry("F2", "close / clear"));
    assert!(entry("F5", "next difference"));
    assert!(entry("F6", "cycle alignment"));
    assert!(entry("F7", "keep the search"));
    assert!(!entry("?", "help"), "the unbound key is not listed");
    assert!(help.iter().any(|l| l == "Gold diff view (F4)"), "{help:#?}");
    function_key(&mut app, 2);
    assert!(!matches!(app.overlay, Some(Overlay::Help(_))));
}

#[test]
fn the_problems_overlay_title_names_the_rebound_keys() {
    let mut app = rebound_app();
    function_key(&mut app, 3);
    assert!(matches!(app.overlay, Some(Overlay::Problems(_))));
    let screen = screen_text(&app);
    assert!(screen.contains("Problems — F3 or F2 closes"), "{screen}");
    function_key(&mut app, 2);
    assert!(!matches!(app.overlay, Some(Overlay::Problems(_))));
}

#[test]
fn the_diff_overlay_footer_and_title_name_the_rebound_keys() {
    let mut app = rebound_app();
    assert_eq!(app.selected_invocation.as_deref(), Some("trip"));
    function_key(&mut app, 4);
    let selected = app
        .gold_diff()
        .expect("F4 opens the diff")
        .state
        .selected_row;
    let screen = screen_text(&app);
    let footer = footer(&screen);
    assert!(footer.contains("F5/N next/prev difference"), "{footer}");
    assert!(footer.contains("F11/k move"), "{footer}");
    assert!(footer.contains("F6 alignment"), "{footer}");
    assert!(footer.contains("F2 close"), "{footer}");
    assert!(
        screen.contains("F5/N next/prev diff · F6 align"),
        "{screen}"
    );
    // The old key does nothing here now.
    press(&mut app, "n");
    assert_eq!(app.gold_diff().unwrap().state.selected_row, selected);
    function_key(&mut app, 11);
    assert_eq!(app.gold_diff().unwrap().state.selected_row, selected + 1);
    function_key(&mut app, 2);
    assert!(app.gold_diff().is_none());
}

#[test]
fn the_search_prompt_and_full_screen_title_name_the_rebound_keys() {
    let mut app = rebound_app();
    press(&mut app, "/summ");
    let screen = screen_text(&app);
    assert!(
        screen.contains("search runs · F7 keeps · F8 restores"),
        "{screen}"
    );
    // Enter is unbound in the prompt: it neither keeps the query nor is typed.
    press(&mut app, "<enter>");
    assert!(app.searching);
    function_key(&mut app, 7);
    assert!(!app.searching);
    assert_eq!(app.list.ids(), ["summ"]);
    assert!(screen_text(&app).contains("F2 clears"));
    press(&mut app, "<tab>f");
    assert!(app.payload_fullscreen);
    assert!(screen_text(&app).contains("full screen (f/F2 closes)"));
}
