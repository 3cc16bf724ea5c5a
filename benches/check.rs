//! `check` over 10,000 invocations whose golds have 10 calls each.
//! Per-trace time = reported time / 10,000. Compare it with toolscore's in-process
//! `evaluate_trace` (its figure is in docs/PERFORMANCE.md).

use std::sync::Arc;

use divan::Bencher;
use serde_json::json;
use toolcap::gold::check::check_store;
use toolcap::gold::report::{CheckOptions, DiffReport};
use toolcap::gold::source::GoldFile;
use toolcap::gold::{ActualCall, Args, GoldCall, GoldSpec};
use toolcap::model::{Batch, Payload, Span, SpanKind, SpanStatus, ToolFacts};
use toolcap::store::{Budget, Store};

const INVOCATIONS: usize = 10_000;
const CALLS: usize = 10;

fn main() {
    divan::main();
}

fn call_args(i: usize, variant: usize) -> Args {
    let value = json!({
        "id": format!("item-{i}"),
        "limit": 10 + i,
        "filters": {"tag": "x", "prio": if variant % 7 == i { 2 } else { 1 }},
    });
    value.as_object().cloned().unwrap_or_default()
}

fn gold() -> GoldSpec {
    GoldSpec {
        calls: (0..CALLS)
            .map(|i| GoldCall {
                tool: format!("tool_{}", i % 6),
                args: Some(call_args(i, usize::MAX)),
                ..GoldCall::default()
            })
            .collect(),
        source: "bench".into(),
        ..GoldSpec::default()
    }
}

/// An actual run that differs from the gold a little: a swap, a changed leaf, a failure, an
/// extra call or a missing one depending on `variant`.
fn actual(variant: usize) -> Vec<ActualCall> {
    let mut calls: Vec<ActualCall> = (0..CALLS)
        .map(|i| ActualCall::new(format!("tool_{}", i % 6), call_args(i, variant)))
        .collect();
    match variant % 4 {
        0 => calls.swap(2, 5),
        1 => calls[3].failed = true,
        2 => calls.push(ActualCall::new("extra_tool", Args::new())),
        _ => {
            calls.remove(8);
        }
    }
    calls
}

#[divan::bench(sample_count = 10)]
fn engine_10k_invocations(bencher: Bencher) {
    let gold = Arc::new(gold());
    let runs: Vec<Vec<ActualCall>> = (0..INVOCATIONS).map(actual).collect();
    bencher.bench(|| {
        runs.iter()
            .map(|run| DiffReport::build("inv", gold.clone(), run.clone(), CheckOptions::default()))
            .filter(|r| r.passed())
            .count()
    });
}

#[divan::bench(sample_count = 100, sample_size = 100)]
fn engine_one_3_call_trace(bencher: Bencher) {
    let gold = Arc::new(GoldSpec {
        calls: gold().calls.into_iter().take(3).collect(),
        ..GoldSpec::default()
    });
    let run: Vec<ActualCall> = actual(1).into_iter().take(3).collect();
    bencher.bench(|| {
        DiffReport::build("inv", gold.clone(), run.clone(), CheckOptions::default()).passed()
    });
}

fn store() -> Store {
    let mut batch = Batch::default();
    for inv in 0..INVOCATIONS {
        for (i, call) in actual(inv).into_iter().enumerate() {
            let args = serde_json::to_string(&call.args).unwrap_or_default();
            batch.spans.push(Span {
                trace_id: format!("trace-{inv}").into(),
                span_id: format!("span-{inv}-{i}").into(),
                name: call.name.as_str().into(),
                kind: SpanKind::Tool,
                status: if call.failed {
                    SpanStatus::Error
                } else {
                    SpanStatus::Ok
                },
                start_unix_nano: 1_000 + i as u64,
                end_unix_nano: 2_000 + i as u64,
                facts: toolcap::model::KindFacts::from(Box::new(ToolFacts {
                    name: Some(call.name.into()),
                    ..ToolFacts::default()
                })),
                extras: toolcap::model::SpanExtras {
                    input: Payload::inline("gen_ai.tool.call.arguments", args).into(),
                    ..Default::default()
                }
                .into(),
                provenance: toolcap::model::Provenance::shared(None, None, "bench".into()),
                ..Span::default()
            });
        }
    }
    let mut store = Store::with_budget(Budget::default());
    store.ingest(batch);
    store
}

#[divan::bench(sample_count = 10)]
fn check_store_10k_invocations(bencher: Bencher) {
    let store = store();
    assert_eq!(store.len(), INVOCATIONS);
    let gold = GoldFile::Shared(gold());
    bencher.bench(|| {
        let mut problems = Vec::new();
        check_store(&store, Some(&gold), CheckOptions::default(), &mut problems).len()
    });
}
