//! State transitions driven by key and mouse events through the real keymap.

use crossterm::event::{MouseButton, MouseEventKind};
use toolcap::model::{Batch, Span, SpanKind};
use toolcap::redact::Reveal;
use toolcap::sources::{IngestEvent, SourceStatus};
use toolcap::tui::app::{self, App, Pane};
use toolcap::tui::overlays::Overlay;
use toolcap::tui::overlays::help::Help;
use toolcap::tui::overlays::problems::Problems;

use crate::support::{SECRET_CITY, T0, all_symbols, mouse, press, sample_app, screen_text};

fn selected_span_name(app: &App) -> String {
    let inv = app.invocation().unwrap();
    inv.spans[app.selected_span_index().unwrap()]
        .name
        .to_string()
}

#[test]
fn starts_on_the_newest_invocation_with_the_list_focused() {
    let app = sample_app(80, 24);
    // Newest first: trip (T0) > summ (T0-1h) > hostile (T0-2h).
    assert_eq!(app.list.ids(), ["trip", "summ", "hostile"]);
    assert_eq!(app.selected_invocation.as_deref(), Some("trip"));
    assert_eq!(app.focus, Pane::List);
    assert_eq!(app.reveal, Reveal::Redacted);
}

#[test]
fn selection_is_keyed_by_id_and_survives_new_data() {
    let mut app = sample_app(80, 24);
    press(&mut app, "j");
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    // A newer run arrives and takes row 0; the cursor stays on the same invocation.
    let newer = Span {
        trace_id: "newer".into(),
        span_id: "n1".into(),
        name: "fresh run".into(),
        kind: SpanKind::Agent,
        start_unix_nano: T0 + 10_000_000_000,
        end_unix_nano: T0 + 11_000_000_000,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        ..Default::default()
    };
    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            spans: vec![newer],
            ..Default::default()
        }),
    );
    assert_eq!(app.list.ids()[0], "newer");
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    assert_eq!(app.selected_list_position(), Some(2));
}

/// A source's status (a read's progress and end, a receiver's counts) changes no run: the
/// list keeps its runs and order instead of sorting every run again, and the status shows.
#[test]
fn a_status_alone_keeps_the_list_and_still_shows() {
    let mut app = sample_app(120, 24);
    press(&mut app, "j");
    let (version, ids) = (app.list.version, app.list.ids());
    let path = std::path::PathBuf::from("/traces/agent.jsonl");
    app::ingest(
        &mut app,
        IngestEvent::Status(SourceStatus::Reading {
            path: path.clone(),
            read: 10,
            total: 10,
            bytes_per_sec: 1_000,
        }),
    );
    assert_eq!(app.list.version, version, "the list was not rebuilt");
    assert_eq!(app.list.ids(), ids);
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    assert!(app.sources.iter().any(|s| matches!(
        s,
        SourceStatus::Reading { path: p, read: 10, .. } if *p == path
    )));
    // A drain holding data as well rebuilds it.
    app::ingest_many(
        &mut app,
        [
            IngestEvent::Status(SourceStatus::Reading {
                path,
                read: 20,
                total: 20,
                bytes_per_sec: 1_000,
            }),
            IngestEvent::Forget(std::path::PathBuf::from("/traces/other.jsonl")),
        ],
    );
    assert!(app.list.version > version, "data rebuilds the list");
}

#[test]
fn tab_cycles_panes_and_shift_tab_goes_back() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab>");
    assert_eq!(app.focus, Pane::Tree);
    press(&mut app, "<tab>");
    assert_eq!(app.focus, Pane::Detail);
    press(&mut app, "<tab>");
    assert_eq!(app.focus, Pane::List);
    press(&mut app, "<s-tab>");
    assert_eq!(app.focus, Pane::Detail);
}

#[test]
fn folding_hides_and_shows_children_and_keeps_the_selection() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab>");
    // trip has 6 spans: root + 5 children.
    assert_eq!(app.tree.visible.len(), 6);
    press(&mut app, "<enter>");
    assert_eq!(app.tree.visible.len(), 1);
    assert_eq!(selected_span_name(&app), "invoke_agent trip_planner");
    press(&mut app, "l");
    assert_eq!(app.tree.visible.len(), 6);
    press(&mut app, "jjC");
    assert_eq!(app.tree.visible.len(), 1, "collapse all");
    assert_eq!(selected_span_name(&app), "invoke_agent trip_planner");
    press(&mut app, "E");
    assert_eq!(app.tree.visible.len(), 6, "expand all");
    press(&mut app, "<space>");
    assert_eq!(app.tree.visible.len(), 1, "space folds too");
}

