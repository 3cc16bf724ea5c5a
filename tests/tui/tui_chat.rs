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
use toolcap::tui::overlays::Overlay;

use crate::inspect_fixtures::inspect_log;
use crate::support::{press, screen_text};

/// An app over `store` at 160×50, the default config.
fn app_over(store: Store, mode: Reveal) -> App {
    let mut app = App::new(store, config::from_toml("", false), mode);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 50,
        },
    );
    app
}

/// An app over `path`, its first model call with a recorded payload selected, the detail
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
    let mut app = app_over(store, mode);
    for _ in 0..app.store.len() {
        press(&mut app, "<tab>");
        for _ in 0..40 {
            let on_llm = app
                .invocation()
                .zip(app.selected_span_index())
                .is_some_and(|(inv, i)| {
                    let span = &inv.spans[i];
                    span.kind == SpanKind::Llm
                        && (span.input().is_captured() || span.output().is_captured())
                });
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

/// Each of `wanted` is on `screen`, after the one before it.
fn assert_in_order(screen: &str, wanted: &[&str]) {
    let mut from = 0;
    for wanted in wanted {
        let at = screen[from..]
            .find(wanted)
            .unwrap_or_else(|| panic!("{wanted:?} not after byte {from}:\n{screen}"));
        from += at + wanted.len();
    }
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
        (
            "genai_python_sdk",
            fixture("corpus/otlp-python-sdk/otlp-json/0001-v1_traces.json"),
        ),
        (
            "openai_chat",
            fixture("logs/openai_legacy_function_call.json"),
        ),
        ("anthropic", fixture("logs/anthropic_wrapped_messages.json")),
        ("gemini", fixture("logs/gemini_snake_case.json")),
        ("langchain", fixture("logs/langchain_messages.json")),
        (
            "openai_responses",
            fixture("logs/openai_responses_items.json"),
        ),
        ("inspect_eval", inspect_log("A", "eval")),
        (
            "openinference",
            fixture("corpus/otel-genai/openinference.spans.otlp.jsonl"),
        ),
        (
            "openai_agents",
            fixture("corpus/openai-agents/exports.jsonl"),
        ),
    ];
    for (format, path) in sources {
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
        insta::assert_snapshot!(format!("chat_{format}_redacted"), redacted);
        press(&mut app, "r");
        let revealed = detail(&app);
        assert!(!revealed.contains("\"role\""), "{name}:\n{revealed}");
        insta::assert_snapshot!(format!("chat_{format}_revealed"), revealed);
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

/// The Python SDK's run whose `http_get` call failed: the transcript reads the user's message,
/// the model's call, both tools with their outcome, and the answer, in order.
#[test]
fn the_transcript_reads_the_run_as_one_conversation_and_goes_to_a_span() {
    let path = fixture("corpus/otlp-python-sdk/otlp-json/0002-v1_traces.json");
    let mut app = app_on_first_conversation(&path, Reveal::Redacted);
    press(&mut app, "t");
    let redacted = screen_text(&app);
    assert!(
        redacted.contains("Transcript · invoke_agent research-assistant"),
        "{redacted}"
    );
    assert!(redacted.contains("user │ text (56 chars)"), "{redacted}");
    assert!(
        redacted.contains("✗ http_get(url=…) 3.0s  call_1_1"),
        "{redacted}"
    );
    // The error shows as the detail shows it: the tool's error, masked like free text.
    assert!(
        redacted.contains("✗ ConnectionRefusedError: [Errno 111] Connection refused"),
        "{redacted}"
    );
    assert!(!redacted.contains("Find the failing test"), "{redacted}");
    press(&mut app, "r");
    let revealed = screen_text(&app);
    let order = [
        "user │ Find the failing test in repo toolcap and propose a fix.",
        "→ read_file(query=\"Find the failing test in repo toolcap an\")  call_1_0",
        "✓ read_file(path=\"src/lib.rs\", range=[1,80]) 827ms  call_1_0",
        "✗ http_get(url=\"https://internal.example/api/v1/export\") 3.0s  call_1_1",
        "✗ ConnectionRefusedError: [Errno 111] Connection refused",
        "assistant │ Here is what I found for request #1: ...",
        "── no evaluator verdict ──",
    ];
    assert_in_order(&revealed, &order);
    assert!(
        !revealed.contains("\"parts\""),
        "no raw message JSON:\n{revealed}"
    );
    insta::assert_snapshot!("transcript_python_sdk_revealed", revealed);
    // `/` finds text in the transcript: on a screen too short for all of it, the view moves so
    // the line holding the text is the first one shown.
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 8,
        },
    );
    press(&mut app, "/refused");
    let found = screen_text(&app);
    assert!(found.contains("/refused▏"), "the prompt: {found}");
    let first_row = found.lines().nth(1).unwrap_or_default();
    assert!(first_row.contains("Connection refused"), "{found}");
    assert!(matches!(app.overlay, Some(Overlay::Transcript(_))));
    press(&mut app, "<enter><esc>");
    assert!(
        app.overlay.is_some(),
        "Esc ends the find first, the transcript stays"
    );
    // n steps to the model's call, then to the tools; Enter shows the failed one in the tree.
    press(&mut app, "nnn<enter>");
    assert!(app.overlay.is_none());
    let inv = app.invocation().unwrap();
    let span = &inv.spans[app.selected_span_index().unwrap()];
    assert_eq!(span.tool().and_then(|t| t.name), Some("http_get"));
}

/// The real binary in a real terminal: `t` on the Python SDK's trace reads the user's message,
/// the failed `http_get(...)` call and its error, and no message JSON.
#[test]
fn the_real_binary_opens_the_transcript_on_t() {
    use crate::tmux::{Tmux, shell_quote};
    let path = fixture("corpus/otlp-python-sdk/otlp-json/0002-v1_traces.json");
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml {} {}",
        shell_quote(env!("CARGO_BIN_EXE_toolcap-tui")),
        shell_quote(&path.display().to_string())
    );
    let tmux = Tmux::start(&command);
    tmux.wait_for("the run listed", |s| {
        s.contains("invoke_agent research-assistant")
    });
    tmux.send(&["t"]);
    tmux.wait_for("the transcript", |s| s.contains("Transcript ·"));
    tmux.send(&["r"]);
    // The user's words show only once revealed (the tool's error shows either way).
    let screen = tmux.wait_for("the revealed transcript", |s| {
        s.contains("Find the failing test")
    });
    for wanted in [
        "user │ Find the failing test in repo toolcap and propose a fix.",
        "✗ http_get(url=\"https://internal.example/api/v1/export\")",
        "✗ ConnectionRefusedError: [Errno 111] Connection refused",
    ] {
        assert!(screen.contains(wanted), "{wanted:?} missing:\n{screen}");
    }
    assert!(
        !screen.contains("\"parts\"") && !screen.contains("\"role\""),
        "{screen}"
    );
    tmux.send(&["q"]);
}

