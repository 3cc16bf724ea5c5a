//! The list search off the UI thread: results from the query worker equal the evaluator's own
//! answer, narrowing an extended query and re-evaluating only changed runs on ingest change
//! nothing in the result, the previous results stay on screen until a screenful of the new ones
//! has arrived, and a superseded search leaves no trace. Synchronised by the results channel
//! (`receive_search_result` blocks for the next chunk), never by sleeping.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use toolcap::model::Batch;
use toolcap::query::{Context, Query};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::event_loop::action_for_event;

use crate::support::press;

fn runs(from: usize, to: usize) -> Batch {
    toolcap::store::sample_runs::tool_runs(from, to)
}

fn synthetic(n: usize) -> Store {
    let mut store = Store::new();
    store.ingest(runs(0, n));
    store
}

/// The fixture corpus and the sample traces, loaded as `toolcap-tui` loads them.
fn fixtures() -> Store {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let paths: Vec<PathBuf> = [
        "tests/fixtures/corpus/openarmature/otlp-json/payload-on.batch.jsonl",
        "tests/fixtures/corpus/arksim/run-direct/simulation.json",
        "tests/fixtures/corpus/arksim/run-direct/evaluation.json",
        "tests/fixtures/logs/anthropic_is_error.json",
        "tests/fixtures/logs/mcp_ids_and_errors.json",
        "assets/sample-traces",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    toolcap::sources::load::load_store(&paths).0
}

fn app_over(store: Store, inline_runs: usize, block: usize) -> App {
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app.filter.inline_runs = inline_runs;
    app.filter.block = block;
    app::update(
        &mut app,
        Action::Resize {
            width: 120,
            height: 30,
        },
    );
    app
}

/// What the evaluator itself says the list search `text` matches, straight over the store.
fn expected(store: &Store, text: &str) -> BTreeSet<String> {
    let query = Query::parse(text).unwrap();
    store
        .invocations()
        .filter(|inv| query.matches(inv, &Context::default()).is_some())
        .map(|inv| inv.id.to_string())
        .collect()
}

fn listed(app: &App) -> BTreeSet<String> {
    app.list.ids().into_iter().collect()
}

fn list_title(app: &App) -> String {
    crate::support::screen_text(app)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Queries typed one key at a time: each key extends the query, so most steps narrow.
const TYPED: &[&str] = &[
    "tool:lookup_order",
    "\"non-fatal\"",
    "\"quote service timed out\"",
    "get_stock agent",
    "model:claude -is:error",
    "kind:tool dur>0 refund",
    "searchf OR tool:weather",
];

/// Types `query` into the list search one key at a time; after each key (and `finish`ing a
/// worker search) the list equals the evaluator's answer for the query in force.
fn type_and_compare(app: &mut App, store_of: &Store, query: &str, finish: bool) -> usize {
    press(app, "/");
    let mut fewest = usize::MAX;
    for c in query.chars() {
        press(app, &c.to_string());
        fewest = fewest.min(app.filter.last_evaluated);
        if finish {
            app::finish_search(app);
            assert_eq!(
                listed(app),
                expected(store_of, &app.search),
                "{:?} typed towards {query:?}",
                app.search
            );
        }
    }
    app::finish_search(app);
    assert_eq!(listed(app), expected(store_of, query), "{query:?}");
    // The failure queue grown block by block as results streamed in is the one built afresh.
    let streamed = (app.triage.failing, app.triage.stops.clone());
    app.triage = Default::default();
    app::refresh(app);
    assert_eq!(
        streamed,
        (app.triage.failing, app.triage.stops.clone()),
        "{query:?}: failure queue"
    );
    press(app, "<esc>");
    fewest
}

#[test]
fn narrowing_and_the_worker_give_what_a_full_evaluation_gives_on_the_fixtures() {
    let store = fixtures();
    assert!(store.len() >= 20, "the fixtures hold {} runs", store.len());
    for query in TYPED {
        // Inline (the fixtures are small), the worker with two-run blocks, the worker with
        // keys typed faster than it answers (each key supersedes the search before).
        let mut inline = app_over(fixtures(), app::INLINE_RUNS, 2);
        let narrowed_to = type_and_compare(&mut inline, &store, query, true);
        assert!(
            narrowed_to < store.len(),
            "{query:?}: some key narrowed to the previous matches ({narrowed_to} of {})",
            store.len()
        );
        let mut worker = app_over(fixtures(), 0, 2);
        type_and_compare(&mut worker, &store, query, true);
        let mut hurried = app_over(fixtures(), 0, 2);
        type_and_compare(&mut hurried, &store, query, false);
        assert_eq!(
            inline.list.ids(),
            worker.list.ids(),
            "{query:?}: same order"
        );
    }
    // Not vacuous: the table's queries find something, and not everything.
    for query in [
        "tool:lookup_order",
        "\"non-fatal\"",
        "\"quote service timed out\"",
    ] {
        let found = expected(&store, query).len();
        assert!(found > 0 && found < store.len(), "{query}: {found}");
    }
}

#[test]
fn the_previous_results_stay_until_a_screenful_of_the_new_ones_has_arrived() {
    let mut app = app_over(synthetic(400), 0, 1);
    // One thread hands the blocks back in list order. With two, a thread held up on the first
    // block (a busy machine) lets the other finish the rest, and all matches arrive at once.
    app.filter.threads = 1;
    let all = app.list.ids().len();
    assert_eq!(all, 400);
    let screenful = app.regions().list_body().height as usize;
    press(&mut app, "/\"non-fatal\"");
    // Nothing received yet: the old list is on screen, the title says it is searching.
    assert_eq!(app.list.ids().len(), all);
    assert!(
        list_title(&app).contains("searching…"),
        "{}",
        list_title(&app)
    );
    let mut sizes = Vec::new();
    while app::receive_search_result(&mut app) {
        sizes.push(app.list.ids().len());
        assert!(!app.list.ids().is_empty(), "never an empty screen");
        if let Some(found) = app.filter.found_so_far() {
            let title = list_title(&app);
            assert!(
                title.contains(&format!("· {found} of 400 · searching…")),
                "{title}"
            );
        }
    }
    let matching = expected(&app.store, "\"non-fatal\"");
    assert_eq!(matching.len(), 80);
    assert_eq!(listed(&app), matching);
    // The list switched from the old result to the new one once it filled the pane, grew
    // while more arrived, and ended whole.
    let first_new = sizes.iter().position(|&n| n != all).expect("switched");
    assert!(sizes[first_new] >= screenful && sizes[first_new] < matching.len());
    assert!(sizes[first_new..].windows(2).all(|w| w[0] <= w[1]));
    let title = list_title(&app);
    assert!(
        title.contains("80 of 400") && !title.contains("searching"),
        "{title}"
    );
}

#[test]
fn a_superseded_search_leaves_nothing_behind() {
    let mut app = app_over(synthetic(300), 0, 3);
    // Every key starts a search that supersedes the one before; none is waited for.
    press(&mut app, "/tool:refund");
    let ctrl_u = Event::Key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    let clear = action_for_event(&app, &ctrl_u).expect("Ctrl-U edits the prompt");
    app::update(&mut app, clear);
    press(&mut app, "-agent_3<enter>");
    app::finish_search(&mut app);
    assert_eq!(app.search, "-agent_3");
    let expected = expected(&app.store, "-agent_3");
    assert!(expected.len() > 200 && expected.len() < 300);
    assert_eq!(listed(&app), expected);
    assert!(!list_title(&app).contains("searching"));
}

#[test]
fn ingest_re_evaluates_only_the_runs_that_changed() {
    let mut app = app_over(synthetic(3_000), 0, 256);
    press(&mut app, "/tool:refund<enter>");
    app::finish_search(&mut app);
    assert_eq!(app.list.ids().len(), 750);
    // 40 new runs, and a failing refund added to an old run that had none.
    let mut batch = runs(3_000, 3_040);
    let mut late = batch.spans[3].clone();
    late.trace_id = "run00000".into();
    late.span_id = "run00000-late".into();
    late.parent_span_id = Some("run00000-root".into());
    batch.spans.push(late);
    app::ingest(&mut app, toolcap::sources::IngestEvent::Batch(batch));
    app::finish_search(&mut app);
    assert_eq!(app.filter.last_evaluated, 41, "only the changed runs");
    assert_eq!(listed(&app), expected(&app.store, "tool:refund"));
    assert_eq!(app.list.ids().len(), 750 + 10 + 1);
}

#[test]
fn a_key_typed_before_the_search_finished_narrows_it_and_keeps_its_rows_on_screen() {
    let mut app = app_over(synthetic(400), 0, 10);
    // One thread sends the blocks in list order, so the first rows show while blocks remain.
    // With two, the first block could come in last and the search be over when rows first show.
    app.filter.threads = 1;
    press(&mut app, "/tool:refun");
    while app.filter.shown_text() != "tool:refun" {
        assert!(
            app::receive_search_result(&mut app),
            "it shows before it ends"
        );
    }
    assert!(app.filter.is_searching());
    let on_screen = listed_ids(&app);
    assert!(!on_screen.is_empty() && on_screen.len() < 100);
    press(&mut app, "d");
    // The new search looks only at what the old one had not ruled out yet...
    assert!(
        app.filter.last_evaluated < 400,
        "{} runs looked at",
        app.filter.last_evaluated
    );
    // ...and until it shows, the old one's rows stay.
    assert_eq!(listed_ids(&app), on_screen);
    app::finish_search(&mut app);
    assert_eq!(listed(&app), expected(&app.store, "tool:refund"));
    assert_eq!(app.list.ids().len(), 100);
}

/// The app's own state (list order, results) holds no run across an ingest: changing a run
/// changes it in place. (A search running on the worker holds its snapshot until it ends: a
/// run changed meanwhile is copied once.)
#[test]
fn ingest_into_a_run_copies_nothing_while_no_search_holds_it() {
    let mut app = app_over(synthetic(50), app::INLINE_RUNS, 10);
    press(&mut app, "/tool:refund<enter>");
    assert!(!app.filter.is_searching());
    let address = |app: &App| {
        app.store
            .shared_invocations()
            .find(|inv| inv.id == "run00001")
            .map(|inv| std::sync::Arc::as_ptr(inv) as usize)
            .expect("run00001")
    };
    let before = address(&app);
    let mut batch = runs(1, 2);
    batch.spans.truncate(1);
    batch.spans[0].span_id = "run00001-more".into();
    batch.spans[0].parent_span_id = Some("run00001-root".into());
    app::ingest(&mut app, toolcap::sources::IngestEvent::Batch(batch));
    app::finish_search(&mut app);
    assert_eq!(app.store.get("run00001").unwrap().spans.len(), 3);
    assert_eq!(address(&app), before, "changed in place, not copied");
}

fn listed_ids(app: &App) -> Vec<String> {
    app.list.ids().into_iter().collect()
}

#[test]
fn a_long_result_stops_growing_the_list_at_a_bound_until_it_is_whole() {
    let mut app = app_over(synthetic(3_000), 0, 8);
    let screenful = app.regions().list_body().height as usize;
    let bound = screenful * app::SCREENS_WHILE_SEARCHING;
    press(&mut app, "/kind:tool");
    let mut previous: Option<usize> = None;
    while app::receive_search_result(&mut app) {
        // (Until a screenful has arrived the list still shows the previous, unfiltered result.)
        if app.filter.found_so_far().is_some() && app.filter.shown_text() == "kind:tool" {
            let rows = app.list.len();
            if let Some(before) = previous.filter(|&n| n >= bound) {
                assert_eq!(rows, before, "grew past {bound} rows while searching");
            }
            previous = Some(rows);
        }
    }
    let matching = expected(&app.store, "kind:tool");
    assert!(matching.len() > 2 * bound, "{} matches", matching.len());
    assert_eq!(listed(&app), matching);
}
