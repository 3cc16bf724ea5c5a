use super::*;
use crate::model::Origin;
use crate::model::{AttrValue, SpanStatus, ToolFacts};

fn span(trace: &str, id: &str, parent: Option<&str>, start: u64) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: format!("span {id}").into(),
        start_unix_nano: start,
        end_unix_nano: start + 10,
        provenance: crate::model::Provenance::shared(None, None, "test".into()),
        ..Default::default()
    }
}

/// The origin of spans read from the file `name`.
fn origin(name: &str) -> Option<Arc<Origin>> {
    Some(Arc::new(Origin::File(Arc::new(name.into()))))
}

fn ingest(store: &mut Store, spans: Vec<Span>) {
    store.ingest(Batch {
        spans,
        ..Default::default()
    });
}

#[test]
fn orphans_reattach_when_their_parent_arrives() {
    let mut store = Store::new();
    ingest(&mut store, vec![span("t", "child", Some("root"), 5)]);
    let inv = store.get("t").unwrap();
    assert!(inv.tree().rows[0].orphan);
    ingest(&mut store, vec![span("t", "root", None, 1)]);
    let inv = store.get("t").unwrap();
    let rows = &inv.tree().rows;
    assert_eq!(rows.len(), 2);
    assert_eq!(inv.spans[rows[0].span()].span_id, "root");
    assert_eq!((rows[1].depth(), rows[1].orphan), (1, false));
}

#[test]
fn a_conversation_named_by_a_span_that_arrives_later_reaches_the_summary() {
    let mut store = Store::new();
    ingest(&mut store, vec![span("t", "child", Some("root"), 5)]);
    assert_eq!(store.get("t").unwrap().summary().conversation, None);
    // The root ends last, so an exporter sends it last: the run grows, it is not rebuilt.
    let mut root = span("t", "root", None, 1);
    root.attributes = vec![
        ("session.id".into(), AttrValue::Str("chat-7".into())),
        ("turn_index".into(), AttrValue::Int(2)),
    ]
    .into();
    ingest(&mut store, vec![root]);
    let summary = store.get("t").unwrap().summary();
    assert_eq!(summary.conversation.as_deref(), Some("chat-7"));
    assert_eq!(summary.turn, Some(2));
}

#[test]
fn a_run_grown_span_by_span_names_the_conversation_a_rebuild_names() {
    let named = |id: &str, start: u64, attributes: &[(&str, AttrValue)]| {
        let mut s = span("t", id, (id != "root").then_some("root"), start);
        s.attributes = attributes
            .iter()
            .map(|(k, v)| (ArcStr::from(*k), v.clone()))
            .collect();
        s
    };
    let text = |v: &str| AttrValue::Str(v.into());
    let spans = vec![
        named(
            "a",
            2,
            &[("session.id", text("s-1")), ("turn_index", text("x"))],
        ),
        named("b", 3, &[("session.id", text("s-2"))]),
        named("c", 4, &[("gen_ai.conversation.id", text(" "))]),
        named("d", 5, &[("arksim.turn_id", AttrValue::Int(4))]),
        named("root", 1, &[("gen_ai.conversation.id", text("g-1"))]),
        named("e", 6, &[("arksim.conversation_id", text("c-1"))]),
    ];
    let conversation = |store: &Store| {
        let summary = store.get("t").unwrap().summary();
        (summary.conversation.clone(), summary.turn)
    };
    let mut whole = Store::new();
    ingest(&mut whole, spans.clone());
    for upto in 1..spans.len() {
        let mut at_once = Store::new();
        ingest(&mut at_once, spans[..upto].to_vec());
        let mut grown = Store::new();
        for span in &spans[..upto] {
            ingest(&mut grown, vec![span.clone()]);
        }
        assert_eq!(conversation(&grown), conversation(&at_once), "first {upto}");
    }
    let mut grown = Store::new();
    for span in &spans {
        ingest(&mut grown, vec![span.clone()]);
    }
    assert_eq!(conversation(&grown), conversation(&whole));
    assert_eq!(conversation(&whole), (Some("c-1".into()), Some(4)));
}

