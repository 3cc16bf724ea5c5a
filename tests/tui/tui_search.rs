//! The list search and find-in-trace in the TUI, driven by real key events: `k of n`, Esc and
//! Enter, readline keys, history, presets, n/N over matches, only-matches, redaction, and
//! snapshots of what is highlighted in the list, the tree and the detail pane.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::style::{Color, Modifier};
use toolcap::redact::Reveal;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::event_loop::action_for_event;

use crate::support::{draw, press, sample_app, sample_store, screen_text};

fn key(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    if let Some(action) = action_for_event(app, &Event::Key(KeyEvent::new(code, modifiers))) {
        app::update(app, action);
    }
}

fn ctrl(app: &mut App, c: char) {
    key(app, KeyCode::Char(c), KeyModifiers::CONTROL);
}

fn list_title(app: &App) -> String {
    screen_text(app)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn selected_span_id(app: &App) -> String {
    let inv = app.invocation().unwrap();
    inv.spans[app.selected_span_index().unwrap()]
        .span_id
        .to_string()
}

/// Runs of cells drawn in the match style, as `row N: text`, so a snapshot shows exactly what
/// is highlighted.
fn highlighted(app: &App) -> String {
    let terminal = draw(app);
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut runs: Vec<String> = Vec::new();
        let mut run = String::new();
        for x in 0..buffer.area.width {
            let cell = &buffer[(x, y)];
            let marked = cell.bg == Color::Yellow && cell.modifier.contains(Modifier::UNDERLINED);
            if marked {
                run.push_str(cell.symbol());
            } else if !run.is_empty() {
                runs.push(std::mem::take(&mut run));
            }
        }
        if !run.is_empty() {
            runs.push(run);
        }
        if !runs.is_empty() {
            out.push_str(&format!("row {y}: {}\n", runs.join(" | ")));
        }
    }
    out
}

#[test]
fn list_search_filters_live_and_says_k_of_n() {
    let mut app = sample_app(120, 40);
    press(&mut app, "/tool:search");
    assert!(app.searching);
    assert!(
        list_title(&app).contains("/tool:search · 1 of 3"),
        "{}",
        list_title(&app)
    );
    assert_eq!(app.list.ids(), ["trip"]);
    // Esc restores what was in force before the prompt opened: nothing.
    press(&mut app, "<esc>");
    assert!(!app.searching);
    assert_eq!(app.list.ids().len(), 3);
    assert!(list_title(&app).contains("Invocations (3)"));
    // Enter keeps the filter, shown in the title; Esc then clears it.
    press(&mut app, "/kind:tool<enter>");
    assert!(!app.searching);
    assert!(
        list_title(&app).contains("filter: kind:tool · 2 of 3 · Esc clears"),
        "{}",
        list_title(&app)
    );
    press(&mut app, "<esc>");
    assert_eq!(app.list.ids().len(), 3);
}

#[test]
fn a_bad_query_shows_its_position_and_keeps_the_last_good_filter() {
    let mut app = sample_app(120, 40);
    press(&mut app, "/tool:get (");
    let screen = screen_text(&app);
    assert!(screen.contains("✗ col 11: expected a term"), "{screen}");
    // The filter in force is still `tool:get`: the list is not emptied by a half-typed query.
    assert_eq!(app.list.ids(), ["trip"]);
}

#[test]
fn readline_keys_and_history_edit_the_prompt() {
    let mut app = sample_app(120, 40);
    press(&mut app, "/is:error tool:get");
    ctrl(&mut app, 'w');
    assert_eq!(app.list_search.editor.text(), "is:error ");
    ctrl(&mut app, 'a');
    press(&mut app, "-");
    assert_eq!(app.list_search.editor.text(), "-is:error ");
    ctrl(&mut app, 'e');
    press(&mut app, "kind:llm");
    assert_eq!(app.list_search.editor.text(), "-is:error kind:llm");
    key(&mut app, KeyCode::Char('b'), KeyModifiers::ALT);
    ctrl(&mut app, 'u');
    assert_eq!(app.list_search.editor.text(), "kind:llm");
    key(&mut app, KeyCode::Char('f'), KeyModifiers::ALT);
    press(&mut app, "<enter>");
    assert_eq!(app.search, "kind:llm");
    // ↑ brings the accepted query back in a new prompt; ↓ returns to the fresh line.
    press(&mut app, "<esc>/<up>");
    assert_eq!(app.list_search.editor.text(), "kind:llm");
    press(&mut app, "<down>");
    assert_eq!(app.list_search.editor.text(), "");
}

