//! The triage loop driven through the real keymap over fixture runs: facets in the list, the
//! failure queue (`n`/`N`, `]`/`[`), the verdict block, conversation rows and sorting, and the
//! mouse-capture toggle. Fixtures are in `tests/fixtures/triage` (see SOURCES.md there).

use std::collections::HashSet;
use std::path::PathBuf;

use toolcap::model::Id;
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App, ListRow, Pane, SortKey};
use toolcap::tui::config;

use crate::support::{app_over_source, press, screen_text, span};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/triage")
        .join(name)
}

fn app_over(name: &str, width: u16, height: u16) -> App {
    app_over_source(&fixture(name), width, height)
}

/// (invocation name, selected span name) of the selection.
fn at(app: &App) -> (String, String) {
    let inv = app.invocation().expect("an invocation is selected");
    let span = &inv.spans[app.selected_span_index().expect("a span is selected")];
    (inv.summary().name.to_string(), span.name.to_string())
}

fn status_line(app: &App) -> String {
    let screen = screen_text(app);
    let lines: Vec<&str> = screen.lines().collect();
    lines[lines.len() - 2].to_owned()
}

fn detail_text(app: &App) -> String {
    app.detail
        .content
        .lines
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

const REFUND_REASON: &str =
    "The user said not to refund anything; the agent called issue_refund anyway.";

#[test]
fn a_turn_judged_failed_without_span_errors_is_failing_and_n_lands_on_its_verdict() {
    let mut app = app_over("judged-only", 120, 40);
    assert_eq!(app.triage.failing, 1);
    assert!(
        status_line(&app).contains("1 of 3 runs failing"),
        "{}",
        status_line(&app)
    );
    let list = screen_text(&app);
    let row = list
        .lines()
        .find(|l| l.contains("refund_policy · turn 1"))
        .expect("the judged turn is listed");
    assert!(row.contains('⚑'), "facet glyph: {row}");
    assert!(row.contains("✗ 1.00 disobey user request"), "label: {row}");
    assert!(!row.contains('✓'), "no green tick on a failed turn: {row}");

    // From opening: one key reaches the failing turn, and its detail opens on the verdict.
    press(&mut app, "n");
    assert_eq!(
        at(&app),
        (
            "refund_policy · turn 1".to_owned(),
            "arksim turn 1".to_owned()
        )
    );
    assert_eq!(app.detail.scroll, 0);
    let detail = detail_text(&app);
    assert!(detail.starts_with("── verdict · ⚑ failing ──"), "{detail}");
    assert!(detail.contains("disobey user request"), "{detail}");
    assert!(
        screen_text(&app).contains("The user said not to refund anything"),
        "the reason is on screen without scrolling"
    );
    assert!(detail.replace('\n', "").contains(REFUND_REASON), "{detail}");
    assert!(status_line(&app).contains("failure 1 of 1"));

    // The only failure: the queue wraps onto it and says so.
    press(&mut app, "n");
    assert_eq!(at(&app).0, "refund_policy · turn 1");
    assert!(
        status_line(&app).contains("wrapped"),
        "{}",
        status_line(&app)
    );
}

/// On a terminal too narrow for the counts and a message, the message answers the key whole:
/// the counts give way to it until the next key.
#[test]
fn a_message_the_counts_leave_no_room_for_stands_alone() {
    let mut app = app_over("judged-only", 80, 30);
    press(&mut app, "n");
    let counts = status_line(&app);
    assert!(
        counts.contains("1 of 3 runs failing · failure 1 of 1"),
        "{counts}"
    );
    press(&mut app, "n");
    let with_message = status_line(&app);
    assert!(
        with_message.starts_with(" REDACTED  failure queue wrapped"),
        "{with_message}"
    );
    assert!(!with_message.contains("invocations"), "{with_message}");
    // Wide enough, the message follows the counts.
    app::update(
        &mut app,
        Action::Resize {
            width: 120,
            height: 30,
        },
    );
    let wide = status_line(&app);
    assert!(
        wide.contains("failure 1 of 1 · failure queue wrapped"),
        "{wide}"
    );
}

#[test]
fn the_evaluation_span_of_a_failed_turn_is_an_error_not_ok() {
    let mut app = app_over("judged-only", 120, 40);
    press(&mut app, "n<tab>j");
    assert_eq!(app.focus, Pane::Tree);
    assert_eq!(at(&app).1, "arksim evaluation");
    let detail = detail_text(&app);
    assert!(detail.contains("✗ error"), "{detail}");
    assert!(
        detail.contains("evaluation failed: disobey user request"),
        "{detail}"
    );
    // The turn itself is not degraded by its evaluator: its span facet stays ok.
    let facets = app.facets().unwrap();
    assert!(!facets.span_failed() && facets.eval_failed());
}

#[test]
fn n_walks_every_failing_turn_and_failed_span_of_the_arksim_run_in_reading_order() {
    let mut app = app_over("arksim-run", 140, 50);
    let total = app.triage.stops.len();
    assert!(total >= 7, "stops: {:?}", app.triage.stops);
    let failing: HashSet<String> = app
        .list
        .ids()
        .into_iter()
        .filter(|id| app.facets_of(id).is_some_and(|f| f.failing()))
        .collect();
    assert_eq!(app.triage.failing, failing.len());
    assert!(
        status_line(&app).contains(&format!("{} of 7 runs failing", failing.len())),
        "{}",
        status_line(&app)
    );

    // Start before the first stop, then n visits each stop once, in order.
    press(&mut app, "g");
    let mut visited = Vec::new();
    let mut last_place = None;
    for k in 1..=total {
        press(&mut app, "n");
        let stop = app.stop(k - 1).unwrap();
        assert_eq!(
            (
                app.selected_invocation.clone().unwrap(),
                app.selected_span_index().unwrap()
            ),
            stop,
            "stop {k}"
        );
        assert!(
            status_line(&app).contains(&format!("failure {k} of {total}")),
            "{}",
            status_line(&app)
        );
        // Reading order: list position, then tree row, strictly increasing.
        let inv = app.invocation().unwrap();
        let place = (
            app.selected_order_position().unwrap(),
            inv.tree().row_of(stop.1).unwrap(),
        );
        assert!(last_place < Some(place), "{last_place:?} then {place:?}");
        last_place = Some(place);
        visited.push(at(&app));
    }
    let visited_runs: HashSet<String> = (0..total).map(|k| app.stop(k).unwrap().0).collect();
    assert_eq!(visited_runs, failing, "every failing run is visited");
    // Failed tool calls are stops of their own, after their turn's verdict.
    assert!(
        visited
            .iter()
            .any(|(run, span)| run == "order_missing · turn 0" && span == "lookup_order"),
        "{visited:?}"
    );
    // The turn judged failed while none of its spans errored (shown ✓ beside ✗ 5.00 before).
    let cancel = visited
        .iter()
        .position(|(run, _)| run == "cancel_order · turn 0")
        .expect("cancel_order turn 0 is a stop");
    assert_eq!(visited[cancel].1, "arksim turn 0");

    // N walks back.
    press(&mut app, "N");
    assert!(status_line(&app).contains(&format!("failure {} of {total}", total - 1)));
}

#[test]
fn the_verdict_block_quotes_the_evaluator_and_lists_failed_spans() {
    let mut app = app_over("arksim-run", 140, 50);
    while at(&app).0 != "cancel_order · turn 0" {
        press(&mut app, "]");
    }
    let detail = detail_text(&app).replace('\n', "");
    assert!(
        detail.contains("[Trajectory] Unexpected extra tool calls: get_weather."),
        "{detail}"
    );
    assert!(detail.contains("disobey user request"));
    while at(&app).0 != "order_missing · turn 0" {
        press(&mut app, "]");
    }
    let detail = detail_text(&app);
    assert!(detail.contains("failed spans (1)"), "{detail}");
    assert!(detail.contains("lookup_order"), "{detail}");
    assert!(
        detail.contains("Error running tool (non-fatal)"),
        "{detail}"
    );
}

#[test]
fn n_and_brackets_work_from_every_pane() {
    for focus_keys in ["", "<tab>", "<tab><tab>"] {
        let mut app = app_over("arksim-run", 140, 50);
        // The list's top row (a conversation row) sits before every failure.
        press(&mut app, "g");
        press(&mut app, focus_keys);
        let focus = app.focus;
        press(&mut app, "n");
        assert_eq!(
            (
                app.selected_invocation.clone().unwrap(),
                app.selected_span_index().unwrap()
            ),
            app.stop(0).unwrap(),
            "n from {focus:?}"
        );
        assert_eq!(app.focus, focus, "n keeps the focus");
        let first_run = app.selected_invocation.clone();
        press(&mut app, "]");
        assert_ne!(app.selected_invocation, first_run, "] from {focus:?}");
        let stop = (0..app.triage.stops.len())
            .position(|k| app.stop(k).map(|s| s.0) == app.selected_invocation);
        assert_eq!(
            app.selected_span_index(),
            stop.and_then(|k| app.triage.stop(k)).map(|(_, span)| span),
            "] lands on the run's first failure"
        );
        press(&mut app, "[");
        assert_eq!(app.selected_invocation, first_run, "[ from {focus:?}");
    }
}

#[test]
fn arksim_turns_group_under_their_conversation_in_turn_order_and_fold() {
    let mut app = app_over("judged-only", 120, 40);
    let conversation_row = app
        .list
        .rows()
        .iter()
        .position(|r| {
            matches!(r, ListRow::Conversation { turns: 2, .. })
                && app.list.conversation_id(r) == Some("conv-refund")
        })
        .expect("conv-refund has a conversation row");
    let turns: Vec<&Id> = app.list.rows()[conversation_row + 1..conversation_row + 3]
        .iter()
        .map(|r| app.list.row_id(r).unwrap_or_else(|| panic!("{r:?}")))
        .collect();
    assert_eq!(
        turns,
        [
            "sim-judged-only/conv-refund/turn-0",
            "sim-judged-only/conv-refund/turn-1"
        ]
    );
    // The single-turn conversation is not grouped.
    assert!(app.list.rows().iter().any(|r| {
        app.list
            .row_id(r)
            .is_some_and(|id| id == "sim-judged-only/conv-hours/turn-0")
    }));
    let inv = app.store.get("sim-judged-only/conv-refund/turn-1").unwrap();
    assert_eq!(inv.conversation_id(), Some("conv-refund"));
    let screen = screen_text(&app);
    let header = screen
        .lines()
        .find(|l| l.contains("▾ 2 turns · conv-refund"))
        .unwrap();
    assert!(header.contains("✗ Failed · goal 0.00"), "{header}");

    // Fold: h on a turn folds its conversation and the cursor moves to the conversation row.
    while app.selected_invocation.as_deref() != Some("sim-judged-only/conv-refund/turn-0") {
        press(&mut app, "j");
    }
    press(&mut app, "h");
    assert!(app.folded_conversations.contains("conv-refund"));
    assert_eq!(app.list.rows().len(), 2);
    assert_eq!(app.selected_list_position(), Some(conversation_row));
    // The queue still reaches a turn inside a folded conversation, unfolding it.
    press(&mut app, "n");
    assert_eq!(
        app.selected_invocation.as_deref(),
        Some("sim-judged-only/conv-refund/turn-1")
    );
    assert!(!app.folded_conversations.contains("conv-refund"));
    // Space on the conversation row toggles it.
    press(&mut app, "h<space>");
    assert!(!app.folded_conversations.contains("conv-refund"));
}

#[test]
fn genai_conversation_ids_and_openinference_sessions_group_runs() {
    let app = app_over("conversations/genai-conversation.otlp.json", 120, 40);
    let conversations: Vec<(String, usize)> = app
        .list
        .rows()
        .iter()
        .filter_map(|r| match r {
            ListRow::Conversation { turns, .. } => {
                Some((app.list.conversation_id(r)?.to_owned(), *turns as usize))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        conversations,
        [("sess-9".to_owned(), 2), ("chat-42".to_owned(), 2)]
    );
    // chat-7 has one run: a plain row.
    assert!(app.list.rows().iter().any(|r| {
        app.list
            .row_id(r)
            .is_some_and(|id| id == "33333333333333333333333333333333")
    }));
    let pos = |id: &str| app.list.position(id).unwrap();
    assert!(
        pos("11111111111111111111111111111111") < pos("22222222222222222222222222222222"),
        "turns in start order inside their conversation, whatever the list sort"
    );
}

#[test]
fn openai_agents_group_ids_group_traces() {
    let app = app_over("conversations/openai-agents-groups.jsonl", 120, 40);
    let grouped: Vec<(String, usize)> = app
        .list
        .rows()
        .iter()
        .filter_map(|r| match r {
            ListRow::Conversation { turns, .. } => {
                Some((app.list.conversation_id(r)?.to_owned(), *turns as usize))
            }
            _ => None,
        })
        .collect();
    assert!(
        grouped
            .iter()
            .any(|(id, turns)| id == "conv-demo-001" && *turns >= 2),
        "{grouped:?}"
    );
    let mut nested = 0;
    for inv in app.list.runs() {
        let id = inv.id.to_string();
        if let Some(conversation) = app.list.conversation_of(&id) {
            assert_eq!(
                app.store.get(&id).unwrap().conversation_id(),
                Some(conversation)
            );
            nested += 1;
        }
    }
    assert!(nested >= 2, "{nested} runs grouped");
}

#[test]
fn s_cycles_the_sort_key_and_the_list_header_says_which() {
    let mut app = app_over("arksim-run", 140, 50);
    assert_eq!(app.sort, SortKey::Start);
    assert!(screen_text(&app).contains("newest first (s)"));
    let expected = [
        (SortKey::Duration, "longest first"),
        (SortKey::Tokens, "most tokens first"),
        (SortKey::FailedTools, "most failed tools first"),
        (SortKey::Score, "lowest score first"),
        (SortKey::Start, "newest first"),
    ];
    for (key, label) in expected {
        press(&mut app, "s");
        assert_eq!(app.sort, key);
        assert!(
            screen_text(&app).contains(&format!("{label} (s)")),
            "{label}"
        );
    }
    press(&mut app, "ssss");
    assert_eq!(app.sort, SortKey::Score);
    // Lowest score first: the first listed run with a score has the lowest one.
    let scores: Vec<f64> = app
        .list
        .rows()
        .iter()
        .filter_map(|r| match r {
            ListRow::Invocation(_) => app.store.get(app.list.row_id(r)?)?.eval()?.score,
            ListRow::Conversation { .. } => None,
        })
        .collect();
    assert!(!scores.is_empty());
    let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(scores[0], min, "{scores:?}");
}

#[test]
fn m_toggles_mouse_capture_and_help_lists_the_new_keys() {
    let mut app = app_over("judged-only", 120, 60);
    assert!(app.mouse_capture);
    press(&mut app, "M");
    assert!(!app.mouse_capture);
    // The key's own message first (it leaves the counts no room), then the standing mark.
    assert!(
        status_line(&app).contains("(M captures again)"),
        "{}",
        status_line(&app)
    );
    press(&mut app, "<down>");
    assert!(
        status_line(&app).contains("mouse off (M)"),
        "{}",
        status_line(&app)
    );
    press(&mut app, "M");
    assert!(app.mouse_capture);
    press(&mut app, "?");
    let help = screen_text(&app);
    for text in [
        "next failure",
        "next failing run",
        "previous failing run",
        "mouse capture (off: select text)",
        "cycle sort",
    ] {
        assert!(help.contains(text), "help lacks {text}:\n{help}");
    }
}

/// A drain that changes some failing runs rebuilds the queue; the facets of runs it did not
/// touch are reused from the previous queue. The result equals a queue built from scratch
/// over the same spans, and the changed runs' new failures are in it.
#[test]
fn the_failure_queue_after_a_drain_equals_one_built_from_scratch() {
    use toolcap::model::{Batch, Span, SpanKind, SpanStatus};
    use toolcap::sources::IngestEvent;

    let root = |trace: &str| {
        span(
            trace,
            &format!("{trace}-root"),
            None,
            trace,
            SpanKind::Agent,
            0,
            100,
        )
    };
    let failed = |trace: &str, id: &str, start: u64| {
        let parent = format!("{trace}-root");
        let mut s = span(
            trace,
            id,
            Some(&parent),
            id,
            SpanKind::Tool,
            start,
            start + 10,
        );
        s.status = SpanStatus::Error;
        s
    };
    let first: Vec<Span> = vec![
        root("a"),
        failed("a", "a-1", 10),
        root("b"),
        failed("b", "b-1", 10),
        root("c"),
    ];
    let second: Vec<Span> = vec![failed("b", "b-2", 20), failed("c", "c-1", 10)];
    let batch = |spans: Vec<Span>| Batch {
        spans,
        ..Default::default()
    };
    let new_app = || {
        let mut app = App::new(Store::new(), config::from_toml("", false), Reveal::Redacted);
        app::update(
            &mut app,
            Action::Resize {
                width: 120,
                height: 40,
            },
        );
        app
    };

    let mut live = new_app();
    app::ingest(&mut live, IngestEvent::Batch(batch(first.clone())));
    assert_eq!(live.triage.failing, 2);
    let stops_before = live.triage.stops.len();
    app::ingest(&mut live, IngestEvent::Batch(batch(second.clone())));

    let mut fresh = new_app();
    let mut all = first;
    all.extend(second);
    app::ingest(&mut fresh, IngestEvent::Batch(batch(all)));

    assert_eq!(live.triage.failing, 3);
    assert_eq!(live.triage.stops.len(), stops_before + 2);
    assert_eq!(live.triage.stops, fresh.triage.stops);
}