#[test]
fn cycles_and_self_parents_terminate_and_count_once() {
    let mut store = Store::new();
    ingest(
        &mut store,
        vec![
            span("t", "a", Some("b"), 1),
            span("t", "b", Some("a"), 2),
            span("t", "self", Some("self"), 3),
        ],
    );
    let inv = store.get("t").unwrap();
    assert_eq!(inv.tree().rows.len(), 3);
    assert_eq!(inv.summary().counts.spans, 3);
    // Cycles are cycles, not missing parents.
    assert!(inv.tree().rows.iter().all(|r| r.cycle && !r.orphan));
    assert_eq!(inv.tree().cycles.len(), 2);
    let problems: Vec<&str> = store
        .problems()
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.contains("a → b → a")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("self → self")),
        "{problems:?}"
    );
    // Settling again does not report them again.
    ingest(&mut store, vec![span("t", "late", Some("a"), 9)]);
    assert_eq!(store.problems().len(), 2);
    let inv = store.get("t").unwrap();
    let late = inv.span_by_id("late").unwrap();
    let row = inv.tree().rows[inv.tree().row_of(late).unwrap()];
    assert!(
        !row.cycle && row.depth() > 0,
        "hangs under the cycle: {row:?}"
    );
}

#[test]
fn a_cycle_closed_by_a_late_span_is_found() {
    let mut store = Store::new();
    ingest(
        &mut store,
        vec![span("t", "b", Some("a"), 2), span("t", "c", Some("b"), 3)],
    );
    ingest(&mut store, vec![span("t", "a", Some("c"), 1)]);
    let inv = store.get("t").unwrap();
    assert!(inv.tree().rows.iter().all(|r| r.cycle));
    assert_eq!(inv.spans[inv.tree().rows[0].span()].span_id, "a");
    assert_eq!(store.problems().len(), 1);
    assert!(
        store.problems()[0].message.contains("a → c → b → a"),
        "{:?}",
        store.problems()
    );
}

#[test]
fn a_conflicting_duplicate_keeps_the_failure_and_names_both_sources() {
    let origin = |name: &str| {
        Some(std::sync::Arc::new(Origin::File(std::sync::Arc::new(
            name.into(),
        ))))
    };
    for failing_first in [false, true] {
        let mut store = Store::new();
        let mut ok = span("t", "a", None, 1);
        ok.set_origin(origin("first.jsonl"));
        ok.line = crate::model::LineNumber::new(3);
        let mut failed = ok.clone();
        failed.status = SpanStatus::Error;
        failed.set_origin(origin("second.jsonl"));
        failed.line = crate::model::LineNumber::new(7);
        let (one, two) = if failing_first {
            (failed, ok)
        } else {
            (ok, failed)
        };
        ingest(&mut store, vec![one]);
        ingest(&mut store, vec![two]);
        let inv = store.get("t").unwrap();
        assert_eq!(inv.spans.len(), 1);
        assert!(inv.spans[0].status.is_error(), "the failure is kept");
        assert_eq!(inv.summary().health, Health::Error);
        let problems = store.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].severity, crate::model::Severity::Warning);
        let message = &problems[0].message;
        assert!(
            message.contains("first.jsonl:3") && message.contains("second.jsonl:7"),
            "{message}"
        );
        assert!(
            message.contains("kept the copy from second.jsonl:7"),
            "{message}"
        );
    }
    // An identical copy is just a duplicate: counted, not reported.
    let mut store = Store::new();
    ingest(&mut store, vec![span("t", "a", None, 1)]);
    ingest(&mut store, vec![span("t", "a", None, 1)]);
    assert!(store.problems().is_empty());
    assert_eq!(store.stats().duplicate_spans, 1);
}

/// Tree work of a run fed one span per settle: rebuilt whole while it is small (its tree is
/// not kept), then one span placed per settle.
fn one_by_one_work(spans: u64) -> u64 {
    let small = SMALL_RUN_SPANS as u64 + 1;
    let rebuilt = spans.min(small);
    rebuilt * (rebuilt + 1) / 2 + spans.saturating_sub(small)
}

