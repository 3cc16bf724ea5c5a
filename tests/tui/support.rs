//! Shared helpers for the TUI tests: a store built in code (independent of the parsers), a
//! key driver that goes through the real keymap, and rendering into a `TestBackend`.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolcap::model::{
    Batch, ErrorInfo, EvalVerdict, LlmFacts, Payload, RequestedToolCall, RetrievalFacts, Span,
    SpanKind, SpanStatus, ToolFacts,
};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::event_loop::action_for_event;
use toolcap::tui::ui;

/// 2025-11-30 10:00:00 UTC.
pub const T0: u64 = 1_764_496_800_000_000_000;
const MS: u64 = 1_000_000;

/// The argument value that must never be on screen while redacted.
pub const SECRET_CITY: &str = "Valparaiso";

pub fn span(
    trace: &str,
    id: &str,
    parent: Option<&str>,
    name: &str,
    kind: SpanKind,
    start_ms: u64,
    end_ms: u64,
) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: name.into(),
        kind,
        start_unix_nano: T0 + start_ms * MS,
        end_unix_nano: T0 + end_ms * MS,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        ..Default::default()
    }
}

fn llm(
    trace: &str,
    id: &str,
    parent: &str,
    start: u64,
    end: u64,
    attempt: u32,
    calls: &[(&str, &str)],
) -> Span {
    let mut s = span(
        trace,
        id,
        Some(parent),
        "chat gpt-4o",
        SpanKind::Llm,
        start,
        end,
    );
    s.set_llm(Some(Box::new(LlmFacts {
        provider: Some("openai".into()),
        model: Some("gpt-4o".into()),
        input_tokens: Some(120).into(),
        output_tokens: Some(30).into(),
        requested_tool_calls: calls
            .iter()
            .map(|(id, name)| RequestedToolCall {
                id: Some((*id).into()),
                name: (*name).into(),
            })
            .collect(),
        ..Default::default()
    })));
    s.identity_mut().node.attempt_index = Some(attempt);
    s.set_input(
        Payload::inline(
            "gen_ai.input.messages",
            r#"[{"role":"user","content":"Plan a trip to the coast"}]"#,
        )
        .into(),
    );
    s
}

fn tool(
    trace: &str,
    id: &str,
    parent: &str,
    name: &str,
    call: &str,
    (start, end): (u64, u64),
    args: &str,
) -> Span {
    let mut s = span(
        trace,
        id,
        Some(parent),
        &format!("execute_tool {name}"),
        SpanKind::Tool,
        start,
        end,
    );
    s.set_tool(Some(Box::new(ToolFacts {
        name: Some(name.into()),
        call_id: Some(call.into()),
    })));
    s.set_input(Payload::inline("gen_ai.tool.call.arguments", args).into());
    s
}

