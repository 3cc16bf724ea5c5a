//! Gold scores need payloads, so the rows on screen are scored first; the rest of the list is
//! scored between events. A gold mismatch far below the screen still counts: in the status
//! bar's failing count, the failure queue and `is:gold-mismatch`.

use toolcap::gold::source::GoldFile;
use toolcap::model::{Batch, GoldCall, GoldSpec, Span, SpanKind, ToolFacts};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;

const RUNS: usize = 600;

/// A gold expecting one call of `lookup`.
fn gold_expecting_lookup() -> GoldSpec {
    GoldSpec {
        calls: vec![GoldCall {
            tool: "lookup".into(),
            ..GoldCall::default()
        }],
        source: "test gold".into(),
        ..GoldSpec::default()
    }
}

/// `RUNS` runs that each call one tool and carry a gold expecting `lookup`; the oldest run
/// (listed last, newest first) called `cancel` instead.
fn store() -> Store {
    let mut batch = Batch::default();
    for run in 0..RUNS {
        let tool = if run == 0 { "cancel" } else { "lookup" };
        let trace = format!("run-{run:04}");
        batch.spans.push(Span {
            trace_id: trace.as_str().into(),
            span_id: format!("span-{run}").into(),
            name: tool.into(),
            kind: SpanKind::Tool,
            start_unix_nano: 1_000_000 * (run as u64 + 1),
            end_unix_nano: 1_000_000 * (run as u64 + 1) + 500,
            facts: toolcap::model::KindFacts::from(Box::new(ToolFacts {
                name: Some(tool.into()),
                ..ToolFacts::default()
            })),
            provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
            ..Span::default()
        });
        batch.golds.push((trace, gold_expecting_lookup()));
    }
    let mut store = Store::new();
    store.ingest(batch);
    store
}

#[test]
fn a_gold_mismatch_below_the_screen_counts_once_the_list_is_scored() {
    let mut app = App::new(store(), config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: 120,
            height: 40,
        },
    );
    assert_eq!(app.list.ids().len(), RUNS);
    assert_eq!(
        app.list.ids().last().map(String::as_str),
        Some("run-0000"),
        "the mismatching run is listed last, far below the screen"
    );
    // Only the rows near the screen are scored while handling the resize.
    assert_eq!(app.triage.failing, 0);
    assert!(app::has_background_work(&app));

    let mut steps = 0;
    while app::has_background_work(&app) {
        app::background_step(&mut app);
        steps += 1;
        assert!(steps < RUNS, "the background work ends");
    }
    assert_eq!(app.triage.failing, 1, "the mismatch counts once scored");
    assert_eq!(app.triage.stops.len(), 1);
    assert_eq!(app.stop(0).unwrap().0, "run-0000");
    assert!(
        app.gold
            .score("run-0000")
            .is_some_and(|(_, passed)| !passed)
    );

    // Nothing left to do until the list changes.
    assert!(!app::has_background_work(&app));
}

/// Scoring runs that have no gold changes nothing shown: no rebuild of the views per step
/// (every step rebuilt the failure queue over the whole list while a big file loaded).
#[test]
fn scoring_runs_without_gold_changes_no_view() {
    let mut store = Store::new();
    store.ingest(toolcap::store::sample_runs::tool_runs(0, 3_000));
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    // A gold file naming no listed run: every run is looked at, none has a gold.
    app.gold.file = Some(GoldFile::PerInvocation(vec![(
        "not-listed".into(),
        GoldSpec::default(),
    )]));
    app::update(
        &mut app,
        Action::Resize {
            width: 120,
            height: 40,
        },
    );
    let (gold_version, app_version) = (app.gold.version(), app.version);
    let mut steps = 0;
    while app::has_background_work(&app) {
        app::background_step(&mut app);
        steps += 1;
        assert!(steps < 3_000, "the background work ends");
    }
    assert!(steps > 0, "the gold-less runs were looked at");
    assert!(!app.gold.has_scores());
    assert_eq!(app.gold.version(), gold_version);
    assert_eq!(
        app.version, app_version,
        "no step redrew or rebuilt anything"
    );
}

/// Live data alone (no `--gold`, no trace file a sidecar could sit beside, no run carrying a
/// gold or an arksim conversation) has nothing any gold could apply to: no run is looked at,
/// between events or on screen, until something that could have a gold arrives.
#[test]
fn runs_no_gold_can_apply_to_are_not_scored_until_one_can() {
    let mut store = Store::new();
    store.ingest(toolcap::store::sample_runs::tool_runs(0, 3_000));
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: 120,
            height: 40,
        },
    );
    assert_eq!(app.list.ids().len(), 3_000);
    assert!(!app::has_background_work(&app), "nothing to score");
    assert_eq!(
        app.gold.scored_runs(),
        0,
        "no entry per run saying it has no gold"
    );
    let failing_before = app.triage.failing;

    // A run carrying its own gold arrives: now every run is looked at, and the mismatch counts.
    let mut batch = Batch::default();
    batch.spans.push(Span {
        trace_id: "with-gold".into(),
        span_id: "s".into(),
        name: "cancel".into(),
        kind: SpanKind::Tool,
        start_unix_nano: 1,
        end_unix_nano: 2,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        ..Span::default()
    });
    batch
        .golds
        .push(("with-gold".into(), gold_expecting_lookup()));
    app::ingest(&mut app, toolcap::sources::IngestEvent::Batch(batch));
    let mut steps = 0;
    while app::has_background_work(&app) {
        app::background_step(&mut app);
        steps += 1;
        assert!(steps < 3_000, "the background work ends");
    }
    assert_eq!(
        app.gold.scored_runs(),
        3_001,
        "every listed run was looked at"
    );
    assert!(
        app.gold
            .score("with-gold")
            .is_some_and(|(_, passed)| !passed)
    );
    assert_eq!(
        app.triage.failing,
        failing_before + 1,
        "the gold mismatch counts"
    );
}
