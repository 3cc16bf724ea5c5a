//! The failure summary overlay (`S`, issue 43): the breakdown of what is listed (it follows the
//! filter), rows selected with the arrows and applied as the list's filter with Enter, Esc
//! closing it, the failures-over-time sparkline while live, and trace text masked.

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use serde_json::Value;
use toolcap::redact::Reveal;
use toolcap::sources::SourceStatus;
use toolcap::tui::app::{self, App};
use toolcap::tui::overlays::Overlay;
use toolcap::tui::overlays::help::help_lines;
use toolcap::tui::overlays::summary::Summary;

use super::support::{app_over_source, press, screen_text};

fn arksim_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/arksim/run-direct")
}

fn summary(app: &App) -> &Summary {
    match &app.overlay {
        Some(Overlay::Summary(summary)) => summary,
        other => panic!("the summary is not open: {other:?}"),
    }
}

#[test]
fn the_summary_tables_the_listed_runs_and_enter_filters_by_a_row() {
    let mut app = app_over_source(&arksim_run(), 120, 44);
    assert_eq!(app.list.len(), 7);
    press(&mut app, "S");
    let open = summary(&app);
    assert_eq!((open.breakdown.listed, open.breakdown.failing), (7, 4));
    let screen = screen_text(&app);
    for shown in [
        "Summary: 4 failing of 7 listed · a run may count in several rows",
        "Failures by evaluator label",
        "disobey user request",
        "Failures by tool",
        "Latency (runs)",
        "Enter filters: is:failing",
    ] {
        assert!(screen.contains(shown), "{shown}\n{screen}");
    }
    assert_snapshot!("summary_arksim_120x44", screen);

    // Down to the tool row of `lookup_order`, whose query lists the two runs it failed in.
    let rows = summary(&app).rows();
    let target = rows
        .iter()
        .position(|r| r.label == "lookup_order" && r.calls.is_some())
        .expect("a tool row");
    assert_eq!(rows[target].runs, 2);
    for _ in 0..target {
        press(&mut app, "<down>");
    }
    assert_eq!(summary(&app).selected, target);
    press(&mut app, "<enter>");
    assert!(app.overlay.is_none(), "Enter applies the row and closes");
    assert_eq!(app.search, "tool-failed:\"lookup_order\"");
    assert_eq!(app.list.len(), 2);

    // The summary follows the filter: now it is of those two runs.
    press(&mut app, "S");
    assert_eq!(summary(&app).breakdown.listed, 2);
    press(&mut app, "<esc>");
    assert!(app.overlay.is_none(), "Esc closes");
    assert_eq!(app.list.len(), 2, "closing leaves the filter");
}

#[test]
fn while_live_the_summary_draws_failures_over_time() {
    let mut app = app_over_source(&arksim_run(), 120, 50);
    press(&mut app, "S");
    assert!(!screen_text(&app).contains("Failing runs over time"));
    app.sources.push(SourceStatus::Watching {
        root: arksim_run(),
        files: 4,
        loaded: 4,
        total: 4,
    });
    let screen = screen_text(&app);
    assert!(screen.contains("Failing runs over time (live)"), "{screen}");
    assert_eq!(
        summary(&app)
            .breakdown
            .failures_over_time
            .iter()
            .sum::<u64>(),
        4
    );
}

#[test]
fn the_help_lists_the_summary_key() {
    let app = app_over_source(&arksim_run(), 120, 40);
    let help: Vec<String> = help_lines(&app).iter().map(|l| l.to_string()).collect();
    assert!(
        help.iter()
            .any(|l| l.trim_start().starts_with('S') && l.contains("failure summary")),
        "{help:#?}"
    );
    assert!(help.iter().any(|l| l.contains("Summary overlay")));
    assert!(
        help.iter()
            .any(|l| l.contains("Enter") && l.contains("filter the list by the row"))
    );
}

