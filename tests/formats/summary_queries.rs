//! The failure summary's rows are filters: on the fixture corpus, each row's query lists exactly
//! the runs the row counts, through the same query evaluator `/` and `dump --filter` use.

use std::path::PathBuf;

use toolcap::breakdown::{Breakdown, TableKind};
use toolcap::query::{Context, NoGold, Query};
use toolcap::sources::load::load_into;
use toolcap::sources::remote::RemoteOptions;
use toolcap::store::Store;

fn fixture_store() -> Store {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (store, _) = load_into(
        Store::new(),
        &[
            root.join("tests/fixtures/corpus"),
            root.join("tests/fixtures/triage"),
            root.join("tests/fixtures/inspect-ai"),
            root.join("assets/sample-traces"),
        ],
        &RemoteOptions::default(),
    );
    store
}

#[test]
fn every_summary_row_query_lists_exactly_the_runs_it_counts() {
    let store = fixture_store();
    let runs = store.oldest_first();
    let breakdown = Breakdown::of(&runs, &NoGold);
    assert!(breakdown.failing > 0, "the corpus has failing runs");
    for kind in [
        TableKind::Facets,
        TableKind::EvaluatorLabels,
        TableKind::ScorerValues,
        TableKind::Tools,
        TableKind::ToolErrors,
        TableKind::ErrorTypes,
        TableKind::Cases,
        TableKind::Reasons,
    ] {
        let table = breakdown
            .table(kind)
            .unwrap_or_else(|| panic!("the corpus fills {kind:?}"));
        assert!(!table.rows.is_empty(), "{kind:?}");
    }
    // The Inspect sample a limit stopped (tests/fixtures/inspect-ai/limit) has its own row.
    let facets = breakdown.table(TableKind::Facets).unwrap();
    let limited = facets.rows.iter().find(|row| row.label == "limited");
    assert_eq!(limited.map(|row| row.runs), Some(1), "{:?}", facets.rows);
    let rows = breakdown
        .tables
        .iter()
        .flat_map(|t| t.rows.iter())
        .chain(breakdown.distributions.iter().flat_map(|d| d.bins.iter()));
    let mut checked = 0;
    for row in rows {
        let Some(text) = &row.query else { continue };
        let query = Query::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let listed = runs
            .iter()
            .filter(|inv| query.matches(inv, &Context::default()).is_some())
            .count();
        assert_eq!(listed, row.runs, "row {:?} with query {text}", row.label);
        checked += 1;
    }
    assert!(checked > 30, "only {checked} rows had a query");
}

#[test]
fn errored_inspect_samples_count_as_failing() {
    let store = fixture_store();
    let runs = store.oldest_first();
    let breakdown = Breakdown::of(&runs, &NoGold);
    let errored = breakdown
        .table(TableKind::EvaluatorLabels)
        .unwrap()
        .rows
        .iter()
        .find(|r| r.label == "sample error")
        .expect("the Inspect fixtures hold errored samples");
    assert!(errored.runs > 0);
    let errored_and_failing = Query::parse("eval:\"sample error\" is:failing").unwrap();
    let listed = runs
        .iter()
        .filter(|inv| {
            errored_and_failing
                .matches(inv, &Context::default())
                .is_some()
        })
        .count();
    assert_eq!(listed, errored.runs);
}
