//! Argument precision / recall / F1 as toolscore 1.10.0 computes them, with its pairing:
//! per tool name, gold and trace calls are paired one-to-one maximizing (pairs, correct keys),
//! exactly (DP over subsets) up to 12 trace calls of a tool and greedily beyond.

use super::compare::{CompareMode, values_match};
use super::metrics::ArgumentMetrics;
use super::{ActualCall, Args, GoldCall};

/// (correct, expected, actual) key counts for one paired call.
fn argument_match(gold: &Args, actual: &Args, mode: CompareMode) -> (usize, usize, usize) {
    let correct = gold
        .iter()
        .filter(|(k, v)| actual.get(*k).is_some_and(|a| values_match(v, a, mode)))
        .count();
    (correct, gold.len(), actual.len())
}

/// Beyond this many trace calls of one tool, toolscore pairs greedily.
const EXACT_PAIRING_LIMIT: usize = 12;
/// Beyond this many DP cells the exact pairing falls back to greedy (toolscore has no such
/// bound; it only matters for hostile inputs with hundreds of same-name gold calls).
const MAX_PAIRING_CELLS: usize = 1 << 22;

/// toolscore's argument-F1 pairing: per tool name, one-to-one, maximizing (pairs, correct
/// keys), with its exact tie-breaking (first maximum in "skip, then trace order").
pub fn best_pairing(
    gold: &[GoldCall],
    actual: &[ActualCall],
    mode: CompareMode,
) -> Vec<Option<usize>> {
    let mut pairing = vec![None; gold.len()];
    // Indices grouped by name; a stable sort keeps each group in call order, which the
    // tie-breaking depends on.
    let mut gold_order: Vec<usize> = (0..gold.len()).collect();
    gold_order.sort_by(|&x, &y| gold[x].tool.cmp(&gold[y].tool));
    let mut trace_order: Vec<usize> = (0..actual.len()).collect();
    trace_order.sort_by(|&x, &y| actual[x].name.cmp(&actual[y].name));
    for gold_idx in gold_order.chunk_by(|&x, &y| gold[x].tool == gold[y].tool) {
        let name = gold[gold_idx[0]].tool.as_str();
        let start = trace_order.partition_point(|&j| actual[j].name.as_str() < name);
        let len = trace_order[start..]
            .iter()
            .take_while(|&&j| actual[j].name == name)
            .count();
        let trace_idx = &trace_order[start..start + len];
        if trace_idx.is_empty() {
            continue;
        }
        let weight = |i: usize, j: usize| match &gold[i].args {
            None => 0,
            Some(g) => argument_match(g, actual[j].scored_args(), mode).0 as u64,
        };
        if let [only] = gold_idx {
            // One gold call: the first trace call with the best weight (what both the DP and
            // the greedy rule pick), without building tables.
            pairing[*only] = trace_idx
                .iter()
                .copied()
                .max_by_key(|&j| (weight(*only, j), std::cmp::Reverse(j)));
            continue;
        }
        let weights: Vec<Vec<u64>> = gold_idx
            .iter()
            .map(|&i| trace_idx.iter().map(|&j| weight(i, j)).collect())
            .collect();
        // With one gold call the DP picks the first best-weighted trace call, as greedy does.
        let exact = gold_idx.len() > 1
            && trace_idx.len() <= EXACT_PAIRING_LIMIT
            && (gold_idx.len() + 1) << trace_idx.len() <= MAX_PAIRING_CELLS;
        let pairs = if exact {
            exact_assignment(&weights, trace_idx.len())
        } else {
            greedy_assignment(&weights, trace_idx.len())
        };
        for (g, t) in pairs {
            pairing[gold_idx[g]] = Some(trace_idx[t]);
        }
    }
    pairing
}

/// DP over subsets of used trace calls; returns (gold position, trace position) pairs.
fn exact_assignment(weights: &[Vec<u64>], m: usize) -> Vec<(usize, usize)> {
    let n = weights.len();
    let masks = 1usize << m;
    // best[g * masks + used] = ((pairs, total), choice) where choice is the trace position
    // taken by gold g, or usize::MAX for "skip".
    let mut score = vec![(0u64, 0u64); (n + 1) * masks];
    let mut choice = vec![usize::MAX; n * masks];
    for g in (0..n).rev() {
        for used in 0..masks {
            let mut best = score[(g + 1) * masks + used];
            let mut pick = usize::MAX;
            for (k, w) in weights[g].iter().enumerate() {
                if used & (1 << k) != 0 {
                    continue;
                }
                let (pairs, total) = score[(g + 1) * masks + (used | (1 << k))];
                let candidate = (pairs + 1, total + w);
                if candidate > best {
                    best = candidate;
                    pick = k;
                }
            }
            score[g * masks + used] = best;
            choice[g * masks + used] = pick;
        }
    }
    let mut out = Vec::new();
    let mut used = 0usize;
    for g in 0..n {
        let k = choice[g * masks + used];
        if k != usize::MAX {
            out.push((g, k));
            used |= 1 << k;
        }
    }
    out
}

fn greedy_assignment(weights: &[Vec<u64>], m: usize) -> Vec<(usize, usize)> {
    let mut used = vec![false; m];
    let mut out = Vec::new();
    for (g, row) in weights.iter().enumerate() {
        // Highest weight, earliest trace call on ties.
        let best = (0..m)
            .filter(|&k| !used[k])
            .fold(None::<usize>, |best, k| match best {
                Some(b) if row[b] >= row[k] => Some(b),
                _ => Some(k),
            });
        if let Some(k) = best {
            used[k] = true;
            out.push((g, k));
        }
    }
    out
}

pub(super) fn argument_metrics(
    gold: &[GoldCall],
    actual: &[ActualCall],
    pairing: &[Option<usize>],
    mode: CompareMode,
) -> ArgumentMetrics {
    let all = |v: f64| ArgumentMetrics {
        precision: v,
        recall: v,
        f1: v,
        ..ArgumentMetrics::default()
    };
    if gold.is_empty() && actual.is_empty() {
        return all(1.0);
    }
    if gold.is_empty() || actual.is_empty() {
        return all(0.0);
    }
    let mut m = ArgumentMetrics::default();
    for (g, paired) in gold.iter().zip(pairing) {
        let trace = paired.and_then(|j| actual.get(j));
        let Some(expected) = &g.args else {
            m.vacuous_matches += usize::from(trace.is_some());
            continue;
        };
        match trace {
            Some(t) => {
                let (c, e, a) = argument_match(expected, t.scored_args(), mode);
                m.correct += c;
                m.expected += e;
                m.actual += a;
                m.vacuous_matches += usize::from(e == 0 && a == 0);
            }
            None => m.expected += expected.len(),
        }
    }
    if m.expected == 0 && m.actual == 0 && m.vacuous_matches > 0 {
        return ArgumentMetrics {
            precision: 1.0,
            recall: 1.0,
            f1: 1.0,
            ..m
        };
    }
    let ratio = |n: usize, d: usize| if d > 0 { n as f64 / d as f64 } else { 0.0 };
    m.precision = ratio(m.correct, m.actual);
    m.recall = ratio(m.correct, m.expected);
    m.f1 = if m.precision + m.recall > 0.0 {
        2.0 * (m.precision * m.recall) / (m.precision + m.recall)
    } else {
        0.0
    };
    m
}
