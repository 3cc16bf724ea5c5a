//! The fixed sizes every run and span pays, and the blocks they hold only while they need them.

use super::*;

fn span(trace: &str, id: &str, parent: Option<&str>, start: u64) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        start_unix_nano: start,
        end_unix_nano: start + 1,
        ..Span::default()
    }
}

/// Every run and every span pays these fixed sizes, so growth is a regression even when no
/// test notices it: raise a bound only on purpose.
#[test]
fn fixed_sizes_of_runs_and_spans_stay_small() {
    use std::mem::size_of;
    let sizes = [
        // 264: with its `Arc`'s counts, a 304-byte block. The search index's once-cell adds
        // a word, so the TUI can build indexes after listing runs (`Indexing::Later`).
        ("Invocation", size_of::<Invocation>(), 264),
        ("Span", size_of::<Span>(), 88),
        // 72: an 80-byte block, paid only by a span with an error, events, an identity or a
        // payload that is not an attribute.
        ("SpanExtras", size_of::<crate::model::SpanExtras>(), 72),
        ("Summary", size_of::<Summary>(), 136),
        ("ToolCallRef", size_of::<ToolCallRef>(), 8),
        ("TreeRow", size_of::<TreeRow>(), 16),
        ("AttrValue", size_of::<crate::model::AttrValue>(), 16),
        (
            "attribute",
            size_of::<(crate::model::ArcStr, crate::model::AttrValue)>(),
            24,
        ),
        ("Payload", size_of::<crate::model::Payload>(), 56),
        // 72: with the allocator's word it is an 80-byte block (an LLM span's facts, its one
        // requested call included).
        ("LlmFacts", size_of::<crate::model::LlmFacts>(), 72),
        // 24: a 32-byte block; a graph node's part is out of line.
        ("Identity", size_of::<crate::model::Identity>(), 24),
        // 16: a 32-byte block (the requesting LLM span is looked up, not kept in each call).
        ("ToolFacts", size_of::<crate::model::ToolFacts>(), 16),
    ];
    for (name, size, bound) in sizes {
        assert!(
            size <= bound,
            "{name} is {size} bytes, over its bound of {bound}"
        );
    }
}

/// Every run and span pays these sizes whatever it holds, and a big load has tens of thousands
/// of runs of a few spans each: a field added here costs that many times over (`dump --stats`
/// shows the rows).
#[test]
fn a_run_and_a_span_stay_small() {
    use std::mem::size_of;
    const WORD: usize = size_of::<usize>();
    // By design: each of the tree's four per-run lists is one word; the search index is its
    // one list, its span count and last span's start (one word together), and its vocabulary
    // pointer, and its once-cell one word more.
    assert_eq!(size_of::<Tree>(), 4 * WORD);
    assert_eq!(size_of::<search_index::SearchIndex>(), 3 * WORD);
    assert_eq!(size_of::<OnceLock<search_index::SearchIndex>>(), 4 * WORD);
}

/// A run holds its rare parts (verdict, gold, name, growth's lookups) in one block only while it
/// has one of them: a settled small run without any holds none.
#[test]
fn a_run_holds_its_extras_only_while_it_has_some() {
    let mut store = Store::new();
    let mut batch = Batch::default();
    batch.spans.push(span("a", "root", None, 1));
    batch.spans.push(span("a", "child", Some("root"), 2));
    batch.spans.push(span("b", "orphan", Some("missing"), 3));
    store.apply(batch);
    store.settle();
    for id in ["a", "b"] {
        let run = store.get(id).unwrap();
        assert!(run.extras.is_none(), "{id}: growth's lookups were let go");
        assert_eq!(run.eval(), None);
    }
    let mut verdict = Batch::default();
    let failed = EvalVerdict {
        label: "fail".into(),
        ..EvalVerdict::default()
    };
    verdict.evals.push(("a".into(), failed.clone()));
    store.apply(verdict);
    store.settle();
    assert_eq!(store.get("a").unwrap().eval(), Some(&failed));
    let run = Arc::make_mut(store.invocations.get_mut(&Id::from("a")).unwrap());
    run.set_eval(None);
    assert!(run.extras.is_none(), "cleared, the block goes");
}