#[test]
fn a_secret_planted_in_a_reason_is_masked_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/arksim-two-turn");
    for name in ["evaluation.json", "scenarios.json", "simulation.json"] {
        std::fs::copy(source.join(name), dir.path().join(name)).unwrap();
    }
    let secret = "sk-PLANTEDSUMMARYabcdef0123456789";
    let email = "planted.summary@example.com";
    let path = dir.path().join("evaluation.json");
    let mut evaluation: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let turn = &mut evaluation["conversations"][0]["turn_scores"][0];
    turn["turn_behavior_failure"] = "disobey user request".into();
    turn["turn_behavior_failure_reason"] = format!("SUMMARYMARK {secret} for {email}").into();
    std::fs::write(&path, serde_json::to_string(&evaluation).unwrap()).unwrap();

    let mut app = app_over_source(dir.path(), 140, 44);
    press(&mut app, "S");
    let screen = screen_text(&app);
    assert!(
        screen.contains("SUMMARYMARK"),
        "the reason is shown\n{screen}"
    );
    assert!(screen.contains("(no filter)"), "{screen}");
    for planted in [secret, email] {
        assert!(!screen.contains(planted), "{planted}\n{screen}");
    }
}

#[test]
fn the_export_carries_the_summary_of_what_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_over_source(&arksim_run(), 120, 40);
    press(&mut app, "/is:eval-failed<enter>S");
    let shown = summary(&app).breakdown.clone();
    assert_eq!(shown.listed, 4);
    press(&mut app, "<esc>");
    let at = time::OffsetDateTime::from_unix_timestamp(1_796_523_300).unwrap();
    app::export::export_into(&mut app, dir.path(), at, Reveal::Redacted);
    let stem = dir.path().join("toolcap-report-20261206T021500Z");
    let markdown = std::fs::read_to_string(stem.with_extension("md")).unwrap();
    assert!(
        markdown.contains("## Summary\n\n4 failing of 4 listed"),
        "{markdown}"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(stem.with_extension("json")).unwrap())
            .unwrap();
    let tools = json["summary"]["tables"]["tools"].as_array().unwrap();
    let shown_tools = &shown
        .table(toolcap::breakdown::TableKind::Tools)
        .unwrap()
        .rows;
    assert_eq!(tools.len(), shown_tools.len());
    for (exported, row) in tools.iter().zip(shown_tools) {
        assert_eq!(exported["label"], row.label.as_str());
        assert_eq!(exported["runs"], row.runs);
        assert_eq!(exported["failed_calls"], row.failed_calls.unwrap());
    }
}

/// While runs arrive, a summary that is costly to compute is computed again only once it is due
/// (its cost times nine later, a second at most); until then it keeps what it had and its title
/// says it is updating, and the event loop wakes at the due time.
#[test]
fn a_costly_summary_waits_its_turn_while_runs_arrive_then_catches_up() {
    use std::time::{Duration, Instant};
    use toolcap::sources::IngestEvent;
    use toolcap::tui::overlays::summary::{due, refresh_at};

    let mut app = app_over_source(&arksim_run(), 120, 44);
    press(&mut app, "S");
    assert_eq!(summary(&app).breakdown.listed, 7);
    // As if the last computation had taken 100 ms, just now.
    let computed_at = Instant::now();
    let took = |app: &mut App, took: Duration| {
        if let Some(Overlay::Summary(open)) = &mut app.overlay {
            open.computed_at = computed_at;
            open.took = took;
        }
    };
    took(&mut app, Duration::from_millis(100));
    assert_eq!(due(&app), None, "nothing changed");

    let more = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus/toolscore/v01_custom_exact_with_timing/trace.json");
    let batch = toolcap::sources::files::load_file(&more).batch;
    app::take_in(&mut app, [IngestEvent::Batch(batch)]);
    app::settle(&mut app);
    let listed = app.list.len();
    assert!(listed > 7);
    assert_eq!(summary(&app).breakdown.listed, 7, "not yet due");
    assert_eq!(due(&app), Some(computed_at + Duration::from_millis(900)));
    assert!(screen_text(&app).contains("· updating"));
    // However costly, a changed list shows within a second.
    took(&mut app, Duration::from_secs(5));
    assert_eq!(due(&app), Some(computed_at + Duration::from_secs(1)));
    took(&mut app, Duration::from_millis(100));

    refresh_at(&mut app, computed_at + Duration::from_millis(500));
    assert_eq!(summary(&app).breakdown.listed, 7, "still early");
    refresh_at(&mut app, computed_at + Duration::from_millis(900));
    assert_eq!(summary(&app).breakdown.listed, listed);
    assert_eq!(due(&app), None);
    assert!(!screen_text(&app).contains("· updating"));
}
