//! The compare view over 10,000 × 10,000 cases: handling one key and drawing one frame into a
//! TestBackend. Target: under 16 ms per key+frame (issue 41). Each run is a root with one
//! tool call; A fails every 7th case, B every 5th, so every class has thousands of cases.

use divan::Bencher;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolcap::model::{Batch, Case, EvalVerdict, Payload, Provenance, Span, SpanKind, ToolFacts};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::compare::keys::Action;
use toolcap::tui::compare::render::render;
use toolcap::tui::compare::{CompareState, update};
use toolcap::tui::config;
use toolcap::views::compare::{KeyRule, compare};

fn main() {
    divan::main();
}

const CASES: usize = 10_000;
const T0: u64 = 1_764_496_800_000_000_000;

/// One side: `CASES` runs keyed `case-N`, the ones `fails` picks failing their evaluation.
fn side(name: &str, fails: impl Fn(usize) -> bool) -> &'static Store {
    let mut batch = Batch::default();
    for k in 0..CASES {
        let trace = format!("{name}{k:08}");
        let span = |id: &str, parent: Option<&str>, kind| Span {
            trace_id: trace.as_str().into(),
            span_id: id.into(),
            parent_span_id: parent.map(Into::into),
            name: format!("{kind:?} span").into(),
            kind,
            start_unix_nano: T0 + k as u64 * 1_000_000,
            end_unix_nano: T0 + k as u64 * 1_000_000 + 900_000,
            provenance: Provenance::shared(None, None, "bench".into()),
            ..Default::default()
        };
        batch.spans.push(span("root", None, SpanKind::Agent));
        let mut tool = span("tool", Some("root"), SpanKind::Tool);
        tool.set_tool(Some(Box::new(ToolFacts {
            name: Some("search".into()),
            call_id: Some(format!("call{k}").into()),
        })));
        tool.set_input(Payload::inline("args", r#"{"query":"weather in Oslo"}"#).into());
        batch.spans.push(tool);
        batch.cases.push((
            trace.clone(),
            Case {
                id: format!("case-{k:05}"),
                index: 1,
                index_is_repeat: false,
                task: None,
            },
        ));
        batch.evals.push((
            trace,
            EvalVerdict {
                passed: !fails(k),
                label: if fails(k) { "wrong" } else { "right" }.into(),
                ..EvalVerdict::default()
            },
        ));
    }
    let mut store = Store::new();
    store.ingest(batch);
    Box::leak(Box::new(store))
}

fn state() -> CompareState {
    let a = side("a", |k| k % 7 == 0);
    let b = side("b", |k| k % 5 == 0);
    let comparison = compare(a, b, &KeyRule::Case, Reveal::Revealed);
    let mut state = CompareState::new(
        comparison,
        [a, b],
        ["a".into(), "b".into()],
        KeyRule::Case,
        Reveal::Redacted,
        config::from_toml("", false),
    );
    update(
        &mut state,
        Action::Resize {
            width: 160,
            height: 48,
        },
    );
    state
}

fn key_and_frame(bencher: Bencher, keys: &[Action]) {
    let mut state = state();
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
    let mut i = 0;
    bencher.bench_local(|| {
        update(&mut state, keys[i % keys.len()]);
        i += 1;
        terminal.draw(|frame| render(frame, &state)).expect("draw");
    });
}

/// Moving down the list: each key selects another case, whose detail is built.
#[divan::bench(sample_count = 50)]
fn cases_10k_by_10k_move(bencher: Bencher) {
    key_and_frame(bencher, &[Action::Down]);
}

/// `n`: the next newly failing case, thousands of rows apart.
#[divan::bench(sample_count = 50)]
fn cases_10k_by_10k_next_newly_failing(bencher: Bencher) {
    key_and_frame(bencher, &[Action::NextNewlyFailing]);
}

/// Tab through the classes and `r`: the whole screen's texts masked again.
#[divan::bench(sample_count = 50)]
fn cases_10k_by_10k_group_and_reveal(bencher: Bencher) {
    key_and_frame(bencher, &[Action::NextGroup, Action::ToggleReveal]);
}
