//! Incremental trees: spans joining a run batch by batch, in any arrival order, give exactly
//! the tree, health and roll-ups of the same spans built from scratch.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use toolcap::model::{
    AttrValue, Batch, EVALUATOR_ATTR, Id, LlmFacts, RequestedToolCall, Span, SpanKind, SpanStatus,
    ToolFacts,
};
use toolcap::store::{Invocation, Store};

#[derive(Debug, Clone)]
struct Plan {
    /// Parent of span i: an earlier span, a span that never arrives, or none.
    parent: Vec<Option<Result<usize, u8>>>,
    kind: Vec<u8>,
    failed: Vec<bool>,
    start: Vec<u8>,
    order: Vec<usize>,
    cuts: Vec<usize>,
}

fn plan() -> impl Strategy<Value = Plan> {
    (1usize..60).prop_flat_map(|n| {
        (
            proptest::collection::vec(
                prop_oneof![
                    1 => Just(None),
                    1 => (0u8..3).prop_map(|m| Some(Err(m))),
                    8 => (0usize..1000).prop_map(|p| Some(Ok(p))),
                ],
                n,
            ),
            proptest::collection::vec(0u8..4, n),
            proptest::collection::vec(proptest::bool::weighted(0.15), n),
            proptest::collection::vec(0u8..20, n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            proptest::collection::vec(1usize..8, 0..20),
        )
            .prop_map(move |(parent, kind, failed, start, order, cuts)| Plan {
                parent: parent
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| match p {
                        Some(Ok(_)) if i == 0 => None,
                        Some(Ok(x)) => Some(Ok(x % i)),
                        other => other,
                    })
                    .collect(),
                kind,
                failed,
                start,
                order,
                cuts,
            })
    })
}

fn spans_of(plan: &Plan) -> Vec<Span> {
    (0..plan.parent.len())
        .map(|i| {
            let mut span = Span {
                trace_id: "t".into(),
                span_id: format!("s{i}").into(),
                parent_span_id: plan.parent[i].map(|p| match p {
                    Ok(p) => format!("s{p}").into(),
                    Err(m) => format!("missing{m}").into(),
                }),
                name: format!("span {i}").into(),
                start_unix_nano: 1_000 + plan.start[i] as u64,
                end_unix_nano: 1_000 + plan.start[i] as u64 + i as u64,
                status: if plan.failed[i] {
                    SpanStatus::Error
                } else {
                    SpanStatus::Ok
                },
                provenance: toolcap::model::Provenance::shared(
                    None,
                    None,
                    if i % 7 == 0 { "other" } else { "test" }.into(),
                ),
                ..Default::default()
            };
            match plan.kind[i] {
                0 => {
                    span.kind = SpanKind::Llm;
                    span.set_llm(Some(Box::new(LlmFacts {
                        input_tokens: Some(i as u32).into(),
                        requested_tool_calls: vec![RequestedToolCall {
                            id: Some(format!("call{}", i % 5).into()),
                            name: "lookup".into(),
                        }]
                        .into(),
                        ..Default::default()
                    })));
                }
                1 => {
                    span.kind = SpanKind::Tool;
                    span.set_tool(Some(Box::new(ToolFacts {
                        name: Some("lookup".into()),
                        call_id: Some(format!("call{}", i % 5).into()),
                    })));
                }
                2 => span.kind = SpanKind::Node,
                _ if i % 2 == 0 => {
                    // An evaluator's verdict: its failure is not the run's.
                    span.attributes
                        .push((EVALUATOR_ATTR.into(), AttrValue::Bool(true)));
                }
                _ => {}
            }
            span
        })
        .collect()
}

fn ingest(store: &mut Store, spans: Vec<Span>) {
    store.ingest(Batch {
        spans,
        ..Default::default()
    });
}

fn assert_same(grown: &Invocation, built: &Invocation) {
    let (g, b) = (grown.tree(), built.tree());
    assert_eq!(g.rows, b.rows);
    // Each span's place: health, children, row and parent.
    let places = |tree: &toolcap::store::Tree| -> Vec<_> {
        (0..tree.span_count())
            .map(|i| {
                let children: Vec<usize> = tree.children_of(i).collect();
                (tree.health(i), children, tree.row_of(i), tree.parent_of(i))
            })
            .collect()
    };
    assert_eq!(g.span_count(), grown.spans.len());
    assert_eq!(places(&g), places(&b));
    assert_eq!(g.roots, b.roots);
    assert_eq!(grown.summary(), built.summary());
    let links = |inv: &Invocation| -> Vec<Option<Id>> {
        (0..inv.spans.len())
            .map(|i| inv.requester_of(i).map(|r| inv.spans[r].span_id.id()))
            .collect()
    };
    assert_eq!(links(grown), links(built));
}

/// Saves failing cases beside this file (`store_incremental.proptest-regressions`): proptest's
/// default looks for the nearest `main.rs` and would use `tests/proptest-regressions/` instead.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn incremental_tree_equals_the_tree_built_from_scratch(plan in plan()) {
        let spans = spans_of(&plan);
        let arrived: Vec<Span> = plan.order.iter().map(|&i| spans[i].clone()).collect();
        let mut grown = Store::keeping_every_tree();
        // A default store drops a small run's tree after each settle and rebuilds it.
        let mut dropped = Store::new();
        let mut rest = arrived.as_slice();
        let mut cuts = plan.cuts.iter().cycle();
        while !rest.is_empty() {
            let take = (*cuts.next().unwrap_or(&1)).min(rest.len());
            ingest(&mut grown, rest[..take].to_vec());
            ingest(&mut dropped, rest[..take].to_vec());
            rest = &rest[take..];
            // Every intermediate state equals a from-scratch build of what has arrived.
            let so_far = arrived.len() - rest.len();
            let mut built = Store::new();
            ingest(&mut built, arrived[..so_far].to_vec());
            assert_same(grown.get("t").unwrap(), built.get("t").unwrap());
            assert_same(dropped.get("t").unwrap(), built.get("t").unwrap());
        }
        // No rebuilds: every span was placed once (no cycles, replacements or stand-ins here).
        prop_assert_eq!(grown.stats().tree_work, spans.len() as u64);
    }
}
