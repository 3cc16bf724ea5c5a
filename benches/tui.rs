//! With 100,000 spans loaded: handling one key and drawing one frame into a TestBackend.
//! Target: under 16 ms per key+frame. Two shapes: one huge run, and 1,000 runs of 100 spans.

use divan::Bencher;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolcap::model::{Batch, LlmFacts, Payload, Span, SpanKind, SpanStatus, ToolFacts};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::ui;

fn main() {
    divan::main();
}

const T0: u64 = 1_764_496_800_000_000_000;

/// One run: a root, `nodes` node spans, each with `per_node` children alternating llm/tool.
fn run(trace: &str, nodes: usize, per_node: usize, start: u64) -> Vec<Span> {
    let mut spans = Vec::with_capacity(1 + nodes * (per_node + 1));
    let base = |id: String, parent: Option<String>, kind, at: u64| Span {
        trace_id: trace.to_owned(),
        span_id: id,
        parent_span_id: parent,
        name: format!("{kind:?} span"),
        kind,
        start_unix_nano: start + at * 1_000,
        end_unix_nano: start + at * 1_000 + 900,
        format: "bench",
        ..Default::default()
    };
    spans.push(base("root".into(), None, SpanKind::Agent, 0));
    let mut at = 1;
    for n in 0..nodes {
        let node_id = format!("n{n}");
        spans.push(base(
            node_id.clone(),
            Some("root".into()),
            SpanKind::Node,
            at,
        ));
        at += 1;
        for c in 0..per_node {
            let kind = if c % 2 == 0 {
                SpanKind::Llm
            } else {
                SpanKind::Tool
            };
            let mut span = base(format!("n{n}c{c}"), Some(node_id.clone()), kind, at);
            at += 1;
            if kind == SpanKind::Llm {
                span.llm = Some(Box::new(LlmFacts {
                    model: Some("gpt-4o".into()),
                    input_tokens: Some(100),
                    output_tokens: Some(20),
                    ..Default::default()
                }));
            } else {
                span.tool = Some(Box::new(ToolFacts {
                    name: Some("search".into()),
                    call_id: Some(format!("call{n}-{c}")),
                    requested_by: None,
                }));
                span.input = Payload::inline("args", r#"{"query":"weather in Oslo","limit":5}"#);
                if c % 7 == 1 {
                    span.status = SpanStatus::Error;
                }
            }
            spans.push(span);
        }
    }
    spans
}

fn app_with(spans: Vec<Span>) -> App {
    let mut store = Store::new();
    store.ingest(Batch {
        spans,
        ..Default::default()
    });
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 48,
        },
    );
    app
}

fn key_and_frame(bencher: Bencher, mut app: App, keys: &[Action]) {
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
    let mut i = 0;
    bencher.bench_local(|| {
        app::update(&mut app, keys[i % keys.len()]);
        i += 1;
        terminal
            .draw(|frame| ui::render(frame, &app))
            .expect("draw");
    });
}

/// One run of 100,001 spans: moving the cursor in its tree.
#[divan::bench(sample_count = 50)]
fn one_run_100k_spans_tree_move(bencher: Bencher) {
    let mut app = app_with(run("big", 1_000, 99, T0));
    app::update(&mut app, Action::FocusNext);
    key_and_frame(bencher, app, &[Action::Down, Action::Down, Action::Up]);
}

/// One run of 100,001 spans: folding and unfolding the root (recomputes visible rows).
#[divan::bench(sample_count = 50)]
fn one_run_100k_spans_fold_root(bencher: Bencher) {
    let mut app = app_with(run("big", 1_000, 99, T0));
    app::update(&mut app, Action::FocusNext);
    key_and_frame(bencher, app, &[Action::ToggleFold]);
}

/// One run of 100,001 spans: jumping to the next failed span.
#[divan::bench(sample_count = 50)]
fn one_run_100k_spans_next_failure(bencher: Bencher) {
    let mut app = app_with(run("big", 1_000, 99, T0));
    app::update(&mut app, Action::FocusNext);
    key_and_frame(bencher, app, &[Action::NextFailure]);
}

/// 1,000 runs of 100 spans: moving through the invocation list (each move rebuilds the
/// tree and detail of the newly selected run).
#[divan::bench(sample_count = 50)]
fn thousand_runs_list_move(bencher: Bencher) {
    let mut spans = Vec::with_capacity(100_000);
    for r in 0..1_000u64 {
        spans.extend(run(&format!("run{r}"), 9, 10, T0 + r * 1_000_000_000));
    }
    let app = app_with(spans);
    key_and_frame(bencher, app, &[Action::Down, Action::Down, Action::Up]);
}
