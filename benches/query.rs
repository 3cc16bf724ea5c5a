//! The query evaluator over 1,000,000 spans in 100,000 invocations (10 spans each: a root, 4
//! LLM calls with models and tokens, 4 tool calls, one of which fails in every 7th run).
//! The search budget it measures, and its last figures, are in docs/PERFORMANCE.md.
//!
//! `full_count` / `first_screen`: the evaluator alone, on this thread ("first screen" is the
//! first 40 matches in list order; "full count" evaluates every run).
//! `tui_*`: the TUI's list search as a user meets it, the query worker included: from the key
//! that sets a query on the unfiltered list (so every run is looked at) until the list shows
//! the first screen of new results, and until the last result is in and the list rebuilt; and
//! one key plus one frame drawn into a TestBackend while the worker runs.

use std::sync::{Mutex, OnceLock};

use divan::Bencher;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolcap::model::{Batch, ErrorInfo, LlmFacts, Span, SpanKind, SpanStatus, ToolFacts};
use toolcap::query::{Context, Query};
use toolcap::redact::Reveal;
use toolcap::store::{Invocation, Store};
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::{config, ui};

fn main() {
    divan::main();
}

const RUNS: usize = 100_000;
const TOOLS: [&str; 5] = [
    "search_flights",
    "get_weather",
    "lookup_order",
    "refund",
    "send_email",
];

/// Built once and leaked: the benches borrow its invocations for the whole process.
fn store() -> &'static [&'static Invocation] {
    static LIST: OnceLock<Vec<&'static Invocation>> = OnceLock::new();
    LIST.get_or_init(|| {
        let store: &'static Store = Box::leak(Box::new(build_store()));
        store.newest_first()
    })
}

fn build_store() -> Store {
    {
        let mut store = Store::new();
        for chunk in 0..(RUNS / 1_000) {
            let mut spans = Vec::with_capacity(10_000);
            for r in chunk * 1_000..(chunk + 1) * 1_000 {
                let trace = format!("{r:032x}");
                let start = 1_764_496_800_000_000_000 + r as u64 * 1_000_000;
                let base = |id: &str, parent: Option<&str>, name: String, kind, at: u64| Span {
                    trace_id: trace.as_str().into(),
                    span_id: format!("{r:08x}{id}").into(),
                    parent_span_id: parent.map(|p| format!("{r:08x}{p}").into()),
                    name: name.into(),
                    kind,
                    start_unix_nano: start + at * 1_000_000,
                    end_unix_nano: start + at * 1_000_000 + 900_000 + (r as u64 % 3000) * 1_000_000,
                    provenance: toolcap::model::Provenance::shared(None, None, "bench".into()),
                    ..Default::default()
                };
                spans.push(base(
                    "root",
                    None,
                    format!("agent run {}", r % 97),
                    SpanKind::Agent,
                    0,
                ));
                for c in 0..4u64 {
                    let mut llm = base(
                        &format!("l{c}"),
                        Some("root"),
                        "chat".into(),
                        SpanKind::Llm,
                        1 + 2 * c,
                    );
                    llm.set_llm(Some(Box::new(LlmFacts {
                        provider: Some("openai".into()),
                        model: Some(
                            if r % 2 == 0 {
                                "gpt-4o"
                            } else {
                                "claude-sonnet-4-5"
                            }
                            .into(),
                        ),
                        input_tokens: Some(100 + (r as u32 % 900)).into(),
                        output_tokens: Some(50).into(),
                        ..Default::default()
                    })));
                    spans.push(llm);
                    let tool_name = TOOLS[(r + c as usize) % TOOLS.len()];
                    let mut tool = base(
                        &format!("t{c}"),
                        Some("root"),
                        format!("execute_tool {tool_name}"),
                        SpanKind::Tool,
                        2 + 2 * c,
                    );
                    tool.set_tool(Some(Box::new(ToolFacts {
                        name: Some(tool_name.into()),
                        call_id: Some(format!("call_{r}_{c}").into()),
                    })));
                    if c == 3 && r % 7 == 0 {
                        tool.status = SpanStatus::Error;
                        tool.set_error(Some(ErrorInfo {
                            error_type: Some("Timeout".into()),
                            message: Some(
                                format!("upstream timed out after {}s (non-fatal)", r % 30).into(),
                            ),
                            ..Default::default()
                        }));
                    }
                    spans.push(tool);
                }
                spans.push(base(
                    "ret",
                    Some("root"),
                    "retrieve docs".into(),
                    SpanKind::Retrieval,
                    9,
                ));
            }
            store.ingest(Batch {
                spans,
                ..Default::default()
            });
        }
        store
    }
}

