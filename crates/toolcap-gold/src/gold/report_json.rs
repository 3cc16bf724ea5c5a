//! The JSON form of a [`DiffReport`]: toolscore's report layout (`summary`, `metrics` under
//! toolscore's names) plus the counts behind each metric, the arksim verdict and the rows.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::Args;
use super::align::Row;
use super::compare::{ArgDiff, ArgVerdict};
use super::metrics::WEIGHT_KEYS;
use super::report::DiffReport;
use crate::redact::{self, Reveal};

impl DiffReport {
    pub fn to_json(&self, reveal: Reveal) -> Value {
        let m = &self.metrics;
        let lists = self.tool_lists();
        let show = |args: &Args| present(&Value::Object(args.clone()), reveal);
        let mut metrics = json!({
            "invocation_accuracy": m.invocation_accuracy,
            "selection_accuracy": m.selection_accuracy,
            "tool_correctness_metrics": {
                "tool_correctness": m.tool_correctness.tool_correctness,
                "expected_tools": lists.expected_tools,
                "called_tools": lists.called_tools,
                "missing_tools": lists.missing_tools,
                "extra_tools": lists.extra_tools,
                "correct_count": m.tool_correctness.correct_count,
                "total_expected": m.tool_correctness.total_expected,
                "strict_order": false,
            },
            "sequence_metrics": {
                "edit_distance": m.sequence.edit_distance as f64,
                "normalized_distance": m.sequence.normalized_distance,
                "sequence_accuracy": m.sequence.sequence_accuracy,
            },
            "trajectory_metrics": {
                "trajectory_accuracy": m.trajectory.trajectory_accuracy,
                "step_match_rate": m.trajectory.step_match_rate,
                "path_efficiency": m.trajectory.path_efficiency,
                "correct_steps": m.trajectory.correct_steps,
                "total_expected_steps": m.trajectory.total_expected_steps,
                "trajectory_details": m.trajectory.details.iter().map(|s| {
                    let g = s.gold.and_then(|i| self.gold.calls.get(i));
                    let a = s.actual.and_then(|i| self.actual.get(i));
                    let empty = Args::new();
                    let mut step = json!({
                        "step": s.step,
                        "expected_tool": g.map(|c| c.tool.as_str()),
                        "actual_tool": a.map(|c| c.name.as_str()),
                        "matches": s.matches,
                        "expected_args": show(g.and_then(|c| c.args.as_ref()).unwrap_or(&empty)),
                        "actual_args": show(a.map_or(&empty, |c| c.scored_args())),
                    });
                    if let Some(error) = s.error {
                        step["error"] = json!(error);
                    }
                    step
                }).collect::<Vec<_>>(),
            },
            "argument_metrics": {
                "precision": m.arguments.precision,
                "recall": m.arguments.recall,
                "f1": m.arguments.f1,
            },
            "efficiency_metrics": {
                "redundant_count": m.efficiency.redundant_count,
                "total_calls": m.efficiency.total_calls,
                "redundant_rate": m.efficiency.redundant_rate,
                "identical_count": m.efficiency.identical_count,
                "identical_rate": m.efficiency.identical_rate,
                "error_count": m.efficiency.error_count,
                "error_rate": m.efficiency.error_rate,
                "retry_after_error_count": m.efficiency.retry_after_error_count,
            },
            "required_call_recall": m.required_call_recall,
        });
        if let Some(l) = &m.latency {
            metrics["latency_metrics"] = json!({
                "total_duration": l.total_duration,
                "average_duration": l.average_duration,
                "max_duration": l.max_duration,
                "min_duration": l.min_duration,
            });
        }
        if let Some(c) = &m.cost {
            let by_tool: Map<String, Value> = c
                .cost_by_tool
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            metrics["cost_metrics"] = json!({
                "total_cost": c.total_cost,
                "average_cost": c.average_cost,
                "cost_by_tool": by_tool,
            });
        }
        let secrets = self.secrets();
        metrics["security_metrics"] = json!({"secret_count": secrets.len(), "secrets": secrets});
        if let Some(side_effects) = self.side_effect_metrics() {
            metrics["side_effect_metrics"] = side_effects;
        }
        let weights: Map<String, Value> = WEIGHT_KEYS
            .iter()
            .zip(m.weights.0)
            .map(|(k, w)| (k.to_string(), json!(w)))
            .collect();
        json!({
            "invocation": self.invocation,
            "name": self.name,
            "gold_source": self.gold.source,
            "passed": self.passed(),
            "compare": self.options.mode.as_str(),
            "alignment": self.options.alignment.as_str(),
            "summary": {
                "gold_calls_count": m.gold_calls,
                "trace_calls_count": m.trace_calls,
                "score": m.score,
                "grade": m.grade,
                "weights": weights,
                "required_call_recall": m.required_call_recall,
                "failed_calls": m.efficiency.error_count,
                "secrets": metrics["security_metrics"]["secret_count"],
            },
            "metrics": metrics,
            "counts": {
                "selection_accuracy": {"numerator": m.selected_calls, "denominator": m.trace_calls},
                "argument_metrics": {
                    "correct": m.arguments.correct,
                    "actual": m.arguments.actual,
                    "expected": m.arguments.expected,
                    "vacuous_matches": m.arguments.vacuous_matches,
                },
                "sequence_metrics": {"edit_distance": m.sequence.edit_distance, "max_length": m.sequence.max_len},
                "required_call_recall": {"met": m.required_calls_met, "required": m.gold_calls},
            },
            "arksim": self.arksim.as_ref().map(|v| json!({
                "match_mode": self.gold.match_mode,
                "matched": v.matched,
                "failure_label": v.failure_label,
                "reason": v.reason,
                "missing_calls": v.missing_calls,
                "extra_calls": v.extra_calls,
                "ordering_issues": v.ordering_issues,
            })),
            "rows": self.rows.iter().map(|r| self.row_json(r, reveal)).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }

    /// Secret-looking strings anywhere in the actual arguments (toolscore's
    /// `security_metrics`, with toolcap's own detector; the value is never included).
    pub fn secrets(&self) -> Vec<Value> {
        let mut found = Vec::new();
        for (index, call) in self.actual.iter().enumerate() {
            let mut paths = Vec::new();
            for (key, value) in call.scored_args() {
                secret_paths(value, key.clone(), &mut paths);
            }
            for path in paths {
                found.push(json!({"index": index, "tool": call.name, "path": path}));
            }
        }
        found
    }

    /// toolscore's `side_effect_metrics` when the gold declares no checks. Validators
    /// (`http_ok`, `file_exists` on the real filesystem, `sql_rows`) are not run, so with
    /// checks present the section is left out rather than guessed.
    fn side_effect_metrics(&self) -> Option<Value> {
        let declared = self.gold.calls.iter().any(|c| c.side_effects.is_some());
        (!declared).then(
            || json!({"total_checks": 0, "passed_checks": 0, "success_rate": 1.0, "details": []}),
        )
    }

    fn row_json(&self, row: &Row, reveal: Reveal) -> Value {
        let actual = row.actual.and_then(|a| self.actual.get(a));
        json!({
            "kind": row.kind.json_name(),
            "gold_index": row.gold,
            "actual_index": row.actual,
            "gold_tool": row.gold.and_then(|g| self.gold.calls.get(g)).map(|c| c.tool.clone()),
            "actual_tool": actual.map(|c| c.name.clone()),
            "failed": row.failed,
            "error": actual.filter(|_| row.failed).and_then(|c| c.shown_error(reveal)),
            "args": row.args.iter().map(|d| {
                let gold = row.gold.and_then(|g| self.gold.calls.get(g)).and_then(|c| c.args.as_ref());
                arg_json(d, gold, actual.map(|c| c.scored_args()), reveal)
            }).collect::<Vec<_>>(),
        })
    }
}

fn secret_paths(value: &Value, path: String, out: &mut Vec<String>) {
    match value {
        Value::String(s) if redact::is_secret_value(s) => out.push(path),
        Value::Object(map) => {
            for (k, v) in map {
                secret_paths(v, format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                secret_paths(v, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn present(value: &Value, reveal: Reveal) -> Value {
    match reveal {
        Reveal::Redacted => redact::shape(value),
        Reveal::Revealed => {
            let mut masked = value.clone();
            redact::mask_secrets(&mut masked);
            masked
        }
    }
}

fn arg_json(diff: &ArgDiff, gold: Option<&Args>, actual: Option<&Args>, reveal: Reveal) -> Value {
    let shown = |v: &Option<Value>| v.as_ref().map(|v| present(v, reveal));
    let gold_value = gold.and_then(|a| a.get(&diff.key)).cloned();
    let actual_value = actual.and_then(|a| a.get(&diff.key)).cloned();
    let mut out = json!({
        "key": diff.key,
        "verdict": match &diff.verdict {
            ArgVerdict::Equal => "equal",
            ArgVerdict::Coerced { .. } => "coerced",
            ArgVerdict::Differs(_) => "differs",
            ArgVerdict::Missing => "missing",
            ArgVerdict::Unexpected => "unexpected",
            ArgVerdict::NotChecked => "not_checked",
        },
        "gold": shown(&gold_value),
        "actual": shown(&actual_value),
    });
    match &diff.verdict {
        ArgVerdict::Coerced { coercion, path } => {
            out["coercion"] = json!(coercion.as_str());
            out["path"] = json!(path);
        }
        ArgVerdict::Differs(leaves) => {
            out["leaves"] = leaves
                .iter()
                .map(|l| {
                    json!({
                        "path": l.path,
                        "gold": shown(&l.gold),
                        "actual": shown(&l.actual),
                        "note": l.note,
                    })
                })
                .collect();
        }
        _ => {}
    }
    out
}

/// Every text of a `check --json` document, keys included, as [`redact::shown_data`] writes it
/// under `reveal`: the document gathers names, messages, ids and problems of untrusted traces
/// and golds from many places, and one pass over the whole of it leaves no field unmasked.
pub fn shown_document(value: &mut Value, reveal: Reveal) {
    match value {
        Value::String(text) => {
            if let Cow::Owned(shown) = redact::shown_data(text, reveal) {
                *text = shown;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shown_document(v, reveal)),
        Value::Object(map) => {
            let keys_change = map
                .keys()
                .any(|k| redact::shown_data(k, reveal).as_ref() != k.as_str());
            if !keys_change {
                map.values_mut().for_each(|v| shown_document(v, reveal));
                return;
            }
            for (key, mut v) in std::mem::take(map) {
                shown_document(&mut v, reveal);
                let shown = redact::shown_data(&key, reveal).into_owned();
                // Two keys that differ only in what is masked stay two entries.
                let mut unique = shown.clone();
                let mut n = 1;
                while map.contains_key(&unique) {
                    n += 1;
                    unique = format!("{shown} ({n})");
                }
                map.insert(unique, v);
            }
        }
        _ => {}
    }
}