/// `/` with the detail focused finds text in what it shows: typing scrolls to the first line
/// holding it, the matches are marked, n goes on to the next, Esc ends it.
#[test]
fn slash_in_the_detail_finds_text_there_and_n_walks_it() {
    let path = fixture("corpus/otlp-python-sdk/otlp-json/0001-v1_traces.json");
    let mut app = app_on_first_conversation(&path, Reveal::Revealed);
    press(&mut app, "/gpt-4o");
    let first = app.detail.scroll;
    let line: String = app.detail.content.lines[first]
        .spans
        .iter()
        .map(|s| s.content.as_ref())
        .collect();
    assert!(line.to_lowercase().contains("gpt-4o"), "{line}");
    let screen = screen_text(&app);
    assert!(screen.contains("/gpt-4o▏"), "the prompt shows: {screen}");
    let marked = toolcap::tui::ui::highlight::text_marks(&line, "GPT-4O");
    assert_eq!(marked.len(), "gpt-4o".len());
    press(&mut app, "<enter>");
    assert!(app.detail_find.active);
    press(&mut app, "n");
    assert!(app.detail.scroll > first, "n moves on from line {first}");
    press(&mut app, "<esc>");
    assert!(!app.detail_find.active && !app.detail_find.editing);
    // With the find ended, n walks the failure queue again.
    assert!(app.detail_find.needle().is_none());
}

/// `}` and `{` in the detail go from message to message (and tool call, result, error).
#[test]
fn braces_in_the_detail_step_through_the_conversation() {
    let path = fixture("logs/openai_legacy_function_call.json");
    let mut app = app_on_first_conversation(&path, Reveal::Revealed);
    let line_at = |app: &App| {
        toolcap::tui::ui::highlight::line_text(&app.detail.content.lines[app.detail.scroll])
    };
    press(&mut app, "}");
    assert!(line_at(&app).contains("system │"), "{}", line_at(&app));
    press(&mut app, "}");
    assert!(line_at(&app).contains("user │"), "{}", line_at(&app));
    press(&mut app, "}");
    assert!(line_at(&app).contains("→ get_price("), "{}", line_at(&app));
    press(&mut app, "{");
    assert!(line_at(&app).contains("user │"), "{}", line_at(&app));
}