#[test]
fn h_moves_from_a_leaf_to_its_parent() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab>jj");
    assert_eq!(selected_span_name(&app), "chat gpt-4o");
    press(&mut app, "h");
    assert_eq!(selected_span_name(&app), "invoke_agent trip_planner");
}

#[test]
fn n_and_shift_n_jump_between_failed_spans_even_when_folded() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab><enter>");
    assert_eq!(app.tree.visible.len(), 1);
    press(&mut app, "n");
    assert_eq!(selected_span_name(&app), "execute_tool get_weather");
    assert_eq!(app.tree.visible.len(), 6, "the failure's ancestors unfold");
    // Only one failed span: N wraps back to it and says so.
    press(&mut app, "N");
    assert_eq!(selected_span_name(&app), "execute_tool get_weather");
    assert!(app.message.as_deref().unwrap_or("").contains("wrapped"));
}

#[test]
fn n_in_the_list_jumps_to_the_next_failing_invocation() {
    let mut app = sample_app(80, 24);
    press(&mut app, "j");
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    press(&mut app, "n");
    // hostile is ok, trip is degraded: wraps to trip.
    assert_eq!(app.selected_invocation.as_deref(), Some("trip"));
}

#[test]
fn o_jumps_from_a_tool_call_to_the_llm_span_that_requested_it() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab>n");
    assert_eq!(selected_span_name(&app), "execute_tool get_weather");
    press(&mut app, "o");
    let inv = app.invocation().unwrap();
    assert_eq!(
        inv.spans[app.selected_span_index().unwrap()].span_id,
        "llm1"
    );
}

#[test]
fn tree_and_detail_selection_is_remembered_per_invocation() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab>n<s-tab>j");
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    press(&mut app, "k");
    assert_eq!(selected_span_name(&app), "execute_tool get_weather");
}

#[test]
fn r_toggles_redaction_and_the_status_bar_says_so() {
    let mut app = sample_app(100, 30);
    assert!(screen_text(&app).contains("REDACTED"));
    press(&mut app, "r");
    assert_eq!(app.reveal, Reveal::Revealed);
    assert!(screen_text(&app).contains("REVEALED"));
    press(&mut app, "r");
    assert_eq!(app.reveal, Reveal::Redacted);
}

#[test]
fn a_payload_value_never_shows_while_redacted_and_shows_after_r() {
    let mut app = sample_app(120, 40);
    press(&mut app, "<tab>n");
    for keys in ["", "<tab>", "f", "G"] {
        press(&mut app, keys);
        assert!(
            !screen_text(&app).contains(SECRET_CITY),
            "visible after {keys:?}"
        );
    }
    press(&mut app, "<esc>g");
    press(&mut app, "r");
    // The full-screen view opens at the payload; revealed, the value is there.
    press(&mut app, "f");
    let text = screen_text(&app);
    assert!(text.contains(SECRET_CITY), "{text}");
    // The api key is still masked when revealed.
    assert!(!text.contains("sk-abcdefghijklmnop"));
    assert!(text.contains("••••••"));
}

#[test]
fn escape_sequences_in_trace_data_are_drawn_inert() {
    let mut app = sample_app(120, 40);
    press(&mut app, "jj");
    assert_eq!(app.selected_invocation.as_deref(), Some("hostile"));
    press(&mut app, "r<tab><tab>");
    let symbols = all_symbols(&app);
    for c in symbols.chars() {
        assert!(
            !c.is_control(),
            "control character {:?} reached the screen",
            c
        );
    }
    assert!(symbols.contains("␛[2J"), "ESC shown as a picture");
    assert!(symbols.contains("␛]52;c;SGVsbG8=␇"), "OSC 52 shown inert");
    // The tool's JSON payload holds the same sequences, shown escaped.
    press(&mut app, "<s-tab>j");
    assert!(all_symbols(&app).chars().all(|c| !c.is_control()));
}

