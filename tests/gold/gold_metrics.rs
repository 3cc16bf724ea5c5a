//! Metric edge cases from the toolscore note (§4), each expected value worked out by hand.

use serde_json::{Value, json};
use toolcap::gold::compare::CompareMode;
use toolcap::gold::metrics::{Weights, best_pairing, evaluate};
use toolcap::gold::{ActualCall, Args, GoldCall};

fn args(v: Value) -> Args {
    v.as_object().cloned().unwrap_or_default()
}
fn g(tool: &str, a: Option<Value>) -> GoldCall {
    GoldCall {
        tool: tool.into(),
        args: a.map(args),
        ..GoldCall::default()
    }
}
fn t(tool: &str, a: Value) -> ActualCall {
    ActualCall::new(tool, args(a))
}
fn run(gold: &[GoldCall], actual: &[ActualCall]) -> toolcap::gold::metrics::Metrics {
    evaluate(gold, actual, CompareMode::Lenient, Weights::default())
}

#[test]
fn permuted_repeats_pair_by_arguments_not_order() {
    // h13: the same tool three times in another order still gives F1 = 1.0,
    // while the positional trajectory scores 0 of 3.
    let gold = [
        g("search", Some(json!({"q": "a"}))),
        g("search", Some(json!({"q": "b"}))),
        g("search", Some(json!({"q": "c"}))),
    ];
    let actual = [
        t("search", json!({"q": "c"})),
        t("search", json!({"q": "a"})),
        t("search", json!({"q": "b"})),
    ];
    let m = run(&gold, &actual);
    assert_eq!(m.arguments.f1, 1.0);
    assert_eq!(m.pairing, vec![Some(1), Some(2), Some(0)]);
    assert_eq!(m.trajectory.correct_steps, 0);
    assert_eq!(m.sequence.edit_distance, 0);
}

#[test]
fn ties_go_to_the_earliest_trace_call() {
    // Both trace calls have 0 correct keys; toolscore's DP keeps the first maximum found,
    // which pairs gold 0 with trace 0. Precision then counts trace 0's 1 key, not trace 1's 3.
    let gold = [g("f", Some(json!({"x": 1})))];
    let actual = [
        t("f", json!({"y": 1})),
        t("f", json!({"a": 1, "b": 2, "c": 3})),
    ];
    assert_eq!(
        best_pairing(&gold, &actual, CompareMode::Lenient),
        vec![Some(0)]
    );
    let m = run(&gold, &actual);
    assert_eq!(
        (
            m.arguments.correct,
            m.arguments.actual,
            m.arguments.expected
        ),
        (0, 1, 1)
    );
}

#[test]
fn more_than_twelve_same_name_calls_pair_greedily() {
    let gold: Vec<GoldCall> = (0..13).map(|i| g("f", Some(json!({"i": i})))).collect();
    let actual: Vec<ActualCall> = (0..13).rev().map(|i| t("f", json!({"i": i}))).collect();
    let pairing = best_pairing(&gold, &actual, CompareMode::Lenient);
    // Greedy by best weight: gold i finds {"i": i} at trace position 12 - i.
    for (i, p) in pairing.iter().enumerate() {
        assert_eq!(*p, Some(12 - i));
    }
    assert_eq!(run(&gold, &actual).arguments.f1, 1.0);
}

#[test]
fn empty_cases_follow_toolscore() {
    // Empty vs empty: everything perfect, score 1.0.
    let m = run(&[], &[]);
    assert!((m.score - 1.0).abs() < 1e-12);
    assert_eq!(m.required_call_recall, None);
    // h09: an empty trace against a non-empty gold scores 0.1 (redundant_rate is 0).
    let m = run(&[g("a", None)], &[]);
    assert!((m.score - 0.1).abs() < 1e-12, "{}", m.score);
    assert_eq!(m.grade, "F");
    // Empty gold with calls made: 0.
    let m = run(&[], &[t("a", json!({}))]);
    assert_eq!(m.score, 0.0);
}

#[test]
fn swap_costs_two_edits() {
    let m = run(
        &[g("a", None), g("b", None)],
        &[t("b", json!({})), t("a", json!({}))],
    );
    assert_eq!(m.sequence.edit_distance, 2);
    assert_eq!(m.sequence.sequence_accuracy, 0.0);
}

#[test]
fn efficiency_counts_redundant_identical_errors_and_retries() {
    let gold = [g("fetch", None)];
    let mut actual = vec![
        t("fetch", json!({"u": 1})),
        t("fetch", json!({"u": 1})),
        t("fetch", json!({"u": 1})),
        t("other", json!({})),
    ];
    actual[0].failed = true;
    actual[1].failed = true;
    let m = run(&gold, &actual);
    let e = &m.efficiency;
    // 3 fetch for 1 expected + 1 unexpected tool = 3 redundant; 2 exact repeats;
    // 2 errors; (0 failed, 1 same) and (1 failed, 2 same) are retries.
    assert_eq!(e.redundant_count, 3);
    assert_eq!(e.identical_count, 2);
    assert_eq!(e.error_count, 2);
    assert_eq!(e.retry_after_error_count, 2);
    // The one required fetch is met by the third, successful attempt.
    assert_eq!(m.required_call_recall, Some(1.0));
}

#[test]
fn expect_no_arguments_lowers_precision() {
    // v08-like: gold {} but the call passes one argument → actual 1, correct 0.
    let m = run(
        &[g("whoami", Some(json!({})))],
        &[t("whoami", json!({"verbose": true}))],
    );
    assert_eq!(
        (
            m.arguments.correct,
            m.arguments.actual,
            m.arguments.expected
        ),
        (0, 1, 0)
    );
    assert_eq!(m.arguments.f1, 0.0);
    // …while gold {} with a call without arguments is a vacuous perfect match.
    let m = run(&[g("whoami", Some(json!({})))], &[t("whoami", json!({}))]);
    assert_eq!(m.arguments.f1, 1.0);
}

#[test]
fn strict_mode_stops_coercion() {
    let gold = [g("f", Some(json!({"n": 1, "s": "x"})))];
    let actual = [t("f", json!({"n": 1.0, "s": " x"}))];
    assert_eq!(run(&gold, &actual).arguments.f1, 1.0);
    let strict = evaluate(&gold, &actual, CompareMode::Strict, Weights::default());
    assert_eq!(strict.arguments.f1, 0.0);
}