/// Three invocations: a degraded trip planner with a failing tool, an older passing
/// summarizer with an eval verdict, and the oldest one carrying hostile escape sequences.
pub fn sample_batch() -> Batch {
    let t = "trip";
    let mut spans = vec![
        span(
            t,
            "root",
            None,
            "invoke_agent trip_planner",
            SpanKind::Agent,
            0,
            2000,
        ),
        llm(t, "llm0", "root", 10, 300, 0, &[]),
        llm(
            t,
            "llm1",
            "root",
            310,
            700,
            1,
            &[("call_1", "search_flights"), ("call_2", "get_weather")],
        ),
        tool(
            t,
            "tool1",
            "root",
            "search_flights",
            "call_1",
            (710, 900),
            r#"{"origin":"OSL","destination":"Lima"}"#,
        ),
        tool(
            t,
            "tool2",
            "root",
            "get_weather",
            "call_2",
            (910, 1200),
            &format!(r#"{{"city":"{SECRET_CITY}","api_key":"sk-abcdefghijklmnopqrstuvwx"}}"#),
        ),
        span(
            t,
            "ret",
            Some("root"),
            "retrieve visa_rules",
            SpanKind::Retrieval,
            1210,
            1500,
        ),
    ];
    spans[4].status = SpanStatus::Error;
    spans[4].set_error(Some(ErrorInfo {
        error_type: Some("TimeoutError".into()),
        message: Some("upstream timed out".into()),
        ..Default::default()
    }));
    spans[3].set_output(
        Payload::inline(
            "gen_ai.tool.call.result",
            r#"{"flights": ["LA123", "LA456"]}"#,
        )
        .into(),
    );
    spans[5].set_retrieval(Some(Box::new(RetrievalFacts {
        query: Some("visa rules for Peru".into()),
        document_count: Some(3),
    })));
    spans[5].set_output(
        Payload::inline(
            "documents",
            "[\"doc one\", \"doc t…[truncated, 9000 bytes total]",
        )
        .into(),
    );

    let s = "summ";
    let mut summary = vec![
        span(
            s,
            "sroot",
            None,
            "invoke_agent summarizer",
            SpanKind::Agent,
            0,
            0,
        ),
        llm(s, "sllm", "sroot", 0, 0, 0, &[]),
    ];
    for sp in &mut summary {
        sp.start_unix_nano -= 3_600_000 * MS;
        sp.end_unix_nano = sp.start_unix_nano + 800 * MS;
    }
    spans.extend(summary);

    let e = "hostile";
    let mut hostile = vec![
        span(
            e,
            "hroot",
            None,
            "evil\u{1b}[2Jname",
            SpanKind::Agent,
            0,
            10,
        ),
        tool(
            e,
            "htool",
            "hroot",
            "paste",
            "call_h",
            (1, 5),
            "{\"clip\":\"\\u001b]52;c;SGVsbG8=\\u0007 and \\u001b[2J wipe\"}",
        ),
    ];
    hostile[0].set_output(
        Payload::inline(
            "output",
            "before\u{1b}[2J after \u{1b}]52;c;SGVsbG8=\u{7} end",
        )
        .into(),
    );
    for sp in &mut hostile {
        sp.start_unix_nano -= 7_200_000 * MS;
        sp.end_unix_nano -= 7_200_000 * MS;
    }
    spans.extend(hostile);

    Batch {
        spans,
        evals: vec![(
            "summ".into(),
            EvalVerdict {
                passed: true,
                score: Some(0.9),
                threshold: None,
                label: "pass".into(),
                reason: String::new(),
                reason_quotes_output: false,
                scorers: Vec::new(),
                target: None,
                limit: None,
            },
        )],
        ..Default::default()
    }
}

pub fn sample_store() -> Store {
    let mut store = Store::new();
    store.ingest(sample_batch());
    store
}

/// An app over the sample store with the default config (no user config file, colours on).
pub fn sample_app(width: u16, height: u16) -> App {
    app_over_store(sample_store(), width, height)
}

/// An app over `store` with the default config, redacted, sized `width` × `height`.
pub fn app_over_store(store: Store, width: u16, height: u16) -> App {
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(&mut app, Action::Resize { width, height });
    app
}

/// An app over what `source` (a file or directory) loads, as [`app_over_store`].
pub fn app_over_source(source: &std::path::Path, width: u16, height: u16) -> App {
    let (store, _) = toolcap::sources::load::load_into(
        Store::new(),
        &[source.to_path_buf()],
        &toolcap::sources::remote::RemoteOptions::default(),
    );
    app_over_store(store, width, height)
}

/// Presses keys through the real keymap (named as [`key_events`] names them).
pub fn press(app: &mut App, keys: &str) {
    for event in key_events(keys) {
        if let Some(action) = action_for_event(app, &event) {
            app::update(app, action);
        }
    }
}

/// Key presses from their names: `<tab>`, `<enter>`, `<esc>`, `<s-tab>`, `<c-c>`, `<down>`,
/// `<up>`, `<pgdn>`, `<pgup>`, `<space>` are named; any other character is itself.
pub fn key_events(keys: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut rest = keys;
    while !rest.is_empty() {
        let (code, modifiers, used) = if rest.starts_with('<')
            && let Some(end) = rest.find('>')
        {
            let name = &rest[1..end];
            let (code, modifiers) = match name {
                "tab" => (KeyCode::Tab, KeyModifiers::NONE),
                "s-tab" => (KeyCode::BackTab, KeyModifiers::SHIFT),
                "enter" => (KeyCode::Enter, KeyModifiers::NONE),
                "esc" => (KeyCode::Esc, KeyModifiers::NONE),
                "c-c" => (KeyCode::Char('c'), KeyModifiers::CONTROL),
                "down" => (KeyCode::Down, KeyModifiers::NONE),
                "up" => (KeyCode::Up, KeyModifiers::NONE),
                "pgdn" => (KeyCode::PageDown, KeyModifiers::NONE),
                "pgup" => (KeyCode::PageUp, KeyModifiers::NONE),
                "space" => (KeyCode::Char(' '), KeyModifiers::NONE),
                other => panic!("unknown key name {other}"),
            };
            (code, modifiers, end + 1)
        } else {
            let c = rest.chars().next().unwrap();
            let modifiers = if c.is_uppercase() {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            (KeyCode::Char(c), modifiers, c.len_utf8())
        };
        rest = &rest[used..];
        events.push(Event::Key(KeyEvent::new(code, modifiers)));
    }
    events
}

/// A mouse event on the screen as last drawn: like the event loop, it draws first and hands the
/// regions drawn back to the app, which hit-tests against them.
pub fn mouse(app: &mut App, kind: MouseEventKind, column: u16, row: u16) {
    let regions = draw_regions(app);
    app::record_frame(app, regions);
    let event = Event::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    });
    if let Some(action) = action_for_event(app, &event) {
        app::update(app, action);
    }
}

pub fn draw(app: &App) -> Terminal<TestBackend> {
    let mut terminal =
        Terminal::new(TestBackend::new(app.screen.width, app.screen.height)).unwrap();
    terminal
        .draw(|frame| {
            ui::render(frame, app);
        })
        .unwrap();
    terminal
}

/// The regions a frame of the current state draws the panes in.
pub fn draw_regions(app: &App) -> toolcap::tui::layout::Regions {
    let mut terminal =
        Terminal::new(TestBackend::new(app.screen.width, app.screen.height)).unwrap();
    let mut regions = None;
    terminal
        .draw(|frame| regions = Some(ui::render(frame, app)))
        .unwrap();
    regions.expect("drawn")
}

/// The screen as text, one line per row.
pub fn screen_text(app: &App) -> String {
    let terminal = draw(app);
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// Every symbol of the screen, for checks that no raw control character was drawn.
pub fn all_symbols(app: &App) -> String {
    let terminal = draw(app);
    terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect()
}

/// `cases` per property, failures saved beside the test's file (`NAME.proptest-regressions`):
/// proptest's default looks for the nearest `main.rs` and would use `tests/proptest-regressions/`.
pub fn proptest_config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}