/// Spans of one run delivered one per batch, settled after each (a live source or a
/// trace split over many files): once the run keeps its tree, each settle places only the
/// new span; before, it rebuilds at most a small run's spans.
#[test]
fn tree_work_is_linear_however_a_run_is_split() {
    let spans: Vec<Span> = (0..2_000)
        .map(|i| {
            let parent = (i > 0).then(|| format!("s{}", (i - 1) / 3));
            span("t", &format!("s{i}"), parent.as_deref(), 10 + i as u64)
        })
        .collect();
    let mut one_by_one = Store::new();
    let mut kept = Store::keeping_every_tree();
    for s in spans.iter().cloned() {
        ingest(&mut one_by_one, vec![s.clone()]);
        ingest(&mut kept, vec![s]);
    }
    let mut at_once = Store::new();
    ingest(&mut at_once, spans.clone());
    assert_eq!(at_once.stats().tree_work, 2_000);
    assert_eq!(kept.stats().tree_work, 2_000);
    assert_eq!(one_by_one.stats().tree_work, one_by_one_work(2_000));
    let (a, b) = (one_by_one.get("t").unwrap(), at_once.get("t").unwrap());
    assert_eq!(a.tree().rows, b.tree().rows);
    assert_eq!(kept.get("t").unwrap().tree().rows, b.tree().rows);
    // Children before parents cost the same.
    let mut reversed = Store::new();
    let mut reversed_kept = Store::keeping_every_tree();
    for s in spans.iter().rev().cloned() {
        ingest(&mut reversed, vec![s.clone()]);
        ingest(&mut reversed_kept, vec![s]);
    }
    assert_eq!(reversed.stats().tree_work, one_by_one_work(2_000));
    assert_eq!(reversed_kept.stats().tree_work, 2_000);
    let c = reversed.get("t").unwrap();
    let ids = |inv: &Invocation| -> Vec<String> {
        inv.tree()
            .rows
            .iter()
            .map(|r| inv.spans[r.span()].span_id.to_string())
            .collect()
    };
    assert_eq!(ids(c), ids(b));
}

#[test]
fn duplicate_span_ids_are_counted_not_stored() {
    let mut store = Store::new();
    ingest(
        &mut store,
        vec![span("t", "a", None, 1), span("t", "a", None, 1)],
    );
    assert_eq!(store.get("t").unwrap().spans.len(), 1);
    assert_eq!(store.stats().duplicate_spans, 1);
}

#[test]
fn failed_child_degrades_parent_and_invocation() {
    let mut store = Store::new();
    let mut tool = span("t", "tool", Some("node"), 3);
    tool.kind = SpanKind::Tool;
    tool.status = SpanStatus::Error;
    tool.set_tool(Some(Box::new(ToolFacts {
        name: Some("search".into()),
        ..Default::default()
    })));
    ingest(
        &mut store,
        vec![
            span("t", "root", None, 1),
            span("t", "node", Some("root"), 2),
            tool,
        ],
    );
    let inv = store.get("t").unwrap();
    let health = |id: &str| inv.health_of(inv.span_by_id(id).unwrap());
    assert_eq!(health("tool"), Health::Error);
    assert_eq!(health("node"), Health::Degraded);
    assert_eq!(health("root"), Health::Degraded);
    assert_eq!(inv.summary().health, Health::Degraded);
    assert_eq!(inv.summary().failed_tool_calls, 1);
    assert_eq!(inv.summary().tool_calls[0].name(&inv.spans), "search");
}

#[test]
fn failed_root_makes_the_invocation_an_error() {
    let mut store = Store::new();
    let mut root = span("t", "root", None, 1);
    root.status = SpanStatus::Error;
    ingest(&mut store, vec![root]);
    assert_eq!(store.get("t").unwrap().summary().health, Health::Error);
}

