//! The gold diff overlay in the app: `d` opens it for the selected run, its keys move between
//! differences, Enter jumps to the call's span in the tree, redaction still applies, and the
//! list shows the gold score.

use serde_json::json;
use toolcap::model::{Batch, GoldCall, GoldSpec};
use toolcap::tui::app;

use crate::support::{SECRET_CITY, press, sample_app, screen_text};

fn call(tool: &str, args: serde_json::Value) -> GoldCall {
    GoldCall {
        tool: tool.into(),
        args: args.as_object().cloned(),
        ..Default::default()
    }
}

/// The sample run "trip" calls search_flights (ok) then get_weather (fails); this gold also
/// expects a book_hotel call that never happened.
fn app_with_gold() -> app::App {
    app_with_gold_from("test gold")
}

fn app_with_gold_from(source: &str) -> app::App {
    let mut app = sample_app(120, 40);
    let gold = GoldSpec {
        calls: vec![
            call(
                "search_flights",
                json!({"origin": "OSL", "destination": "Lima"}),
            ),
            call("get_weather", json!({"city": SECRET_CITY})),
            call("book_hotel", json!({"city": "Lima"})),
        ],
        source: source.into(),
        ..Default::default()
    };
    app::ingest(
        &mut app,
        toolcap::sources::IngestEvent::Batch(Batch {
            golds: vec![("trip".into(), gold)],
            ..Default::default()
        }),
    );
    app
}

#[test]
fn d_opens_the_diff_of_the_selected_run_and_esc_closes_it() {
    let mut app = app_with_gold();
    assert_eq!(app.selected_invocation.as_deref(), Some("trip"));
    press(&mut app, "d");
    let overlay = app.gold_diff().expect("the overlay is open");
    assert_eq!(overlay.invocation, "trip");
    let screen = screen_text(&app);
    assert!(screen.contains("book_hotel"), "{screen}");
    assert!(
        screen.contains("next/prev difference"),
        "footer hints: {screen}"
    );
    press(&mut app, "<esc>");
    assert!(app.gold_diff().is_none());
}

#[test]
fn the_list_shows_the_gold_score_and_a_failing_gold_is_marked() {
    let app = app_with_gold();
    let (score, passed) = app.gold.score("trip").expect("trip has a gold score");
    assert!(!passed, "a missing call and a failed call cannot pass");
    assert!((0.0..1.0).contains(&score));
    assert!(app.gold.score("summ").is_none(), "no gold, no score");
    assert!(screen_text(&app).contains(&format!("◇{score:.2}")));
}

#[test]
fn enter_jumps_to_the_failed_calls_span_in_the_tree() {
    let mut app = app_with_gold();
    press(&mut app, "d");
    // The overlay starts on the first differing row: the failed get_weather call.
    press(&mut app, "<enter>");
    assert!(app.gold_diff().is_none(), "jumping closes the overlay");
    let inv = app.invocation().expect("trip stays selected");
    let span = app.selected_span_index().expect("a span is selected");
    assert_eq!(inv.spans[span].span_id, "tool2");
}

#[test]
fn argument_values_stay_redacted_in_the_diff_until_r() {
    let mut app = app_with_gold();
    press(&mut app, "d");
    assert!(!screen_text(&app).contains(SECRET_CITY));
    press(&mut app, "r");
    assert!(
        app.gold_diff().is_some(),
        "r toggles redaction without closing the overlay"
    );
    let revealed = screen_text(&app);
    assert!(revealed.contains(SECRET_CITY), "{revealed}");
    assert!(
        !revealed.contains("sk-abcdefghijklmnop"),
        "secrets stay masked"
    );
}

#[test]
fn the_list_names_the_gold_the_selected_run_is_scored_against() {
    let mut app = app_with_gold_from("/runs/42/trip.gold.json");
    assert_eq!(app.gold.source("trip"), Some("/runs/42/trip.gold.json"));
    assert_eq!(app.gold.source("summ"), None, "no gold, no source");
    let screen = screen_text(&app);
    // The file name only: the directories would not fit an 80-column list border.
    assert!(screen.contains("◇ gold: trip.gold.json"), "{screen}");
    assert!(!screen.contains("/runs/42"), "{screen}");
    // A run without a gold shows no gold line.
    press(&mut app, "j");
    assert_ne!(app.selected_invocation.as_deref(), Some("trip"));
    assert!(!screen_text(&app).contains("◇ gold:"));
}

#[test]
fn a_run_without_gold_says_how_to_give_it_one() {
    let mut app = app_with_gold();
    press(&mut app, "j");
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    press(&mut app, "d");
    assert!(app.gold_diff().is_none());
    let message = app.message.clone().unwrap_or_default();
    assert!(message.contains("--gold"), "{message}");
}