#[test]
fn q_and_ctrl_c_quit_and_help_lists_every_binding() {
    let mut app = sample_app(80, 24);
    press(&mut app, "?");
    assert!(matches!(app.overlay, Some(Overlay::Help(_))));
    let help: String = toolcap::tui::overlays::help::help_lines(&app)
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect();
    for binding in app.config.keymap.bindings() {
        assert!(
            help.contains(&binding.key.display()),
            "{:?} missing from help",
            binding.key
        );
        assert!(help.contains(binding.action.description().unwrap()));
    }
    press(&mut app, "<esc>");
    assert!(!matches!(app.overlay, Some(Overlay::Help(_))));
    press(&mut app, "q");
    assert!(app.should_quit);
    let mut app = sample_app(80, 24);
    press(&mut app, "<c-c>");
    assert!(app.should_quit);
}

#[test]
fn footer_hints_follow_focus() {
    let mut app = sample_app(200, 30);
    let footer = |app: &App| screen_text(app).lines().last().unwrap().to_owned();
    assert!(footer(&app).contains("Enter open"));
    // Space folds conversation rows in the list too; expanding all spans is the tree's.
    assert!(!footer(&app).contains("expand all"));
    press(&mut app, "<tab>");
    assert!(footer(&app).contains("expand all"));
    assert!(footer(&app).contains("o requester"));
}

#[test]
fn search_filters_the_list_and_esc_clears_it() {
    let mut app = sample_app(80, 24);
    press(&mut app, "/summ<enter>");
    assert_eq!(app.list.ids(), ["summ"]);
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    // Typing `q` in the search box does not quit.
    press(&mut app, "/q");
    assert!(!app.should_quit);
    // Esc while typing restores the filter kept before (`summ`); Esc again clears it.
    press(&mut app, "<esc>");
    assert_eq!(app.list.ids(), ["summ"]);
    press(&mut app, "<esc>");
    assert_eq!(app.list.ids().len(), 3);
}

#[test]
fn mouse_click_selects_and_wheel_scrolls() {
    let mut app = sample_app(80, 24);
    let list_body = app.regions().list_body();
    mouse(
        &mut app,
        MouseEventKind::Down(MouseButton::Left),
        5,
        list_body.y + 1,
    );
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
    let tree_body = app.regions().tree_body();
    mouse(
        &mut app,
        MouseEventKind::Down(MouseButton::Left),
        tree_body.x + 2,
        tree_body.y + 1,
    );
    assert_eq!(app.focus, Pane::Tree);
    assert_eq!(selected_span_name(&app), "chat gpt-4o");
    mouse(
        &mut app,
        MouseEventKind::ScrollUp,
        tree_body.x + 2,
        tree_body.y,
    );
    assert_eq!(selected_span_name(&app), "invoke_agent summarizer");
    mouse(&mut app, MouseEventKind::ScrollDown, 5, list_body.y);
    assert_eq!(app.selected_invocation.as_deref(), Some("hostile"));
}

/// An open overlay has the keys before the panes: movement scrolls it, either toggle closes it
/// (never stacks the other), a click reaches nothing under it, and quitting still quits.
#[test]
fn an_open_overlay_takes_the_keys_and_clicks_before_the_panes() {
    let mut app = sample_app(80, 24);
    let first = app.selected_invocation.clone();
    let list_body = app.regions().list_body();
    let click_second_row = |app: &mut App| {
        mouse(
            app,
            MouseEventKind::Down(MouseButton::Left),
            5,
            list_body.y + 1,
        );
    };
    press(&mut app, "?jj");
    assert!(matches!(
        app.overlay,
        Some(Overlay::Help(Help { scroll: 2 }))
    ));
    assert_eq!(app.selected_invocation, first, "j scrolled the help");
    click_second_row(&mut app);
    assert_eq!(app.selected_invocation, first, "the click hit the help");
    press(&mut app, "p");
    assert!(
        app.overlay.is_none(),
        "p closes the help, not opens the problems"
    );
    press(&mut app, "pj");
    assert!(matches!(
        app.overlay,
        Some(Overlay::Problems(Problems { scroll: 1 }))
    ));
    press(&mut app, "<esc>p");
    assert!(
        matches!(app.overlay, Some(Overlay::Problems(Problems { scroll: 0 }))),
        "reopened at the top"
    );
    press(&mut app, "q");
    assert!(app.should_quit);
    press(&mut app, "<esc>");
    click_second_row(&mut app);
    assert_eq!(app.selected_invocation.as_deref(), Some("summ"));
}