#[test]
fn deep_chains_do_not_overflow() {
    let mut store = Store::new();
    let mut spans = vec![span("t", "0", None, 0)];
    for i in 1..50_000u64 {
        spans.push(span("t", &i.to_string(), Some(&(i - 1).to_string()), i));
    }
    ingest(&mut store, spans);
    let inv = store.get("t").unwrap();
    assert_eq!(inv.tree().rows.last().unwrap().depth(), 49_999);
}

#[test]
fn applied_batches_settle_into_the_same_tree_as_ingested_ones() {
    let parts = || {
        vec![
            vec![span("t", "child", Some("root"), 5)],
            vec![span("t", "root", None, 1), span("u", "other", None, 2)],
        ]
    };
    let mut ingested = Store::new();
    for spans in parts() {
        ingest(&mut ingested, spans);
    }
    let mut applied = Store::new();
    for spans in parts() {
        applied.apply(Batch {
            spans,
            ..Default::default()
        });
    }
    let mut changed = applied.settle();
    changed.sort();
    assert_eq!(changed, ["t", "u"]);
    let rows = |store: &Store| {
        let inv = store.get("t").unwrap();
        inv.tree()
            .rows
            .iter()
            .map(|r| (inv.spans[r.span()].span_id.to_string(), r.depth(), r.orphan))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&applied), rows(&ingested));
    assert_eq!(rows(&applied)[1], ("child".to_string(), 1, false));
    assert!(applied.settle().is_empty(), "nothing left to settle");
}

#[test]
fn budget_evicts_oldest_first_and_says_so() {
    let mut store = Store::with_budget(Budget {
        max_invocations: Some(2),
        max_bytes: None,
    });
    for t in ["a", "b", "c"] {
        ingest(&mut store, vec![span(t, "root", None, 1)]);
    }
    assert!(store.get("a").is_none());
    assert!(store.get("c").is_some());
    assert_eq!(store.stats().invocations_evicted, 1);
    assert_eq!(store.stats().invocations_seen, 3);
    // Late spans of the evicted run are counted, not stored: it does not come back in part.
    ingest(
        &mut store,
        vec![
            span("a", "late1", Some("root"), 2),
            span("a", "late2", Some("root"), 3),
        ],
    );
    assert!(store.get("a").is_none());
    assert_eq!(store.stats().spans_evicted, 1 + 2);
    assert_eq!(store.stats().spans_seen, 3 + 2);
}

#[test]
fn aliases_join_spans_into_another_invocation() {
    let mut store = Store::new();
    ingest(&mut store, vec![span("agents-trace", "x", None, 1)]);
    store.ingest(Batch {
        aliases: vec![("agents-trace".into(), "turn-1".into())],
        ..Default::default()
    });
    assert!(store.get("agents-trace").is_none());
    assert_eq!(store.get("turn-1").unwrap().spans.len(), 1);
    ingest(&mut store, vec![span("agents-trace", "y", Some("x"), 2)]);
    assert_eq!(store.get("turn-1").unwrap().spans.len(), 2);
}

#[test]
fn changed_at_names_the_generation_of_each_runs_last_change() {
    let mut store = Store::new();
    ingest(
        &mut store,
        vec![span("a", "a1", None, 1), span("b", "b1", None, 2)],
    );
    let first = store.generation();
    assert_eq!(store.get("a").unwrap().changed_at(), first);
    assert_eq!(store.get("b").unwrap().changed_at(), first);
    ingest(&mut store, vec![span("b", "b2", Some("b1"), 3)]);
    assert_eq!(store.get("a").unwrap().changed_at(), first, "untouched");
    assert_eq!(store.get("b").unwrap().changed_at(), store.generation());
    // A duplicate changes nothing.
    ingest(&mut store, vec![span("a", "a1", None, 1)]);
    assert_eq!(store.get("a").unwrap().changed_at(), first);
}

