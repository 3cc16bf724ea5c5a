//! Snapshot tests of the TUI diff view (ratatui TestBackend + insta), at 80x24 and 120x40.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::{Value, json};
use toolcap::gold::align::{Alignment, RowKind};
use toolcap::gold::report::{CheckOptions, DiffReport};
use toolcap::gold::{ActualCall, Args, GoldCall, GoldSpec};
use toolcap::redact::Reveal;
use toolcap::tui::action::Action;
use toolcap::tui::overlays::diff::{DiffAction, DiffViewState, apply, render};

fn args(value: Value) -> Args {
    value.as_object().cloned().unwrap_or_default()
}

fn gold(calls: &[(&str, Value)]) -> GoldSpec {
    GoldSpec {
        calls: calls
            .iter()
            .map(|(tool, a)| GoldCall {
                tool: tool.to_string(),
                args: Some(args(a.clone())),
                ..GoldCall::default()
            })
            .collect(),
        source: "gold.json".into(),
        ..GoldSpec::default()
    }
}

fn actual(calls: &[(&str, Value)]) -> Vec<ActualCall> {
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, a))| ActualCall {
            span: Some(i * 2 + 1),
            ..ActualCall::new(*tool, args(a.clone()))
        })
        .collect()
}

fn report(gold_calls: &[(&str, Value)], actual_calls: Vec<ActualCall>) -> DiffReport {
    let mut r = DiffReport::build(
        "inv-1",
        gold(gold_calls),
        actual_calls,
        CheckOptions::default(),
    );
    r.name = Some("agent run".into());
    r
}

fn draw(
    report: &DiffReport,
    width: u16,
    height: u16,
    reveal: Reveal,
) -> (String, ratatui::buffer::Buffer) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    let state = DiffViewState::new(report);
    terminal
        .draw(|frame| {
            render(
                frame,
                frame.area(),
                report,
                &state,
                reveal,
                &toolcap::tui::config::Config::default(),
            )
        })
        .expect("draw");
    let buffer = terminal.backend().buffer().clone();
    let mut text = String::new();
    for y in 0..height {
        let line: String = (0..width)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    (text, buffer)
}

fn snapshot(name: &str, report: &DiffReport) -> (String, String) {
    let (small, _) = draw(report, 80, 24, Reveal::Revealed);
    let (large, _) = draw(report, 120, 40, Reveal::Revealed);
    insta::with_settings!({snapshot_path => "../fixtures/gold/snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(format!("{name}_80x24"), small);
        insta::assert_snapshot!(format!("{name}_120x40"), large);
    });
    (small, large)
}

#[test]
fn missing_call() {
    let r = report(
        &[
            ("search", json!({"q": "rust"})),
            ("fetch", json!({"url": "https://docs.rs"})),
        ],
        actual(&[("search", json!({"q": "rust"}))]),
    );
    let (small, _) = snapshot("missing_call", &r);
    assert!(small.contains("− missing"));
    assert!(small.contains("the agent never made this call"));
}

#[test]
fn extra_call() {
    let r = report(
        &[("search", json!({"q": "rust"}))],
        actual(&[("search", json!({"q": "rust"})), ("delete_all", json!({}))]),
    );
    let (small, _) = snapshot("extra_call", &r);
    assert!(small.contains("+ extra"));
    assert!(small.contains("delete_all()"));
}

#[test]
fn swap_is_shown_as_a_move() {
    let r = report(
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("get_time", json!({"tz": "Europe/Paris"})),
        ],
        actual(&[
            ("get_time", json!({"tz": "Europe/Paris"})),
            ("get_weather", json!({"city": "Paris"})),
        ]),
    );
    let (small, _) = snapshot("swap_move", &r);
    assert!(small.contains("↕ moved (actual #2)"));
    assert_eq!(
        r.rows
            .iter()
            .filter(|row| row.kind == RowKind::Moved)
            .count(),
        1
    );
}

#[test]
fn wrong_argument_names_its_leaf_path() {
    let r = report(
        &[("post", json!({"body": {"meta": {"prio": 1}, "text": "hi"}}))],
        actual(&[("post", json!({"body": {"meta": {"prio": 2}, "text": "hi"}}))]),
    );
    let (small, _) = snapshot("wrong_argument_leaf", &r);
    assert!(small.contains("body.meta.prio: 1 → 2  differs"));
    assert!(small.contains("≠ argument mismatch"));
}