/// An arksim turn records the user's message and the agent's answer on its root: the
/// transcript opens with the one, shows the failed tool call, and closes with the other and
/// the evaluator's verdict.
#[test]
fn an_arksim_turn_reads_as_message_tool_call_answer_and_verdict() {
    // Relative to the checkout, where tests run: the payloads are read again from there.
    let (store, _) = toolcap::sources::load::load_store(&[std::path::PathBuf::from(
        "tests/fixtures/corpus/arksim/run-direct",
    )]);
    let mut app = app_over(store, Reveal::Revealed);
    // The turn asking about ORD-9999, whose lookup failed.
    for _ in 0..app.store.len() {
        let shown = app.invocation().is_some_and(|inv| {
            inv.spans
                .iter()
                .any(|s| s.tool().and_then(|t| t.name) == Some("lookup_order"))
                && inv.spans.iter().any(|s| s.error_message().is_some())
        });
        if shown {
            break;
        }
        press(&mut app, "<down>");
    }
    press(&mut app, "t");
    let screen = screen_text(&app);
    let order = [
        "user │ Where is my order ORD-9999?",
        "✗ lookup_order(order_id=\"ORD-9999\")",
        "assistant │ I ran into a problem.",
        "── verdict · ✗ failed",
    ];
    assert_in_order(&screen, &order);
}

/// An Inspect sample's transcript ends on its verdict and what the sample expected: the
/// target's length until revealed, then the target itself.
#[test]
fn an_inspect_transcript_ends_on_the_verdict_and_the_target() {
    let path = inspect_log("A", "json");
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut app = app_on_first_conversation(&path, Reveal::Redacted);
    press(&mut app, "t");
    let redacted = screen_text(&app);
    let sample = log["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            redacted.contains(&format!(
                "Transcript · geo_tools · {} ",
                s["id"].as_str().unwrap()
            ))
        })
        .unwrap_or_else(|| panic!("a sample's transcript:\n{redacted}"));
    let target = sample["target"].as_str().unwrap();
    assert_in_order(
        &redacted,
        &[
            "── verdict ·",
            &format!("target: text ({} chars)", target.chars().count()),
        ],
    );
    assert!(
        !redacted.contains(&format!("target: {target}")),
        "{redacted}"
    );
    press(&mut app, "r");
    assert_in_order(
        &screen_text(&app),
        &["── verdict ·", &format!("target: {target}")],
    );
}

/// A sample stopped by its limit says so in its verdict and at the end of its transcript, in
/// Inspect's words (`tests/fixtures/inspect-ai/limit/SOURCES.md`).
#[test]
fn a_sample_stopped_by_its_limit_says_so_in_the_verdict_and_the_transcript() {
    let reason = "Message limit exceeded. count: 5; limit: 4";
    let mut app = crate::support::app_over_source(&fixture("inspect-ai/limit"), 140, 40);
    let detail = detail(&app);
    assert_in_order(
        &detail,
        &[
            "── verdict · ⚑ failing ──",
            "target    text (1 chars)",
            &format!("limit     {reason}"),
        ],
    );
    press(&mut app, "t");
    assert_in_order(
        &screen_text(&app),
        &[
            "── verdict ·",
            "target: text (1 chars)",
            &format!("limit:  {reason}"),
        ],
    );
}

/// What an Inspect sample logged is a `log` event on the sample's span (level and place; the
/// message once revealed), and its error an `exception` event: its type, and once revealed its
/// message and Inspect's traceback line by line, read from the log when shown.
#[test]
fn a_sample_errors_traceback_reads_line_by_line_once_revealed() {
    let path = inspect_log("B", "json");
    let mut app = crate::support::app_over_source(&path, 160, 200);
    press(&mut app, "/case-id:geo-08<enter>");
    press(&mut app, "<tab>");
    let redacted = detail(&app);
    assert_in_order(
        &redacted,
        &[
            "── events (2) ──",
            "log",
            "log.level = warning",
            "log.message = string (",
            "code.filepath = run.py",
            "exception",
            "exception.type = RuntimeError",
        ],
    );
    assert!(
        redacted.contains("exception.stacktrace = <payload"),
        "{redacted}"
    );
    assert!(
        !redacted.contains("Traceback (most recent call last):"),
        "{redacted}"
    );
    assert!(!redacted.contains("traceback"), "{redacted}");
    press(&mut app, "r");
    let revealed = detail(&app);
    // The verdict ends on the trace's last lines, where the error was raised.
    assert_in_order(
        &revealed,
        &[
            "── verdict ·",
            "traceback, its last 6 of ",
            "RuntimeError: population service returned HTTP 503",
            "── events (2) ──",
        ],
    );
    assert_in_order(
        &revealed,
        &[
            "log.message = sample=geo-08⏎Sample error (id: geo-08, epoch: 1)",
            "exception.stacktrace =",
            "+ Exception Group Traceback (most recent call last):",
            "Traceback (most recent call last):",
            "RuntimeError: population service returned HTTP 503",
        ],
    );
}
