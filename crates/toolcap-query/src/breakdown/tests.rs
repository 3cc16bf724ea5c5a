use super::*;
use crate::model::{
    Batch, ErrorInfo, EvalVerdict, Provenance, Span, SpanKind, SpanStatus, ToolFacts,
};
use crate::query::{Context, NoGold, Query};
use crate::store::Store;

fn span(trace: &str, id: &str, parent: Option<&str>, start: u64) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: id.into(),
        kind: SpanKind::Other,
        start_unix_nano: start,
        end_unix_nano: start + 1_000_000,
        provenance: Provenance::shared(None, None, "test".into()),
        ..Default::default()
    }
}

fn tool_call(trace: &str, id: &str, tool: &str, error_type: Option<&str>) -> Span {
    let mut s = span(trace, id, Some("root"), 2);
    s.kind = SpanKind::Tool;
    s.set_tool(Some(Box::new(ToolFacts {
        name: Some(tool.into()),
        ..Default::default()
    })));
    if let Some(error_type) = error_type {
        s.status = SpanStatus::Error;
        s.set_error(Some(ErrorInfo {
            error_type: Some(error_type.into()),
            message: Some("failed".into()),
            message_is_result: false,
        }));
    }
    s
}

fn failed_verdict(label: &str, reason: &str) -> EvalVerdict {
    EvalVerdict {
        passed: false,
        score: Some(2.0),
        threshold: None,
        label: label.into(),
        reason: reason.into(),
        reason_quotes_output: false,
        scorers: Vec::new(),
        target: None,
        limit: None,
    }
}

/// Three runs: `a` fails by a tool error and the evaluator, `b` by the evaluator alone (another
/// spelling of the same label), `c` passes.
fn store() -> Store {
    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![
            span("a", "root", None, 1),
            tool_call("a", "t1", "lookup_order", Some("Timeout")),
            tool_call("a", "t2", "lookup_order", Some("Timeout")),
            tool_call("a", "t3", "get_weather", None),
            span("b", "root", None, 10),
            tool_call("b", "t1", "lookup_order", None),
            span("c", "root", None, 20),
        ],
        evals: vec![
            (
                "a".into(),
                failed_verdict("disobey user request", "[Tool call] it failed\nmore"),
            ),
            (
                "b".into(),
                failed_verdict("Disobey User Request", "[Tool call] it failed"),
            ),
        ],
        ..Default::default()
    });
    store
}

fn listed(store: &Store, query: &str) -> usize {
    let query = Query::parse(query).unwrap();
    store
        .invocations()
        .filter(|inv| query.matches(inv, &Context::default()).is_some())
        .count()
}

fn row<'a>(breakdown: &'a Breakdown, kind: TableKind, label: &str) -> &'a Row {
    let table = breakdown.table(kind).unwrap();
    table
        .rows
        .iter()
        .find(|r| r.label == label)
        .unwrap_or_else(|| panic!("{label} in {:?}", table.rows))
}

#[test]
fn a_run_failing_for_several_reasons_counts_in_each_row() {
    let store = store();
    let runs = store.oldest_first();
    let breakdown = Breakdown::of(&runs, &NoGold);
    assert_eq!((breakdown.listed, breakdown.failing), (3, 2));
    assert_eq!(row(&breakdown, TableKind::Facets, "degraded").runs, 1);
    assert_eq!(row(&breakdown, TableKind::Facets, "eval-failed").runs, 2);
    let labels = &breakdown.table(TableKind::EvaluatorLabels).unwrap().rows;
    assert_eq!(labels.len(), 1, "spellings of one label are one row");
    assert_eq!(labels[0].runs, 2);
    let tool = row(&breakdown, TableKind::Tools, "lookup_order");
    assert_eq!(
        (tool.calls, tool.failed_calls, tool.runs),
        (Some(3), Some(2), 1)
    );
    assert_eq!(tool.error_rate(), Some(2.0 / 3.0));
    let weather = row(&breakdown, TableKind::Tools, "get_weather");
    assert_eq!((weather.calls, weather.failed_calls), (Some(1), Some(0)));
    let typed = row(&breakdown, TableKind::ToolErrors, "lookup_order · Timeout");
    assert_eq!((typed.failed_calls, typed.runs), (Some(2), 1));
    assert_eq!(row(&breakdown, TableKind::ErrorTypes, "Timeout").runs, 1);
    assert_eq!(
        row(&breakdown, TableKind::Reasons, "[Tool call] it failed").runs,
        2,
        "grouped by the first line"
    );
    for row in breakdown.tables.iter().flat_map(|t| &t.rows) {
        let query = row.query.as_deref().expect("every row here is filterable");
        assert_eq!(listed(&store, query), row.runs, "{query}");
    }
}

