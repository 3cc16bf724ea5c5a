//! Bounded memory, visibly: with a budget, the oldest runs are evicted and the status bar
//! says how many were kept, seen and evicted — never a silent cap.

use toolcap::redact::Reveal;
use toolcap::store::{Budget, Store};
use toolcap::tui::action::Action;
use toolcap::tui::{app, config};

use crate::support::{sample_batch, screen_text};

#[test]
fn the_status_bar_reports_evictions() {
    let store = Store::with_budget(Budget {
        max_invocations: Some(2),
        max_bytes: None,
    });
    let mut app = app::App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 30,
        },
    );
    // The sample batch holds three runs (trip, summ, hostile).
    app::ingest(
        &mut app,
        toolcap::sources::IngestEvent::Batch(sample_batch()),
    );
    assert_eq!(app.store.len(), 2);
    let screen = screen_text(&app);
    assert!(
        screen.contains("kept 2 of 3 runs, evicted 1"),
        "status bar: {screen}"
    );
}
