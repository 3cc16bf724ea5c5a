//! toolscore 1.10.0's metrics, computed on plain call lists, each with the counts behind it.
//! Formulas and edge cases follow toolscore's own; the float operations are done in the same
//! order so results agree to the last bit where possible.

use super::arguments::argument_metrics;
pub use super::arguments::best_pairing;
use super::compare::{CompareMode, py_eq};
use super::{ActualCall, Args, GoldCall};
use crate::Error;

pub const WEIGHT_KEYS: [&str; 5] = [
    "selection_accuracy",
    "argument_f1",
    "sequence_accuracy",
    "redundant_rate",
    "required_call_recall",
];

/// Composite-score weights in [`WEIGHT_KEYS`] order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights(pub [f64; 5]);

impl Default for Weights {
    fn default() -> Self {
        Weights([0.4, 0.3, 0.2, 0.1, 0.0])
    }
}

impl Weights {
    /// Merges `NAME=VALUE` overrides over the defaults and renormalizes all to sum 1, as
    /// toolscore's `--weight` does. No override keeps the defaults untouched.
    pub fn from_overrides(specs: &[String]) -> Result<Self, Error> {
        let mut weights = Weights::default();
        if specs.is_empty() {
            return Ok(weights);
        }
        for spec in specs {
            let (name, value) = spec
                .split_once('=')
                .ok_or_else(|| Error::WeightNotNameValue { spec: spec.clone() })?;
            let name = name.trim();
            let slot = WEIGHT_KEYS.iter().position(|k| *k == name).ok_or_else(|| {
                Error::UnknownWeight {
                    spec: spec.clone(),
                    name: name.into(),
                }
            })?;
            let value: f64 = value.trim().parse().map_err(|_| Error::WeightNotANumber {
                spec: spec.clone(),
                value: value.into(),
            })?;
            if !value.is_finite() {
                return Err(Error::WeightNotFinite { spec: spec.clone() });
            }
            if value < 0.0 {
                return Err(Error::WeightNegative { spec: spec.clone() });
            }
            weights.0[slot] = value;
        }
        let total: f64 = weights.0.iter().sum();
        if total == 0.0 {
            return Err(Error::WeightsSumToZero);
        }
        for w in &mut weights.0 {
            *w /= total;
        }
        Ok(weights)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCorrectness {
    pub tool_correctness: f64,
    pub correct_count: usize,
    pub total_expected: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SequenceMetrics {
    pub edit_distance: usize,
    pub max_len: usize,
    pub normalized_distance: f64,
    pub sequence_accuracy: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryStep {
    pub step: usize,
    /// Index of the gold call at this position (its tool is `expected_tool`).
    pub gold: Option<usize>,
    /// Index of the actual call at this position (its tool is `actual_tool`).
    pub actual: Option<usize>,
    pub matches: bool,
    pub error: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrajectoryMetrics {
    pub trajectory_accuracy: f64,
    pub step_match_rate: f64,
    pub path_efficiency: f64,
    pub correct_steps: usize,
    pub total_expected_steps: usize,
    pub details: Vec<TrajectoryStep>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArgumentMetrics {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub correct: usize,
    pub expected: usize,
    pub actual: usize,
    pub vacuous_matches: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct EfficiencyMetrics {
    pub redundant_count: usize,
    pub total_calls: usize,
    pub redundant_rate: f64,
    pub identical_count: usize,
    pub identical_rate: f64,
    pub error_count: usize,
    pub error_rate: f64,
    pub retry_after_error_count: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Latency {
    pub total_duration: f64,
    pub average_duration: f64,
    pub max_duration: f64,
    pub min_duration: f64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cost {
    pub total_cost: f64,
    pub average_cost: f64,
    pub cost_by_tool: Vec<(String, f64)>,
}

/// Everything toolscore's `eval` computes from a gold and a trace (minus side-effect
/// validators, policy rules, secret scanning and the LLM judge).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metrics {
    pub invocation_accuracy: f64,
    pub selection_accuracy: f64,
    /// Trace calls whose tool is in the gold (the numerator of selection accuracy).
    pub selected_calls: usize,
    pub tool_correctness: ToolCorrectness,
    pub sequence: SequenceMetrics,
    pub trajectory: TrajectoryMetrics,
    pub arguments: ArgumentMetrics,
    pub efficiency: EfficiencyMetrics,
    pub required_call_recall: Option<f64>,
    /// Required calls met by a successful call (numerator of required_call_recall).
    pub required_calls_met: usize,
    pub latency: Option<Latency>,
    pub cost: Option<Cost>,
    pub weights: Weights,
    pub score: f64,
    pub grade: &'static str,
    /// Argument-F1 pairing: gold index → actual index.
    pub pairing: Vec<Option<usize>>,
    pub gold_calls: usize,
    pub trace_calls: usize,
}

pub fn letter_grade(score: f64) -> &'static str {
    [(0.9, "A"), (0.8, "B"), (0.7, "C"), (0.6, "D")]
        .iter()
        .find(|(threshold, _)| score >= *threshold)
        .map_or("F", |(_, letter)| letter)
}

pub fn evaluate(
    gold: &[GoldCall],
    actual: &[ActualCall],
    mode: CompareMode,
    weights: Weights,
) -> Metrics {
    let names = Names::of(gold, actual);
    let pairing = best_pairing(gold, actual, mode);
    let arguments = argument_metrics(gold, actual, &pairing, mode);
    let (selection_accuracy, selected_calls) = selection_accuracy(&names, gold, actual);
    let sequence = sequence_metrics(gold, actual);
    let efficiency = efficiency_metrics(&names, actual);
    let (required_call_recall, required_calls_met) = required_call_recall(&names, gold);
    let w = weights.0;
    let score = w[0] * selection_accuracy
        + w[1] * arguments.f1
        + w[2] * sequence.sequence_accuracy
        + w[3] * (1.0 - efficiency.redundant_rate)
        + w[4] * required_call_recall.unwrap_or(1.0);
    Metrics {
        invocation_accuracy: invocation_accuracy(&names, gold, actual),
        selection_accuracy,
        selected_calls,
        tool_correctness: tool_correctness(&names),
        sequence,
        trajectory: trajectory_metrics(gold, actual),
        arguments,
        efficiency,
        required_call_recall,
        required_calls_met,
        latency: latency(actual),
        cost: cost(actual),
        weights,
        score,
        grade: letter_grade(score),
        pairing,
        gold_calls: gold.len(),
        trace_calls: actual.len(),
    }
}

/// Tool names with their call counts, sorted by name (cheaper than hash maps for the
/// handful of tools a run uses, and O(n log n) for hostile ones).
type Tally<'a> = Vec<(&'a str, usize)>;

fn tally<'a>(names: impl Iterator<Item = &'a str>) -> Tally<'a> {
    let mut all: Vec<&str> = names.collect();
    all.sort_unstable();
    let mut out: Tally = Vec::new();
    for name in all {
        match out.last_mut() {
            Some((last, n)) if *last == name => *n += 1,
            _ => out.push((name, 1)),
        }
    }
    out
}

fn count_of(tally: &Tally, name: &str) -> usize {
    tally
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .map_or(0, |i| tally[i].1)
}

struct Names<'a> {
    gold: Tally<'a>,
    trace: Tally<'a>,
    /// Trace calls that did not fail.
    trace_ok: Tally<'a>,
}

impl<'a> Names<'a> {
    fn of(gold: &'a [GoldCall], actual: &'a [ActualCall]) -> Self {
        Names {
            gold: tally(gold.iter().map(|c| c.tool.as_str())),
            trace: tally(actual.iter().map(|c| c.name.as_str())),
            trace_ok: tally(actual.iter().filter(|c| !c.failed).map(|c| c.name.as_str())),
        }
    }
    /// Distinct names on both sides.
    fn common(&self) -> usize {
        self.gold
            .iter()
            .filter(|(n, _)| count_of(&self.trace, n) > 0)
            .count()
    }
}

fn invocation_accuracy(names: &Names, gold: &[GoldCall], actual: &[ActualCall]) -> f64 {
    match (gold.is_empty(), actual.is_empty()) {
        (true, true) => return 1.0,
        (true, false) | (false, true) => return 0.0,
        _ => {}
    }
    let correct = names.common();
    let extra = names.trace.len() - correct;
    let missing = names.gold.len() - correct;
    let penalty = (extra + missing) as f64;
    ((correct as f64 - penalty * 0.5) / names.gold.len() as f64).clamp(0.0, 1.0)
}

fn selection_accuracy(names: &Names, gold: &[GoldCall], actual: &[ActualCall]) -> (f64, usize) {
    if actual.is_empty() {
        return (if gold.is_empty() { 1.0 } else { 0.0 }, 0);
    }
    if gold.is_empty() {
        return (0.0, 0);
    }
    let selected: usize = names
        .trace
        .iter()
        .filter(|(n, _)| count_of(&names.gold, n) > 0)
        .map(|(_, count)| count)
        .sum();
    (selected as f64 / actual.len() as f64, selected)
}

fn tool_correctness(names: &Names) -> ToolCorrectness {
    let correct = names.common();
    let value = if names.gold.is_empty() {
        if names.trace.is_empty() { 1.0 } else { 0.0 }
    } else {
        correct as f64 / names.gold.len() as f64
    };
    ToolCorrectness {
        tool_correctness: value,
        correct_count: correct,
        total_expected: names.gold.len(),
    }
}

/// The sorted name lists of toolscore's `tool_correctness_metrics`, computed when shown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolLists {
    pub expected_tools: Vec<String>,
    pub called_tools: Vec<String>,
    pub missing_tools: Vec<String>,
    pub extra_tools: Vec<String>,
}

pub fn tool_lists(gold: &[GoldCall], actual: &[ActualCall]) -> ToolLists {
    let names = Names::of(gold, actual);
    let list = |tally: &Tally, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        tally
            .iter()
            .filter(|(n, _)| keep(n))
            .map(|(n, _)| n.to_string())
            .collect()
    };
    ToolLists {
        expected_tools: list(&names.gold, &|_| true),
        called_tools: list(&names.trace, &|_| true),
        missing_tools: list(&names.gold, &|n| count_of(&names.trace, n) == 0),
        extra_tools: list(&names.trace, &|n| count_of(&names.gold, n) == 0),
    }
}

/// Levenshtein distance over tool-name lists (no transpositions).
pub fn edit_distance(gold: &[GoldCall], actual: &[ActualCall]) -> usize {
    let mut prev: Vec<usize> = (0..=actual.len()).collect();
    let mut cur = vec![0; actual.len() + 1];
    for (i, g) in gold.iter().enumerate() {
        cur[0] = i + 1;
        for (j, a) in actual.iter().enumerate() {
            let substitution = prev[j] + usize::from(g.tool != a.name);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[actual.len()]
}

fn sequence_metrics(gold: &[GoldCall], actual: &[ActualCall]) -> SequenceMetrics {
    let d = edit_distance(gold, actual);
    let max_len = gold.len().max(actual.len()).max(1);
    let normalized = d as f64 / max_len as f64;
    SequenceMetrics {
        edit_distance: d,
        max_len,
        normalized_distance: normalized,
        sequence_accuracy: 1.0 - normalized,
    }
}

/// toolscore's positional step comparison: same name and, unless the gold opts out, every
/// gold key present with a Python-`==` value.
pub fn step_matches(gold: &GoldCall, actual: &ActualCall) -> bool {
    if gold.tool != actual.name {
        return false;
    }
    let Some(expected) = &gold.args else {
        return true;
    };
    let got = actual.scored_args();
    expected
        .iter()
        .all(|(k, v)| got.get(k).is_some_and(|a| py_eq(v, a)))
}

fn trajectory_metrics(gold: &[GoldCall], actual: &[ActualCall]) -> TrajectoryMetrics {
    if gold.is_empty() {
        let v = if actual.is_empty() { 1.0 } else { 0.0 };
        return TrajectoryMetrics {
            trajectory_accuracy: v,
            step_match_rate: v,
            path_efficiency: 1.0,
            ..TrajectoryMetrics::default()
        };
    }
    let step = |i: usize, g: Option<usize>, a: Option<usize>, error: Option<&'static str>| {
        TrajectoryStep {
            step: i + 1,
            gold: g,
            actual: a,
            matches: false,
            error,
        }
    };
    if actual.is_empty() {
        return TrajectoryMetrics {
            total_expected_steps: gold.len(),
            details: (0..gold.len())
                .map(|i| step(i, Some(i), None, Some("Agent did not execute this step")))
                .collect(),
            ..TrajectoryMetrics::default()
        };
    }
    let mut details = Vec::with_capacity(gold.len().max(actual.len()));
    let mut correct = 0;
    for (i, (g, a)) in gold.iter().zip(actual).enumerate() {
        let matches = step_matches(g, a);
        correct += usize::from(matches);
        details.push(TrajectoryStep {
            matches,
            ..step(i, Some(i), Some(i), None)
        });
    }
    for i in actual.len()..gold.len() {
        details.push(step(
            i,
            Some(i),
            None,
            Some("Agent stopped early - step not executed"),
        ));
    }
    for i in gold.len()..actual.len() {
        details.push(step(
            i,
            None,
            Some(i),
            Some("Unnecessary step - not in expected path"),
        ));
    }
    let step_match_rate = correct as f64 / gold.len() as f64;
    let path_efficiency = if actual.len() > gold.len() {
        gold.len() as f64 / actual.len() as f64
    } else {
        1.0
    };
    TrajectoryMetrics {
        trajectory_accuracy: step_match_rate * path_efficiency,
        step_match_rate,
        path_efficiency,
        correct_steps: correct,
        total_expected_steps: gold.len(),
        details,
    }
}

/// toolscore's `(tool, json.dumps(args, sort_keys=True))`: two signatures are equal exactly
/// when the names are and the argument values are the same JSON (int and float distinct).
fn signature(call: &ActualCall) -> (&str, &Args) {
    (call.name.as_str(), call.scored_args())
}

fn efficiency_metrics(names: &Names, actual: &[ActualCall]) -> EfficiencyMetrics {
    if actual.is_empty() {
        return EfficiencyMetrics::default();
    }
    let redundant: usize = names
        .trace
        .iter()
        .map(|(name, n)| n.saturating_sub(count_of(&names.gold, name)))
        .sum();
    let signatures: Vec<(&str, &Args)> = actual.iter().map(signature).collect();
    let distinct: std::collections::HashSet<&(&str, &Args)> = signatures.iter().collect();
    let identical = actual.len() - distinct.len();
    let errors = actual.iter().filter(|c| c.failed).count();
    let retries = actual
        .windows(2)
        .zip(signatures.windows(2))
        .filter(|(calls, sigs)| calls[0].failed && sigs[0] == sigs[1])
        .count();
    let total = actual.len() as f64;
    EfficiencyMetrics {
        redundant_count: redundant,
        total_calls: actual.len(),
        redundant_rate: redundant as f64 / total,
        identical_count: identical,
        identical_rate: identical as f64 / total,
        error_count: errors,
        error_rate: errors as f64 / total,
        retry_after_error_count: retries,
    }
}

fn required_call_recall(names: &Names, gold: &[GoldCall]) -> (Option<f64>, usize) {
    if gold.is_empty() {
        return (None, 0);
    }
    let met: usize = names
        .gold
        .iter()
        .map(|(name, n)| (*n).min(count_of(&names.trace_ok, name)))
        .sum();
    (Some(met as f64 / gold.len() as f64), met)
}

fn latency(actual: &[ActualCall]) -> Option<Latency> {
    let durations: Vec<f64> = actual.iter().filter_map(|c| c.duration_s).collect();
    let total: f64 = durations.iter().sum();
    (total > 0.0).then(|| Latency {
        total_duration: total,
        average_duration: total / durations.len() as f64,
        max_duration: durations.iter().copied().fold(f64::MIN, f64::max),
        min_duration: durations.iter().copied().fold(f64::MAX, f64::min),
    })
}

fn cost(actual: &[ActualCall]) -> Option<Cost> {
    let costs: Vec<f64> = actual.iter().filter_map(|c| c.cost).collect();
    let total: f64 = costs.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut by_tool: Vec<(String, f64)> = Vec::new();
    for c in actual {
        if let Some(cost) = c.cost {
            match by_tool.iter_mut().find(|(name, _)| *name == c.name) {
                Some((_, sum)) => *sum += cost,
                None => by_tool.push((c.name.clone(), cost)),
            }
        }
    }
    Some(Cost {
        total_cost: total,
        average_cost: total / costs.len() as f64,
        cost_by_tool: by_tool,
    })
}