#[test]
fn values_with_quotes_and_backslashes_are_spelled_back_exactly() {
    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![span("q", "root", None, 1)],
        evals: vec![("q".into(), failed_verdict(r#"said "no" \ twice"#, "r"))],
        ..Default::default()
    });
    let runs = store.oldest_first();
    let breakdown = Breakdown::of(&runs, &NoGold);
    let label = &breakdown.table(TableKind::EvaluatorLabels).unwrap().rows[0];
    let query = label.query.as_deref().unwrap();
    assert_eq!(query, r#"is:eval-failed eval:"said \"no\" \\ twice""#);
    assert_eq!(listed(&store, query), 1);
}

#[test]
fn a_row_whose_query_would_show_masked_text_is_not_filterable() {
    let mut store = Store::new();
    let planted = "leaked sk-proj-abcdefghijklmnop1234567890 to alice@example.com";
    store.ingest(Batch {
        spans: vec![span("s", "root", None, 1)],
        evals: vec![("s".into(), failed_verdict("disobey", planted))],
        ..Default::default()
    });
    let runs = store.oldest_first();
    let breakdown = Breakdown::of(&runs, &NoGold);
    let reason = &breakdown.table(TableKind::Reasons).unwrap().rows[0];
    assert_eq!(reason.runs, 1, "still counted");
    assert_eq!(reason.query, None, "a query would carry the secret");
    let label = &breakdown.table(TableKind::EvaluatorLabels).unwrap().rows[0];
    assert!(label.query.is_some());
}

#[test]
fn bins_cover_every_run_and_their_queries_list_them() {
    let store = store();
    let runs = store.oldest_first();
    let breakdown = Breakdown::of(&runs, &NoGold);
    for distribution in &breakdown.distributions {
        let total: usize = distribution.bins.iter().map(|b| b.runs).sum();
        let expected = match distribution.measure {
            Measure::Score => 2,
            _ => 3,
        };
        assert_eq!(total, expected, "{:?}", distribution.measure);
        for bin in &distribution.bins {
            assert_eq!(listed(&store, bin.query.as_deref().unwrap()), bin.runs);
        }
    }
    assert_eq!(breakdown.failures_over_time.iter().sum::<u64>(), 2);
    assert_eq!(breakdown.failures_over_time.len(), TIME_BUCKETS);
}

/// Runs within a factor of ten of each other (an eval's samples) are cut into equal steps of
/// 1, 2 or 5 times a power of ten, a few bars rather than one; runs spread wider take the
/// 1-2-5 series; every edge is exact, so its query spells it.
#[test]
fn a_narrow_spread_of_runs_is_cut_into_a_few_equal_nice_steps() {
    let samples = [183.6, 212.0, 240.2, 184.1, 204.9];
    let edges = edges_over(&samples, &LATENCY_EDGES_MS);
    assert_eq!(
        edges,
        [180.0, 190.0, 200.0, 210.0, 220.0, 230.0, 240.0, 250.0]
    );
    let rows = bins(Measure::Latency, &samples, &edges);
    assert!(rows.len() >= 4 && rows.len() <= 9, "{rows:?}");
    assert_eq!(rows.iter().map(|r| r.runs).sum::<usize>(), samples.len());
    assert_eq!(rows[0].label, "180ms – 190ms");
    assert_eq!(rows[0].query.as_deref(), Some("dur>=180 dur<190"));

    let small = edges_over(&[0.21, 0.25, 0.33], &LATENCY_EDGES_MS);
    assert!(small.iter().all(|e| format!("{e}").len() <= 5), "{small:?}");
    assert!(small.len() <= 10);

    // Wider than a factor of ten, all equal, or nothing above zero: the fixed series.
    for spread in [&[50.0, 2_000.0][..], &[120.0, 120.0], &[0.0, 0.0]] {
        assert_eq!(edges_over(spread, &LATENCY_EDGES_MS), LATENCY_EDGES_MS);
    }
    let tokens = edges_over(&[620.0, 653.0, 274.0, 648.0], &TOKEN_EDGES);
    assert_eq!(tokens.first(), Some(&250.0));
    assert!(tokens.windows(2).all(|pair| pair[1] - pair[0] == 50.0));
}

#[test]
fn an_empty_list_has_zero_counts_and_no_tables_to_fill() {
    let breakdown = Breakdown::of(&[], &NoGold);
    assert_eq!((breakdown.listed, breakdown.failing), (0, 0));
    assert_eq!(breakdown.tables.len(), 1);
    assert!(breakdown.tables[0].rows.iter().all(|r| r.runs == 0));
    assert!(breakdown.distributions.iter().all(|d| d.bins.is_empty()));
}

#[test]
fn tallies_of_stretches_merged_in_order_give_the_one_pass_result() {
    let mut store = Store::new();
    let mut batch = Batch::default();
    for r in 0..60 {
        let trace = format!("run{r:02}");
        batch.spans.push(span(&trace, "root", None, 1 + r));
        let error = (r % 3 == 0).then_some(if r % 2 == 0 { "Timeout" } else { "timeout" });
        let tool = if r % 4 == 0 { "Lookup" } else { "lookup" };
        batch.spans.push(tool_call(&trace, "t", tool, error));
        if r % 5 != 0 {
            let label = ["Disobey", "disobey", "false info"][(r % 3) as usize];
            batch
                .evals
                .push((trace.clone(), failed_verdict(label, "why")));
        }
        batch.cases.push((
            trace,
            crate::model::Case {
                id: format!("case-{}", r % 7),
                index: 0,
                index_is_repeat: false,
                task: None,
            },
        ));
    }
    store.ingest(batch);
    let runs = store.oldest_first();
    let whole = Breakdown::from_tally(Tally::of(&runs, 0, &NoGold), runs.len());
    for stretch in [1, 7, 25] {
        let merged = runs
            .chunks(stretch)
            .enumerate()
            .map(|(i, chunk)| Tally::of(chunk, i * stretch, &NoGold))
            .reduce(Tally::merge)
            .unwrap();
        let merged = Breakdown::from_tally(merged, runs.len());
        assert_eq!(merged, whole, "stretches of {stretch}");
    }
    assert_eq!(Breakdown::of(&runs, &NoGold), whole);
    let tool = &whole.table(TableKind::Tools).unwrap().rows[0];
    assert_eq!((tool.label.as_str(), tool.calls), ("Lookup", Some(60)));
}

/// Two Inspect tasks whose samples share ids: a case row is its task's (`task · id`), and its
/// query lists exactly its runs; one task alone keeps the plain ids.
#[test]
fn cases_of_two_tasks_are_rows_of_their_own() {
    let runs_of = |tasks: &[&str]| {
        let mut store = Store::new();
        let mut batch = Batch::default();
        for (r, task) in tasks.iter().enumerate() {
            let trace = format!("run{r:02}");
            batch.spans.push(span(&trace, "root", None, 1 + r as u64));
            batch
                .evals
                .push((trace.clone(), failed_verdict("wrong", "why")));
            batch.cases.push((
                trace,
                crate::model::Case {
                    id: format!("{}", 1 + r % 2),
                    index: 1,
                    index_is_repeat: true,
                    task: Some((*task).to_owned()),
                },
            ));
        }
        store.ingest(batch);
        store
    };
    let store = runs_of(&["geo", "geo", "Math", "math"]);
    let breakdown = Breakdown::of(&store.oldest_first(), &NoGold);
    let cases = &breakdown.table(TableKind::Cases).unwrap().rows;
    let labels: Vec<(&str, usize)> = cases.iter().map(|r| (r.label.as_str(), r.runs)).collect();
    // Tasks group as queries compare them, case aside; a row shows its first spelling.
    assert_eq!(
        labels,
        [
            ("Math · 1", 1),
            ("geo · 1", 1),
            ("geo · 2", 1),
            ("math · 2", 1)
        ]
    );
    for row in cases {
        assert_eq!(
            listed(&store, row.query.as_deref().unwrap()),
            row.runs,
            "{row:?}"
        );
    }
    assert_eq!(
        row(&breakdown, TableKind::Cases, "geo · 1")
            .query
            .as_deref(),
        Some(r#"is:failing task:"geo" case-id:"1""#)
    );

    let store = runs_of(&["geo", "geo"]);
    let breakdown = Breakdown::of(&store.oldest_first(), &NoGold);
    let labels: Vec<&str> = breakdown
        .table(TableKind::Cases)
        .unwrap()
        .rows
        .iter()
        .map(|r| r.label.as_str())
        .collect();
    assert_eq!(labels, ["1", "2"]);
}