#[test]
fn a_snapshot_held_elsewhere_keeps_its_version_while_the_store_changes() {
    let mut store = Store::new();
    ingest(&mut store, vec![span("a", "a1", None, 1)]);
    let snapshot: Vec<Arc<Invocation>> = store.shared_invocations().cloned().collect();
    ingest(&mut store, vec![span("a", "a2", Some("a1"), 2)]);
    assert_eq!(
        snapshot[0].spans.len(),
        1,
        "the snapshot is not mutated under its reader"
    );
    assert_eq!(store.get("a").unwrap().spans.len(), 2);
    assert_eq!(store.get("a").unwrap().summary().counts.spans, 2);
}

#[test]
fn runs_refreshed_on_every_core_equal_runs_refreshed_one_by_one() {
    let batch = || {
        let mut batch = crate::store::sample_runs::tool_runs(0, 3_000);
        // Cycles in some runs: their problems must come out in the same order either way.
        for r in (0..3_000).step_by(97) {
            let trace = format!("run{r:05}");
            batch.spans.push(span(&trace, "a", Some("b"), 5));
            batch.spans.push(span(&trace, "b", Some("a"), 6));
        }
        batch
    };
    let settled = |parallel_min_runs: usize| {
        let mut store = Store::new();
        store.apply(batch());
        let changed = store.settle_with(parallel_min_runs);
        let runs: Vec<String> = store
            .newest_first()
            .into_iter()
            .map(|inv| format!("{inv:?}"))
            .collect();
        let problems: Vec<String> = store.problems().iter().map(|p| p.to_string()).collect();
        (changed, runs, problems, store.stats().tree_work)
    };
    let one_by_one = settled(usize::MAX);
    let on_every_core = settled(0);
    assert_eq!(one_by_one.0.len(), 3_000);
    assert!(
        one_by_one.2.len() >= 30,
        "cycles reported: {:?}",
        one_by_one.2.len()
    );
    assert!(one_by_one == on_every_core);
}

fn apply_unsettled(store: &mut Store, spans: Vec<Span>) {
    store.apply(Batch {
        spans,
        ..Default::default()
    });
}

/// Capacity of run `trace`'s span vector after `apply`, before any settle trims it.
fn span_room(store: &Store, trace: &str) -> usize {
    store.invocations[&Id::from(trace)].spans.capacity()
}

#[test]
fn a_new_run_gets_room_for_exactly_its_spans_and_a_growing_run_grows_amortized() {
    let mut store = Store::new();
    apply_unsettled(
        &mut store,
        vec![
            span("a", "a1", None, 1),
            span("a", "a2", Some("a1"), 2),
            span("a", "a3", Some("a1"), 3),
            span("b", "b1", None, 4),
        ],
    );
    // Pushed one by one, three spans got room for four and one span room for four.
    assert_eq!((span_room(&store, "a"), span_room(&store, "b")), (3, 1));
    for n in 0..1000 {
        apply_unsettled(&mut store, vec![span("c", &format!("c{n}"), None, n)]);
    }
    // Doubling from one: growing to exactly 1000, batch by batch, would copy the run each time.
    assert_eq!(span_room(&store, "c"), 1024);
}

/// A tool call's requester is the first model call of the run that asked for its call id, the
/// same whether one span asks or the whole run is looked up at once.
#[test]
fn a_tool_call_is_requested_by_the_first_model_call_naming_its_id() {
    use crate::model::{LlmFacts, RequestedToolCall, ToolFacts};
    let asking = |id: &str, start: u64, call: &str| {
        let mut s = span("t", id, Some("root"), start);
        let mut llm = LlmFacts::default();
        llm.requested_tool_calls.push(RequestedToolCall {
            id: Some(call.into()),
            name: "lookup".into(),
        });
        s.set_llm(Some(Box::new(llm)));
        s
    };
    let tool = |id: &str, start: u64, call: &str| {
        let mut s = span("t", id, Some("root"), start);
        s.set_tool(Some(Box::new(ToolFacts {
            name: Some("lookup".into()),
            call_id: Some(call.into()),
        })));
        s
    };
    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![
            span("t", "root", None, 1),
            asking("first", 2, "c1"),
            tool("answer", 3, "c1"),
            asking("again", 4, "c1"),
            tool("unasked", 5, "c9"),
        ],
        ..Default::default()
    });
    let inv = store.get("t").unwrap();
    let index = |id: &str| inv.span_by_id(id).unwrap();
    let requesters = inv.tool_call_requesters();
    assert_eq!(inv.requester_of(index("answer")), Some(index("first")));
    assert_eq!(
        requesters.of(&inv.spans[index("answer")]),
        Some(index("first"))
    );
    assert_eq!(inv.requester_of(index("unasked")), None);
    assert_eq!(requesters.of(&inv.spans[index("unasked")]), None);
    assert_eq!(
        inv.requester_of(index("first")),
        None,
        "a model call requests, it is not requested"
    );
}

