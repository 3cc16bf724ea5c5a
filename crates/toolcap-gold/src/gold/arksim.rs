//! arksim's deterministic trajectory matcher (`match_mode` strict / unordered / contains /
//! within; per-call `arg_match_mode` ignore / exact / partial), recomputed so the diff can show
//! the missing and extra calls that arksim's files no longer record. Matching is greedy and
//! first-fit over all calls of the conversation; a call's error does not matter.

use super::compare::py_eq;
use super::{ActualCall, Args, GoldCall, GoldSpec};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArksimVerdict {
    pub matched: bool,
    /// The behaviour-failure label arksim would attach (`disobey user request`, …).
    pub failure_label: Option<&'static str>,
    pub reason: String,
    pub missing_calls: Vec<String>,
    pub extra_calls: Vec<String>,
    pub ordering_issues: Vec<String>,
}

const DISOBEY: &str = "disobey user request";

fn arg_mode<'a>(call: &'a GoldCall, spec: &'a GoldSpec) -> &'a str {
    call.arg_match_mode
        .as_deref()
        .or(spec.arg_match_mode.as_deref())
        .unwrap_or("ignore")
}

fn args_match(actual: &Args, expected: &Args, mode: &str) -> bool {
    match mode {
        "ignore" => true,
        "exact" => {
            actual.len() == expected.len()
                && expected
                    .iter()
                    .all(|(k, v)| actual.get(k).is_some_and(|a| py_eq(v, a)))
        }
        _ => expected
            .iter()
            .all(|(k, v)| actual.get(k).is_some_and(|a| py_eq(v, a))),
    }
}

fn expected_args(call: &GoldCall) -> &Args {
    call.args.as_ref().unwrap_or_else(|| super::empty_args())
}

fn call_matches(actual: &ActualCall, expected: &GoldCall, spec: &GoldSpec) -> bool {
    actual.name == expected.tool
        && args_match(
            actual.scored_args(),
            expected_args(expected),
            arg_mode(expected, spec),
        )
}

/// Greedy first-fit: each expected call takes the first free actual call that matches it.
fn first_fit(actual: &[ActualCall], spec: &GoldSpec) -> (Vec<bool>, Vec<bool>) {
    let mut expected_hit = vec![false; spec.calls.len()];
    let mut actual_hit = vec![false; actual.len()];
    for (i, exp) in spec.calls.iter().enumerate() {
        if let Some(j) =
            (0..actual.len()).find(|&j| !actual_hit[j] && call_matches(&actual[j], exp, spec))
        {
            expected_hit[i] = true;
            actual_hit[j] = true;
        }
    }
    (expected_hit, actual_hit)
}

fn unmatched<T>(items: &[T], hit: &[bool], name: impl Fn(&T) -> &str) -> Vec<String> {
    items
        .iter()
        .zip(hit)
        .filter(|(_, h)| !**h)
        .map(|(c, _)| name(c).to_string())
        .collect()
}

fn extra_label(extra: &[String], spec: &GoldSpec) -> &'static str {
    if extra
        .iter()
        .all(|e| spec.calls.iter().any(|c| &c.tool == e))
    {
        "repetition"
    } else {
        DISOBEY
    }
}

fn failed(label: &'static str, reason: String) -> ArksimVerdict {
    ArksimVerdict {
        matched: false,
        failure_label: Some(label),
        reason,
        ..ArksimVerdict::default()
    }
}

fn passed(reason: &str) -> ArksimVerdict {
    ArksimVerdict {
        matched: true,
        reason: reason.into(),
        ..ArksimVerdict::default()
    }
}