/// The last three match one span or none: their first screen is the whole search, the case
/// the search index is there for.
const QUERIES: &[&str] = &[
    "is:failing",
    "tool:refund",
    "\"non-fatal\"",
    "model:claude tokens>=3000",
    "srchflt",
    "kind:tool -is:error dur>2s",
    "\"call_98765_2\"",
    "tool:no_such_tool",
    "qqzzxx",
];
// The TUI's bench applies them as presets, on number keys 1-9.
const _: () = assert!(QUERIES.len() <= 9);

#[divan::bench(args = QUERIES, sample_count = 20)]
fn full_count(bencher: Bencher, query: &str) {
    let list = store();
    let q = Query::parse(query).unwrap();
    let ctx = Context::default();
    bencher.bench(|| {
        list.iter()
            .filter(|inv| q.matches(inv, &ctx).is_some())
            .count()
    });
}

#[divan::bench(args = QUERIES)]
fn first_screen(bencher: Bencher, query: &str) {
    let list = store();
    let q = Query::parse(query).unwrap();
    let ctx = Context::default();
    bencher.bench(|| {
        list.iter()
            .filter(|inv| q.matches(inv, &ctx).is_some())
            .take(40)
            .count()
    });
}

/// An app over its own copy of the store, each query of [`QUERIES`] a preset (key `n` applies
/// query `n - 1`), the screen 120×40.
fn tui() -> &'static Mutex<App> {
    static APP: OnceLock<Mutex<App>> = OnceLock::new();
    APP.get_or_init(|| {
        let presets: String = QUERIES
            .iter()
            .enumerate()
            .map(|(n, q)| format!("q{n} = {q:?}\n"))
            .collect();
        let config = config::from_toml(&format!("[presets]\n{presets}"), false);
        let mut app = App::new(build_store(), config, Reveal::Redacted);
        app::update(
            &mut app,
            Action::Resize {
                width: 120,
                height: 40,
            },
        );
        Mutex::new(app)
    })
}

fn preset_of(query: &str) -> Action {
    let n = QUERIES.iter().position(|q| *q == query).expect("a preset");
    Action::Preset(n as u8 + 1)
}

/// Back to the unfiltered list, nothing running (outside the timed part).
fn unfiltered(app: &mut App) {
    app::finish_search(app);
    app::update(app, Action::Cancel);
    app::finish_search(app);
    assert!(app.search.is_empty());
}

fn draw(app: &App) {
    let mut terminal = Terminal::new(TestBackend::new(app.screen.width, app.screen.height))
        .expect("a test backend");
    terminal
        .draw(|frame| {
            ui::render(frame, app);
        })
        .expect("drawn");
}

/// Key → the list shows the first screen of the new query's results (or all of them, when
/// fewer than a screenful match).
#[divan::bench(args = QUERIES, sample_count = 10, sample_size = 1)]
fn tui_first_screen(bencher: Bencher, query: &str) {
    let app = tui();
    bencher
        .with_inputs(|| unfiltered(&mut app.lock().unwrap()))
        .bench_local_values(|()| {
            let mut app = app.lock().unwrap();
            app::update(&mut app, preset_of(query));
            while app.filter.shown_text() != query && app::receive_search_result(&mut app) {}
            app.list.ids().len()
        });
}

/// Key → every result in and the list rebuilt from them.
#[divan::bench(args = QUERIES, sample_count = 10, sample_size = 1)]
fn tui_full_count(bencher: Bencher, query: &str) {
    let app = tui();
    bencher
        .with_inputs(|| unfiltered(&mut app.lock().unwrap()))
        .bench_local_values(|()| {
            let mut app = app.lock().unwrap();
            app::update(&mut app, preset_of(query));
            app::finish_search(&mut app);
            app.list.ids().len()
        });
}

/// One key (the list cursor down) and one frame while the worker evaluates a query over
/// every run (started, outside the timed part, just before).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn tui_key_frame_while_searching(bencher: Bencher) {
    let app = tui();
    bencher
        .with_inputs(|| {
            let mut app = app.lock().unwrap();
            unfiltered(&mut app);
            app::update(&mut app, preset_of("srchflt"));
            assert!(app.filter.is_searching());
        })
        .bench_local_values(|()| {
            let mut app = app.lock().unwrap();
            app::update(&mut app, Action::Down);
            draw(&app);
            app.filter.is_searching()
        });
}

/// One typed key in the search prompt (it supersedes the running query and starts its own)
/// and one frame, while the worker evaluates a query over every run.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn tui_typed_key_frame_while_searching(bencher: Bencher) {
    let app = tui();
    bencher
        .with_inputs(|| {
            let mut app = app.lock().unwrap();
            unfiltered(&mut app);
            app::update(&mut app, Action::StartSearch);
            app::update(&mut app, Action::SearchInput('x'));
            assert!(app.filter.is_searching());
        })
        .bench_local_values(|()| {
            let mut app = app.lock().unwrap();
            app::update(&mut app, Action::SearchInput('z'));
            draw(&app);
            app.filter.is_searching()
        });
}