/// Newest first by start, runs that start together by id (text order, whatever form the ids
/// are held in); oldest first is the reverse.
#[test]
fn runs_are_ordered_by_start_then_id() {
    let mut store = Store::new();
    let runs = [
        ("conversation-2", 5),
        ("5b8efff798038103d269b633813fc60c", 5),
        ("conversation-10", 5),
        ("a", 9),
        ("0000000000000001", 1),
    ];
    let spans = runs
        .iter()
        .map(|(trace, start)| span(trace, "root", None, *start))
        .collect();
    ingest(&mut store, spans);
    let newest: Vec<String> = store
        .newest_first()
        .iter()
        .map(|run| run.id.to_string())
        .collect();
    assert_eq!(
        newest,
        [
            "a",
            "5b8efff798038103d269b633813fc60c",
            "conversation-10",
            "conversation-2",
            "0000000000000001"
        ]
    );
    let oldest: Vec<String> = store
        .oldest_first()
        .iter()
        .map(|run| run.id.to_string())
        .collect();
    assert_eq!(oldest, newest.iter().rev().cloned().collect::<Vec<_>>());
}

/// A store that indexes later lists its runs at once and builds their indexes in steps,
/// through the runs other holders share (nothing is copied), to the index settling builds.
#[test]
fn a_store_that_indexes_later_builds_the_same_indexes_in_steps() {
    let spans = || {
        (0..40)
            .map(|n| span(&format!("t{}", n % 8), &format!("s{n}"), None, n))
            .collect::<Vec<_>>()
    };
    let mut now = Store::new();
    ingest(&mut now, spans());
    let mut later = Store::new().indexing_later();
    ingest(&mut later, spans());
    let held: Vec<Arc<Invocation>> = later.invocations.values().cloned().collect();
    let needle = "span s1";
    let candidates = |store: &Store, id: &str| {
        let run = store.get(id).unwrap();
        run.search_index()
            .candidates(needle, search_index::Fields::all(), run.spans.len())
    };
    assert!(later.has_search_indexes_to_build());
    assert_eq!(
        candidates(&later, "t1"),
        Some((0..5).collect()),
        "before its index, every span of a run is a candidate"
    );
    let mut steps = 0;
    while later.build_search_indexes(10) {
        steps += 1;
    }
    assert!(steps >= 2, "40 spans in steps of 10 take several steps");
    assert!(!later.has_search_indexes_to_build());
    for id in (0..8).map(|n| format!("t{n}")) {
        assert_eq!(candidates(&later, &id), candidates(&now, &id), "run {id}");
    }
    assert_ne!(candidates(&later, "t1"), Some((0..5).collect()));
    for run in &held {
        let stored = later.invocations.get(&run.id).unwrap();
        assert!(Arc::ptr_eq(run, stored), "run {} was not copied", run.id);
    }
}

#[test]
fn a_store_that_never_indexes_has_no_indexes_to_build() {
    let mut store = Store::unindexed();
    ingest(&mut store, vec![span("t", "root", None, 1)]);
    assert!(!store.has_search_indexes_to_build());
    assert!(!store.build_search_indexes(usize::MAX));
    let run = store.get("t").unwrap();
    assert_eq!(run.search_index().heap_bytes(), 0);
}