#[test]
fn presets_from_the_config_file_are_on_number_keys() {
    let config = config::from_toml(
        "[presets]\nfailing = \"is:failing\"\nllm = \"kind:llm\"\n",
        false,
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let mut app = App::new(sample_store(), config, Reveal::Redacted);
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 120,
            height: 40,
        },
    );
    // The footer has one hint for all presets (wide enough to reach it).
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 160,
            height: 40,
        },
    );
    let footer = screen_text(&app)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert!(footer.contains("1-2 presets"), "{footer}");
    press(&mut app, "1");
    assert_eq!(app.search, "is:failing");
    assert_eq!(app.list.ids(), ["trip"]);
    press(&mut app, "2");
    assert_eq!(app.search, "kind:llm");
    assert_eq!(app.list.ids().len(), 2);
    let bad = config::from_toml("[presets]\nbroken = \"tool:(\"\n", false);
    assert!(bad.presets.is_empty());
    assert!(
        bad.warnings[0].contains("preset \"broken\""),
        "{:?}",
        bad.warnings
    );
}

#[test]
fn find_in_trace_cycles_matches_with_n_and_esc_gives_n_back_to_failures() {
    let mut app = sample_app(120, 40);
    press(&mut app, "<tab>/kind:tool<enter>");
    assert!(app.find.active);
    let screen = screen_text(&app);
    assert!(screen.contains("find: kind:tool · 1 of 2"), "{screen}");
    assert_eq!(selected_span_id(&app), "tool1");
    press(&mut app, "n");
    assert!(screen_text(&app).contains("find: kind:tool · 2 of 2"));
    assert_eq!(selected_span_id(&app), "tool2");
    press(&mut app, "n");
    assert_eq!(selected_span_id(&app), "tool1", "wraps");
    press(&mut app, "N");
    assert_eq!(selected_span_id(&app), "tool2");
    // Only matches and their ancestors: root, tool1, tool2.
    press(&mut app, "F");
    assert_eq!(app.tree.visible.len(), 3);
    press(&mut app, "F");
    assert_eq!(app.tree.visible.len(), 6);
    // Esc ends the find: n walks the failure queue again (tool2 is the failed span).
    press(&mut app, "<esc>");
    assert!(!app.find.active);
    press(&mut app, "gn");
    assert_eq!(selected_span_id(&app), "tool2");
}

#[test]
fn find_searches_payload_text_only_while_revealed_and_never_masked_secrets() {
    let mut app = sample_app(120, 40);
    press(&mut app, "<tab>/\"OSL\"<enter>");
    assert!(screen_text(&app).contains("find: \"OSL\" · no match"));
    press(&mut app, "r");
    assert!(
        screen_text(&app).contains("find: \"OSL\" · 1 of 1"),
        "{}",
        screen_text(&app)
    );
    press(&mut app, "<esc>/\"sk-abcdef\"<enter>");
    assert!(
        screen_text(&app).contains("· no match"),
        "masked secrets are not searched"
    );
}

#[test]
fn snapshots_show_highlighted_matches_in_list_tree_and_detail() {
    let mut app = sample_app(120, 40);
    press(&mut app, "/trip<enter>");
    assert_snapshot!(
        "list_highlight",
        format!("{}\n{}", screen_text(&app), highlighted(&app))
    );
    press(&mut app, "<tab>/\"upstream\" | tool:flights<enter>");
    assert_snapshot!(
        "tree_highlight",
        format!("{}\n{}", screen_text(&app), highlighted(&app))
    );
    press(&mut app, "n<tab>");
    assert_snapshot!(
        "detail_highlight",
        format!("{}\n{}", screen_text(&app), highlighted(&app))
    );
}