#[test]
fn resize_keeps_the_selection_visible() {
    let mut app = sample_app(80, 24);
    press(&mut app, "<tab>G");
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 60,
            height: 12,
        },
    );
    let pos = app.selected_visible_position().unwrap();
    let height = app.regions().tree_body().height as usize;
    assert!(pos >= app.tree.offset && pos < app.tree.offset + height);
}

#[test]
fn not_captured_and_truncated_payloads_are_labelled() {
    let mut app = sample_app(120, 40);
    press(&mut app, "<tab>G");
    assert_eq!(selected_span_name(&app), "retrieve visa_rules");
    let text = screen_text(&app);
    assert!(text.contains("not captured"), "{text}");
    assert!(text.contains("TRUNCATED"));
    assert!(text.contains("8.8 KiB"), "total of 9000 bytes shown");
}

#[test]
fn p_lists_the_problems_the_sources_reported() {
    let mut app = sample_app(100, 30);
    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            problems: vec![toolcap::model::Problem::error(
                "traces/bad.jsonl",
                Some(7),
                "not JSON\u{1b}[2J",
            )],
            ..Default::default()
        }),
    );
    assert!(screen_text(&app).contains("1 error (p)"));
    press(&mut app, "p");
    assert!(matches!(app.overlay, Some(Overlay::Problems(_))));
    let text = screen_text(&app);
    assert!(text.contains("traces/bad.jsonl:7: not JSON␛[2J"), "{text}");
    press(&mut app, "p");
    assert!(!matches!(app.overlay, Some(Overlay::Problems(_))));
}

#[test]
fn notes_are_listed_apart_and_not_counted_in_the_status_bar() {
    let mut app = sample_app(100, 30);
    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            problems: vec![
                toolcap::model::Problem::note("traces/run.log", None, "skipped: not a trace"),
                toolcap::model::Problem::warning("traces/a.json", Some(2), "arguments guessed"),
            ],
            ..Default::default()
        }),
    );
    let text = screen_text(&app);
    assert!(text.contains("1 warning (p)"), "{text}");
    assert!(!text.contains("error"), "a note is not an error: {text}");
    press(&mut app, "p");
    let text = screen_text(&app);
    let warning = text
        .find("traces/a.json:2: arguments guessed")
        .expect(&text);
    let heading = text.find("notes (1)").expect(&text);
    let note = text
        .find("note: traces/run.log: skipped: not a trace")
        .expect(&text);
    assert!(warning < heading && heading < note, "{text}");
}

#[test]
fn tiny_and_odd_terminal_sizes_do_not_panic() {
    for (w, h) in [(1, 1), (2, 2), (10, 3), (20, 5), (33, 7), (300, 4)] {
        let mut app = sample_app(w, h);
        for keys in ["", "<tab>n", "<tab>f", "?", "<esc>p", "<esc>r/x"] {
            press(&mut app, keys);
            let _ = screen_text(&app);
        }
    }
}

#[test]
fn reveal_flag_starts_revealed() {
    let mut app = App::new(
        crate::support::sample_store(),
        toolcap::tui::config::from_toml("", false),
        Reveal::Revealed,
    );
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 120,
            height: 40,
        },
    );
    press(&mut app, "<tab>nf");
    let text = screen_text(&app);
    assert!(text.contains("REVEALED"));
    assert!(text.contains(SECRET_CITY));
}

#[test]
fn a_search_that_filters_out_the_selection_selects_the_first_match() {
    let mut app = sample_app(80, 24);
    press(&mut app, "jj");
    assert_eq!(app.selected_invocation.as_deref(), Some("hostile"));
    press(&mut app, "/invoke_agent<enter>");
    // hostile's name does not match; trip (newest match) is selected, not the second row.
    assert_eq!(app.list.ids(), ["trip", "summ"]);
    assert_eq!(app.selected_invocation.as_deref(), Some("trip"));
}

#[test]
fn until_the_user_picks_a_run_the_cursor_follows_the_newest() {
    let mut app = sample_app(80, 24);
    assert_eq!(app.selected_invocation.as_deref(), Some("trip"));
    let newer = Span {
        trace_id: "newer".into(),
        span_id: "n1".into(),
        name: "fresh run".into(),
        start_unix_nano: T0 + 10_000_000_000,
        end_unix_nano: T0 + 11_000_000_000,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        ..Default::default()
    };
    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            spans: vec![newer],
            ..Default::default()
        }),
    );
    assert_eq!(app.selected_invocation.as_deref(), Some("newer"));
    assert_eq!(selected_span_name(&app), "fresh run");
}

