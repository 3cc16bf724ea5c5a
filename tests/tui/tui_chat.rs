//! Model calls' messages read as a conversation in the detail pane, for every format that
//! records them: a role gutter, tool calls inline, results under them, no raw message JSON
//! unless asked for (`J`), and only the parts' shapes while redacted.

use std::path::Path;
use std::sync::Arc;

use toolcap::model::{Origin, SpanKind};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;

use crate::inspect_fixtures::inspect_log;
use crate::support::{press, screen_text};

/// An app over `path`, its first run whose model call reads as messages selected, the detail
/// focused.
fn app_on_first_conversation(path: &Path, mode: Reveal) -> App {
    let bytes = std::fs::read(path).unwrap();
    // Named relative to the checkout (tests run there), so the screens are the same wherever
    // it is.
    let relative = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .to_path_buf();
    let loaded = toolcap::formats::load_bytes(Origin::File(Arc::new(relative)), &bytes);
    let mut store = Store::new();
    store.ingest(loaded.batch);
    let mut app = App::new(store, config::from_toml("", false), mode);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 50,
        },
    );
    for _ in 0..app.store.len() {
        press(&mut app, "<tab>");
        for _ in 0..40 {
            let on_llm = app
                .invocation()
                .zip(app.selected_span_index())
                .is_some_and(|(inv, i)| inv.spans[i].kind == SpanKind::Llm);
            if on_llm {
                press(&mut app, "<tab>");
                return app;
            }
            press(&mut app, "<down>");
        }
        press(&mut app, "<s-tab><s-tab><down>");
    }
    panic!("no model call in {}", path.display());
}

fn fixture(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// The detail pane's text (right of the tree).
fn detail(app: &App) -> String {
    screen_text(app)
        .lines()
        .filter_map(|line| line.split_once("││").map(|(_, right)| right.to_owned()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_format_s_messages_read_as_chat_and_j_shows_the_json() {
    let sources = [
        fixture("corpus/otlp-python-sdk/otlp-json/0001-v1_traces.json"),
        fixture("logs/openai_legacy_function_call.json"),
        fixture("logs/anthropic_wrapped_messages.json"),
        fixture("logs/gemini_snake_case.json"),
        fixture("logs/langchain_messages.json"),
        fixture("logs/openai_responses_items.json"),
        inspect_log("A", "eval"),
    ];
    for path in sources {
        let mut app = app_on_first_conversation(&path, Reveal::Redacted);
        let redacted = detail(&app);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            redacted.contains(" · J shows the raw JSON"),
            "{name}:\n{redacted}"
        );
        assert!(
            ["user │", "assistant │", "system │"]
                .iter()
                .any(|gutter| redacted.contains(gutter)),
            "{name}:\n{redacted}"
        );
        assert!(
            redacted.contains("chars)"),
            "{name}: shapes only:\n{redacted}"
        );
        assert!(!redacted.contains("\"role\""), "{name}:\n{redacted}");
        press(&mut app, "r");
        let revealed = detail(&app);
        assert!(!revealed.contains("\"role\""), "{name}:\n{revealed}");
        press(&mut app, "J");
        let raw = detail(&app);
        assert!(
            raw.contains("\"role\"") || raw.contains("\"type\""),
            "{name}: J shows JSON:\n{raw}"
        );
    }
}

#[test]
fn the_python_sdk_conversation_shows_its_words_calls_and_results_once_revealed() {
    let path = fixture("corpus/otlp-python-sdk/otlp-json/0001-v1_traces.json");
    let mut app = app_on_first_conversation(&path, Reveal::Redacted);
    insta::assert_snapshot!("chat_python_sdk_redacted", detail(&app));
    press(&mut app, "r");
    insta::assert_snapshot!("chat_python_sdk_revealed", detail(&app));
}

#[test]
fn the_system_prompt_is_folded_until_space() {
    let path = fixture("logs/openai_legacy_function_call.json");
    let mut app = app_on_first_conversation(&path, Reveal::Revealed);
    let shown = detail(&app);
    assert!(
        shown.contains("system │ You can look up stock prices."),
        "{shown}"
    );
    assert!(shown.contains("user │ Price of ACME?"), "{shown}");
    press(&mut app, "<space>");
    assert_eq!(
        detail(&app),
        shown,
        "a one-line prompt has nothing to unfold"
    );
    assert!(app.expand_system);
}