/// The verdict arksim's `match_trajectory` gives for these calls.
pub fn match_trajectory(actual: &[ActualCall], spec: &GoldSpec) -> ArksimVerdict {
    let mode = spec.match_mode.as_deref().unwrap_or("unordered");
    if spec.calls.is_empty() {
        return passed("No expected tool calls defined.");
    }
    if actual.is_empty() {
        if mode == "within" {
            return passed("No tool calls made (within mode allows skipping all).");
        }
        let names: Vec<String> = spec.calls.iter().map(|c| c.tool.clone()).collect();
        return ArksimVerdict {
            missing_calls: names.clone(),
            ..failed(
                DISOBEY,
                format!(
                    "Agent made no tool calls but expected: {}",
                    names.join(", ")
                ),
            )
        };
    }
    match mode {
        "strict" => strict(actual, spec),
        "unordered" | "contains" => {
            let (exp_hit, act_hit) = first_fit(actual, spec);
            let missing = unmatched(&spec.calls, &exp_hit, |c| &c.tool);
            let extra = if mode == "contains" {
                Vec::new()
            } else {
                unmatched(actual, &act_hit, |c| &c.name)
            };
            let mut verdict = match (missing.is_empty(), extra.is_empty()) {
                (true, true) => passed("All expected tool calls found."),
                (false, false) => failed(
                    DISOBEY,
                    format!(
                        "Missing expected calls: {}. Unexpected calls: {}.",
                        missing.join(", "),
                        extra.join(", ")
                    ),
                ),
                (false, true) => failed(
                    DISOBEY,
                    format!("Missing expected tool calls: {}.", missing.join(", ")),
                ),
                (true, false) => failed(
                    extra_label(&extra, spec),
                    format!("Unexpected extra tool calls: {}.", extra.join(", ")),
                ),
            };
            verdict.missing_calls = missing;
            verdict.extra_calls = extra;
            verdict
        }
        "within" => {
            let extra: Vec<String> = actual
                .iter()
                .filter(|a| !spec.calls.iter().any(|e| call_matches(a, e, spec)))
                .map(|a| a.name.clone())
                .collect();
            if extra.is_empty() {
                return passed("All actual calls within expected set (within mode).");
            }
            ArksimVerdict {
                extra_calls: extra.clone(),
                ..failed(
                    extra_label(&extra, spec),
                    format!(
                        "Agent called tools not in expected set: {}.",
                        extra.join(", ")
                    ),
                )
            }
        }
        other => failed(DISOBEY, format!("Unknown match_mode: {other}")),
    }
}

fn strict(actual: &[ActualCall], spec: &GoldSpec) -> ArksimVerdict {
    let expected = &spec.calls;
    if actual.len() != expected.len() {
        let (exp_hit, act_hit) = first_fit(actual, spec);
        let missing = unmatched(expected, &exp_hit, |c| &c.tool);
        let extra = unmatched(actual, &act_hit, |c| &c.name);
        let label = if !extra.is_empty() && missing.is_empty() {
            extra_label(&extra, spec)
        } else {
            DISOBEY
        };
        let mut reason = format!(
            "Expected {} tool calls but got {}.",
            expected.len(),
            actual.len()
        );
        if !missing.is_empty() {
            reason.push_str(&format!(" Missing: {}.", missing.join(", ")));
        }
        if !extra.is_empty() {
            reason.push_str(&format!(" Extra: {}.", extra.join(", ")));
        }
        return ArksimVerdict {
            missing_calls: missing,
            extra_calls: extra,
            ..failed(label, reason)
        };
    }
    let mut ordering = Vec::new();
    let mut substitutions = Vec::new();
    let mut mismatches: Vec<(&'static str, String)> = Vec::new();
    for (i, (act, exp)) in actual.iter().zip(expected).enumerate() {
        if act.name != exp.tool {
            if expected.iter().any(|e| e.tool == act.name) {
                ordering.push(format!(
                    "Position {i}: expected {}, got {}",
                    exp.tool, act.name
                ));
            } else {
                substitutions.push(format!(
                    "Position {i}: expected {}, got {} (not in expected set)",
                    exp.tool, act.name
                ));
            }
        } else if !args_match(act.scored_args(), expected_args(exp), arg_mode(exp, spec)) {
            let label = if arg_mode(exp, spec) == "partial" {
                "lack of specific information"
            } else {
                "false information"
            };
            mismatches.push((
                label,
                format!("Tool {} at position {i}: argument mismatch.", act.name),
            ));
        }
    }
    if ordering.is_empty() && substitutions.is_empty() && mismatches.is_empty() {
        return passed("All tool calls match in order.");
    }
    let mut parts = Vec::new();
    if !ordering.is_empty() {
        parts.push(format!(
            "Tool call ordering mismatch. {}",
            ordering.join("; ")
        ));
    }
    if !substitutions.is_empty() {
        parts.push(format!("Wrong tool called. {}", substitutions.join("; ")));
    }
    parts.extend(mismatches.iter().map(|(_, d)| d.clone()));
    let label = if !ordering.is_empty() || !substitutions.is_empty() {
        DISOBEY
    } else if mismatches.iter().any(|(l, _)| *l == "false information") {
        "false information"
    } else {
        mismatches.first().map_or(DISOBEY, |(l, _)| *l)
    };
    ArksimVerdict {
        ordering_issues: ordering,
        ..failed(label, parts.join(". "))
    }
}