#[test]
fn a_rewritten_file_replaces_the_payload_shown_for_the_same_span() {
    use toolcap::model::{Origin, Payload};
    let path = std::path::PathBuf::from("/traces/live.jsonl");
    let version = |value: &str| Span {
        trace_id: "live".into(),
        span_id: "only".into(),
        name: "live run".into(),
        start_unix_nano: T0 + 20_000_000_000,
        end_unix_nano: T0 + 21_000_000_000,
        extras: toolcap::model::SpanExtras {
            input: Payload::inline("input", format!("{{\"v\":\"{value}\"}}")).into(),
            ..Default::default()
        }
        .into(),
        provenance: toolcap::model::Provenance::shared(
            Some(&std::sync::Arc::new(Origin::File(std::sync::Arc::new(
                path.clone(),
            )))),
            None,
            "test".into(),
        ),
        ..Default::default()
    };
    let mut app = sample_app(120, 40);
    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            spans: vec![version("old-value")],
            ..Default::default()
        }),
    );
    press(&mut app, "r");
    assert!(screen_text(&app).contains("old-value"));
    app::ingest_many(
        &mut app,
        [
            IngestEvent::Forget(path.clone()),
            IngestEvent::Batch(Batch {
                spans: vec![version("new-value")],
                ..Default::default()
            }),
        ],
    );
    let text = screen_text(&app);
    assert!(text.contains("new-value"), "{text}");
    assert!(!text.contains("old-value"));
}

#[test]
fn the_footer_shows_the_keys_that_matter_first_and_cuts_no_hint() {
    let app = sample_app(160, 30);
    let footer = screen_text(&app).lines().last().unwrap().to_owned();
    for hint in [
        "n next failure",
        "? help",
        "/ search",
        "r reveal",
        "d gold diff",
        "x export",
        "y copy",
    ] {
        assert!(footer.contains(hint), "{hint} missing: {footer}");
    }
    let narrow = sample_app(60, 30);
    let footer = screen_text(&narrow)
        .lines()
        .last()
        .unwrap()
        .trim_end()
        .to_owned();
    assert!(footer.contains("? help"), "{footer}");
    // Whole hints only: the last one ends with its label, not a cut word.
    assert!(
        ["help", "search", "reveal", "open"]
            .iter()
            .any(|label| footer.ends_with(label)),
        "{footer}"
    );
}

/// A file written again (an Inspect eval flushing its log, an exporter rewriting its document)
/// is read anew and replaces what it gave: the run and the span the user was reading stay
/// under the cursor, whether the replacement comes as a forgetting and the new runs in one
/// drain, or as one batch that replaces the file's runs (what the watcher sends). Forgotten
/// alone, the file takes its runs along, verdicts included.
#[test]
fn a_rewritten_file_keeps_the_run_and_the_span_under_the_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.eval");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "tests/fixtures/inspect-ai/B/2026-12-05T23-42-01-00-00_geo-tools_DV5fX5XLZzgvXkffEiooEW.eval",
        ),
        &log,
    )
    .unwrap();
    let mut app = crate::support::app_over_source(&log, 130, 40);
    press(&mut app, "jjj<tab>jjjjj");
    let picked = |app: &App| {
        let inv = app.invocation().unwrap();
        let span = &inv.spans[app.selected_span_index().unwrap()];
        (
            inv.id.to_string(),
            span.span_id.to_string(),
            span.name.to_string(),
        )
    };
    let before = picked(&app);
    assert_eq!(before.2, "generate", "the test picks a span below the root");
    let batch = || toolcap::sources::files::load_file(&log).batch;

    app::ingest_many(
        &mut app,
        [
            IngestEvent::Forget(log.clone()),
            IngestEvent::Batch(batch()),
        ],
    );
    assert_eq!(picked(&app), before);

    app::ingest(
        &mut app,
        IngestEvent::Batch(Batch {
            replaces: Some(log.clone()),
            ..batch()
        }),
    );
    assert_eq!(picked(&app), before);
    assert_eq!(app.store.len(), 8);

    app::ingest(&mut app, IngestEvent::Forget(log.clone()));
    assert_eq!(
        app.store.len(),
        0,
        "no run is left holding a verdict of a forgotten file"
    );
}