#[test]
fn failed_call_with_correct_arguments_is_shown_failed() {
    let mut calls = actual(&[("refund", json!({"order_id": "A-17", "amount": 12.5}))]);
    calls[0].failed = true;
    calls[0].error = Some("gateway timed out".into());
    let r = report(
        &[("refund", json!({"order_id": "A-17", "amount": 12.5}))],
        calls,
    );
    let (small, buffer) = draw(&r, 80, 24, Reveal::Revealed);
    snapshot("failed_call", &r);
    assert!(small.contains("✗ failed"));
    assert!(small.contains("FAILED: gateway timed out"));
    assert!(!small.contains("✓ match"));
    // The row is red, like a missing call.
    let y = small
        .lines()
        .position(|l| l.contains("✗ failed"))
        .expect("row drawn") as u16;
    let x = small
        .lines()
        .nth(y as usize)
        .and_then(|l| l.find("refund"))
        .map(|b| {
            small.lines().nth(y as usize).unwrap_or("")[..b]
                .chars()
                .count()
        })
        .expect("cell") as u16;
    assert_eq!(buffer[(x, y)].fg, Color::Red);
}

#[test]
fn coerced_argument_shows_its_reason() {
    let r = report(
        &[("set_params", json!({"n": 1, "city": "NYC", "flag": 1}))],
        actual(&[(
            "set_params",
            json!({"n": 1.0, "city": " NYC ", "flag": true}),
        )]),
    );
    let (small, _) = snapshot("coerced_argument", &r);
    assert!(small.contains("equal after coercion (int↔float)"));
    assert!(small.contains("equal after coercion (surrounding whitespace)"));
    assert!(small.contains("equal after coercion (bool↔number)"));
    assert!(small.contains("✓ match"));
}

#[test]
fn redacted_view_shows_shapes_not_values() {
    let r = report(
        &[("login", json!({"user": "alice", "password": "hunter2"}))],
        actual(&[("login", json!({"user": "alice", "password": "hunter3"}))]),
    );
    let (text, _) = draw(&r, 120, 40, Reveal::Redacted);
    assert!(
        !text.contains("alice") && !text.contains("hunter"),
        "{text}"
    );
    assert!(text.contains("str(5)"), "{text}");
    let (revealed, _) = draw(&r, 120, 40, Reveal::Revealed);
    assert!(
        revealed.contains("alice") && !revealed.contains("hunter"),
        "{revealed}"
    );
}

#[test]
fn untrusted_text_is_made_inert() {
    let r = report(
        &[("x\u{1b}[2J", json!({}))],
        actual(&[("x\u{1b}[2J", json!({}))]),
    );
    let (text, _) = draw(&r, 80, 24, Reveal::Revealed);
    assert!(!text.contains('\u{1b}'));
    assert!(text.contains("␛[2J"));
}

#[test]
fn keys_jump_between_differences_and_switch_alignment() {
    let mut r = report(
        &[
            ("a", json!({})),
            ("b", json!({})),
            ("c", json!({"k": 1})),
            ("d", json!({})),
        ],
        actual(&[
            ("a", json!({})),
            ("x", json!({})),
            ("c", json!({"k": 2})),
            ("d", json!({})),
        ]),
    );
    let mut state = DiffViewState::new(&r);
    assert_eq!(state.selected_row, 1, "starts on the first difference");
    assert_eq!(
        apply(&mut state, &mut r, Action::NextDifference),
        DiffAction::None
    );
    assert_eq!(state.selected_row, 2);
    apply(&mut state, &mut r, Action::NextDifference);
    assert_eq!(state.selected_row, 2, "no further difference");
    apply(&mut state, &mut r, Action::PrevDifference);
    assert_eq!(state.selected_row, 1);
    assert_eq!(
        apply(&mut state, &mut r, Action::GoToCall),
        DiffAction::JumpToSpan(3)
    );
    apply(&mut state, &mut r, Action::CycleAlignment);
    assert_eq!(state.alignment, Alignment::Position);
    assert_eq!(r.options.alignment, Alignment::Position);
    apply(&mut state, &mut r, Action::CycleAlignment);
    assert_eq!(r.options.alignment, Alignment::Name);
    // By name, the gold's b and the actual x cannot pair: b is missing, x is extra.
    assert!(r.rows.iter().any(|row| row.kind == RowKind::Missing));
    assert!(r.rows.iter().any(|row| row.kind == RowKind::Extra));
    assert_eq!(apply(&mut state, &mut r, Action::Cancel), DiffAction::Close);
}