/// A run rebuilt because a file it was read from went away waits for its index again.
#[test]
fn a_run_rebuilt_when_a_file_goes_waits_for_its_index_again() {
    let mut store = Store::new().indexing_later();
    let mut kept = span("t", "root", None, 1);
    kept.set_origin(origin("kept.jsonl"));
    let mut gone = span("t", "child", Some("root"), 2);
    gone.set_origin(origin("gone.jsonl"));
    ingest(&mut store, vec![kept, gone]);
    while store.build_search_indexes(usize::MAX) {}
    assert!(store.get("t").unwrap().search_index().heap_bytes() > 0);
    store.remove_origin(Path::new("gone.jsonl"));
    assert_eq!(store.get("t").unwrap().spans.len(), 1);
    assert!(store.has_search_indexes_to_build());
    store.build_search_indexes(usize::MAX);
    assert!(store.get("t").unwrap().search_index().heap_bytes() > 0);
}

/// A verdict that came with its run's own spans (an Inspect sample) is the file's: forgetting
/// the file takes the run along, so no run is left listed with a verdict of a file that no
/// longer says it. A verdict from a file of its own (arksim's evaluation, with its evaluation
/// span) stays while the spans' file is read again, and goes with its own file.
#[test]
fn a_verdict_goes_with_the_file_it_came_from() {
    let verdict = |passed| crate::model::EvalVerdict {
        passed,
        label: if passed { "C" } else { "I" }.into(),
        ..Default::default()
    };
    let mut store = Store::new();
    let mut sample = span("sample", "root", None, 1);
    sample.set_origin(origin("log.eval"));
    store.ingest(Batch {
        spans: vec![sample],
        evals: vec![("sample".into(), verdict(false))],
        ..Default::default()
    });
    let mut turn = span("turn", "root", None, 1);
    turn.set_origin(origin("simulation.json"));
    let mut evaluation = span("turn", "evaluation", Some("root"), 2);
    evaluation.set_origin(origin("evaluation.json"));
    ingest(&mut store, vec![turn]);
    store.ingest(Batch {
        spans: vec![evaluation],
        evals: vec![("turn".into(), verdict(false))],
        ..Default::default()
    });
    store.settle();
    assert_eq!(store.len(), 2);

    // The log rewritten with a new verdict: the old one goes with it, no disagreement.
    let mut rescored = span("sample", "root", None, 1);
    rescored.set_origin(origin("log.eval"));
    store.ingest(Batch {
        spans: vec![rescored],
        evals: vec![("sample".into(), verdict(true))],
        replaces: Some("log.eval".into()),
        ..Default::default()
    });
    store.settle();
    assert!(store.get("sample").unwrap().eval().unwrap().passed);
    assert!(store.problems().is_empty(), "{:?}", store.problems());
    store.remove_origin(Path::new("log.eval"));
    assert!(store.get("sample").is_none());

    store.remove_origin(Path::new("simulation.json"));
    let turn = store.get("turn").unwrap();
    assert_eq!(turn.spans.len(), 1);
    assert!(!turn.eval().unwrap().passed);
    store.remove_origin(Path::new("evaluation.json"));
    assert!(store.get("turn").is_none());
}

/// Views redraw when the generation moves: a settle with nothing taken in since the last one
/// leaves it, and any batch, even one that changes no run, moves it.
#[test]
fn a_settle_with_nothing_applied_keeps_the_generation() {
    let mut store = Store::new();
    apply_unsettled(&mut store, vec![span("a", "a1", None, 1)]);
    assert_eq!(store.settle(), vec![Id::from("a")]);
    let settled = store.generation();
    assert!(store.settle().is_empty());
    assert_eq!(store.generation(), settled, "nothing changed");
    store.apply(Batch {
        problems: vec![Problem::error("agent.jsonl", None, "not a trace")],
        ..Default::default()
    });
    assert!(store.settle().is_empty());
    assert!(
        store.generation() > settled,
        "a batch's problem is a change"
    );
}
