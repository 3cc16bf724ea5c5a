//! Lining up gold and actual calls as diff rows, by one of three policies:
//! an edit script on tool names (default; a call found elsewhere is a move, not two edits),
//! positional (what toolscore's trajectory metric scores), and per-name best pairing (what
//! argument F1 uses). A paired call that failed is never a plain match.

use super::compare::{ArgDiff, ArgVerdict, CompareMode, args_all_ok, compare_args, values_match};
use super::{ActualCall, GoldCall};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Alignment {
    #[default]
    Edit,
    Position,
    Name,
}

impl Alignment {
    pub const ALL: [Alignment; 3] = [Alignment::Edit, Alignment::Position, Alignment::Name];

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "edit" => Some(Alignment::Edit),
            "position" => Some(Alignment::Position),
            "name" => Some(Alignment::Name),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Alignment::Edit => "edit",
            Alignment::Position => "position",
            Alignment::Name => "name",
        }
    }
    pub fn next(self) -> Self {
        match self {
            Alignment::Edit => Alignment::Position,
            Alignment::Position => Alignment::Name,
            Alignment::Name => Alignment::Edit,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Match,
    ArgMismatch,
    WrongTool,
    Missing,
    Extra,
    /// The same call found at another position (the rest of the row's facts still apply).
    Moved,
    /// Right tool and acceptable arguments, but the call failed.
    Failed,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Match => "match",
            RowKind::ArgMismatch => "argument mismatch",
            RowKind::WrongTool => "wrong tool",
            RowKind::Missing => "missing",
            RowKind::Extra => "extra",
            RowKind::Moved => "moved",
            RowKind::Failed => "failed",
        }
    }
    pub fn json_name(self) -> &'static str {
        match self {
            RowKind::Match => "match",
            RowKind::ArgMismatch => "arg_mismatch",
            RowKind::WrongTool => "wrong_tool",
            RowKind::Missing => "missing",
            RowKind::Extra => "extra",
            RowKind::Moved => "moved",
            RowKind::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kind: RowKind,
    pub gold: Option<usize>,
    pub actual: Option<usize>,
    /// Per-key verdicts when both sides name the same tool.
    pub args: Vec<ArgDiff>,
    pub args_ok: bool,
    pub failed: bool,
}

impl Row {
    pub fn differs(&self) -> bool {
        self.kind != RowKind::Match
    }
}

/// Cells above which the edit script is not computed (positional is used instead).
const MAX_EDIT_CELLS: usize = 16_000_000;

pub fn align(
    gold: &[GoldCall],
    actual: &[ActualCall],
    alignment: Alignment,
    mode: CompareMode,
    name_pairing: &[Option<usize>],
) -> Vec<Row> {
    match alignment {
        Alignment::Edit if gold.len().saturating_mul(actual.len()) <= MAX_EDIT_CELLS => {
            edit_rows(gold, actual, mode)
        }
        Alignment::Name => {
            let mut rows = name_rows(gold, actual, mode, name_pairing);
            mark_out_of_order(&mut rows);
            rows
        }
        _ => position_rows(gold, actual, mode),
    }
}

fn paired(gold: &[GoldCall], actual: &[ActualCall], g: usize, a: usize, mode: CompareMode) -> Row {
    let (gc, ac) = (&gold[g], &actual[a]);
    let failed = ac.failed;
    if gc.tool != ac.name {
        return Row {
            kind: RowKind::WrongTool,
            gold: Some(g),
            actual: Some(a),
            args: Vec::new(),
            args_ok: false,
            failed,
        };
    }
    let args = compare_args(gc.args.as_ref(), ac.scored_args(), mode);
    // arksim's partial mode accepts keys the gold does not list.
    let extra_keys_ok = gc.arg_match_mode.as_deref() == Some("partial");
    let args_ok = if extra_keys_ok {
        args.iter()
            .all(|d| d.verdict == ArgVerdict::Unexpected || args_all_ok(std::slice::from_ref(d)))
    } else {
        args_all_ok(&args)
    };
    let kind = if !args_ok {
        RowKind::ArgMismatch
    } else if failed {
        RowKind::Failed
    } else {
        RowKind::Match
    };
    Row {
        kind,
        gold: Some(g),
        actual: Some(a),
        args,
        args_ok,
        failed,
    }
}

fn missing(g: usize) -> Row {
    Row {
        kind: RowKind::Missing,
        gold: Some(g),
        actual: None,
        args: Vec::new(),
        args_ok: false,
        failed: false,
    }
}

fn extra(actual: &[ActualCall], a: usize) -> Row {
    Row {
        kind: RowKind::Extra,
        gold: None,
        actual: Some(a),
        args: Vec::new(),
        args_ok: false,
        failed: actual[a].failed,
    }
}

pub(super) fn position_rows(
    gold: &[GoldCall],
    actual: &[ActualCall],
    mode: CompareMode,
) -> Vec<Row> {
    let mut rows: Vec<Row> = (0..gold.len().min(actual.len()))
        .map(|i| paired(gold, actual, i, i, mode))
        .collect();
    rows.extend((actual.len()..gold.len()).map(missing));
    rows.extend((gold.len()..actual.len()).map(|a| extra(actual, a)));
    rows
}

fn name_rows(
    gold: &[GoldCall],
    actual: &[ActualCall],
    mode: CompareMode,
    pairing: &[Option<usize>],
) -> Vec<Row> {
    let mut used = vec![false; actual.len()];
    let mut rows = Vec::with_capacity(gold.len() + actual.len());
    for g in 0..gold.len() {
        match pairing
            .get(g)
            .copied()
            .flatten()
            .filter(|&a| a < actual.len())
        {
            Some(a) => {
                used[a] = true;
                rows.push(paired(gold, actual, g, a, mode));
            }
            None => rows.push(missing(g)),
        }
    }
    rows.extend(
        (0..actual.len())
            .filter(|&a| !used[a])
            .map(|a| extra(actual, a)),
    );
    rows
}

/// Whether an actual call is an acceptable answer to a gold call: same tool, and arguments
/// that [`paired`] would accept (a failed call still qualifies; its row says it failed).
fn same_call(gold: &GoldCall, actual: &ActualCall, mode: CompareMode) -> bool {
    if gold.tool != actual.name {
        return false;
    }
    let Some(expected) = &gold.args else {
        return true;
    };
    let got = actual.scored_args();
    let extra_keys_ok = gold.arg_match_mode.as_deref() == Some("partial");
    expected
        .iter()
        .all(|(k, v)| got.get(k).is_some_and(|a| values_match(v, a, mode)))
        && (extra_keys_ok || got.keys().all(|k| expected.contains_key(k)))
}

/// The alignment-independent verdict of an ordered gold: the actual trajectory *is* the gold
/// trajectory — as many calls, in the same order, each the same tool with acceptable
/// arguments, none failed. Every alignment draws such a run as all-✓ rows, and any other run
/// with at least one row that is not ✓.
pub fn in_order_match(gold: &[GoldCall], actual: &[ActualCall], mode: CompareMode) -> bool {
    gold.len() == actual.len()
        && gold
            .iter()
            .zip(actual)
            .all(|(g, a)| !a.failed && same_call(g, a, mode))
}

/// Cells above which the edit script pairs by tool name only (no argument comparisons).
const MAX_WEIGHTED_CELLS: usize = 1_000_000;

/// Longest common subsequence as (gold, actual) index pairs in order. A pair scores 2 when
/// the calls are the same call (tool and arguments) and 1 when only the tool agrees, so
/// repeated calls of one tool pair with the call that has their arguments, not positionally.
fn lcs_pairs(gold: &[GoldCall], actual: &[ActualCall], mode: CompareMode) -> Vec<(usize, usize)> {
    let (n, m) = (gold.len(), actual.len());
    let weighted = n.saturating_mul(m) <= MAX_WEIGHTED_CELLS;
    let weight = |i: usize, j: usize| -> u32 {
        if gold[i].tool != actual[j].name {
            0
        } else if weighted && same_call(&gold[i], &actual[j], mode) {
            2
        } else {
            1
        }
    };
    let width = m + 1;
    let mut table = vec![0u32; (n + 1) * width];
    let mut cell = vec![0u8; if weighted { n * m } else { 0 }];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let w = weight(i, j);
            if weighted {
                cell[i * m + j] = w as u8;
            }
            let skip = table[(i + 1) * width + j].max(table[i * width + j + 1]);
            table[i * width + j] = if w > 0 {
                skip.max(table[(i + 1) * width + j + 1] + w)
            } else {
                skip
            };
        }
    }
    let cell_weight = |i: usize, j: usize| {
        if weighted {
            u32::from(cell[i * m + j])
        } else {
            weight(i, j)
        }
    };
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n && j < m {
        let w = cell_weight(i, j);
        if w > 0 && table[i * width + j] == table[(i + 1) * width + j + 1] + w {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if table[(i + 1) * width + j] >= table[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn edit_rows(gold: &[GoldCall], actual: &[ActualCall], mode: CompareMode) -> Vec<Row> {
    let anchors = lcs_pairs(gold, actual, mode);
    let mut gold_taken = vec![false; gold.len()];
    let mut actual_taken = vec![false; actual.len()];
    for &(g, a) in &anchors {
        gold_taken[g] = true;
        actual_taken[a] = true;
    }
    // A gold call whose tool appears unmatched elsewhere in the actual run was moved; the
    // same call (tool and arguments) is preferred over one that only shares the tool.
    let mut moved_to: Vec<Option<usize>> = vec![None; gold.len()];
    for pass_same_call in [true, false] {
        for g in 0..gold.len() {
            if gold_taken[g] {
                continue;
            }
            if let Some(a) = (0..actual.len()).find(|&a| {
                !actual_taken[a]
                    && actual[a].name == gold[g].tool
                    && (!pass_same_call || same_call(&gold[g], &actual[a], mode))
            }) {
                moved_to[g] = Some(a);
                gold_taken[g] = true;
                actual_taken[a] = true;
            }
        }
    }
    let mut rows = Vec::with_capacity(gold.len() + actual.len());
    let (mut g_from, mut a_from) = (0, 0);
    let ends = anchors
        .iter()
        .map(|&(g, a)| (g, a, true))
        .chain(std::iter::once((gold.len(), actual.len(), false)));
    for (g_end, a_end, is_anchor) in ends {
        // Inside a gap: moved calls stay at their gold position; the remaining gold and actual
        // calls pair up positionally as wrong tools, the rest are missing or extra.
        let free_actual: Vec<usize> = (a_from..a_end).filter(|&a| !actual_taken[a]).collect();
        let mut free = free_actual.iter().copied();
        for (g, moved) in moved_to.iter().enumerate().take(g_end).skip(g_from) {
            if let Some(a) = *moved {
                let mut row = paired(gold, actual, g, a, mode);
                row.kind = RowKind::Moved;
                rows.push(row);
            } else if let Some(a) = free.next() {
                rows.push(paired(gold, actual, g, a, mode));
            } else {
                rows.push(missing(g));
            }
        }
        rows.extend(free.map(|a| extra(actual, a)));
        if is_anchor {
            rows.push(paired(gold, actual, g_end, a_end, mode));
        }
        g_from = g_end + 1;
        a_from = a_end + 1;
    }
    rows
}

/// Marks the paired rows of a name alignment whose actual call is out of order: the longest
/// run of pairs whose actual indices increase stays put, every other pair is a move.
fn mark_out_of_order(rows: &mut [Row]) {
    let paired: Vec<(usize, usize)> = rows
        .iter()
        .enumerate()
        .filter_map(|(r, row)| row.gold.and(row.actual).map(|a| (r, a)))
        .collect();
    // Longest strictly increasing subsequence of actual indices (patience sorting).
    let mut tails: Vec<usize> = Vec::new(); // index into `paired`
    let mut prev: Vec<Option<usize>> = vec![None; paired.len()];
    for (k, &(_, a)) in paired.iter().enumerate() {
        let at = tails.partition_point(|&t| paired[t].1 < a);
        prev[k] = at.checked_sub(1).map(|p| tails[p]);
        if at == tails.len() {
            tails.push(k);
        } else {
            tails[at] = k;
        }
    }
    let mut in_order = vec![false; paired.len()];
    let mut cursor = tails.last().copied();
    while let Some(k) = cursor {
        in_order[k] = true;
        cursor = prev[k];
    }
    for (k, &(r, _)) in paired.iter().enumerate() {
        if !in_order[k] {
            rows[r].kind = RowKind::Moved;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gold(names: &[&str]) -> Vec<GoldCall> {
        names
            .iter()
            .map(|n| GoldCall {
                tool: n.to_string(),
                ..GoldCall::default()
            })
            .collect()
    }
    fn actual(names: &[&str]) -> Vec<ActualCall> {
        names
            .iter()
            .map(|n| ActualCall::new(*n, Default::default()))
            .collect()
    }
    fn kinds(rows: &[Row]) -> Vec<RowKind> {
        rows.iter().map(|r| r.kind).collect()
    }

    #[test]
    fn a_swap_is_one_move_and_one_match() {
        let rows = align(
            &gold(&["a", "b"]),
            &actual(&["b", "a"]),
            Alignment::Edit,
            CompareMode::Lenient,
            &[],
        );
        assert_eq!(kinds(&rows), vec![RowKind::Moved, RowKind::Match]);
        assert_eq!((rows[0].gold, rows[0].actual), (Some(0), Some(1)));
    }

    #[test]
    fn gaps_give_wrong_tool_missing_and_extra() {
        let rows = align(
            &gold(&["a", "b", "c", "d"]),
            &actual(&["a", "x", "d", "y"]),
            Alignment::Edit,
            CompareMode::Lenient,
            &[],
        );
        assert_eq!(
            kinds(&rows),
            vec![
                RowKind::Match,
                RowKind::WrongTool,
                RowKind::Missing,
                RowKind::Match,
                RowKind::Extra
            ]
        );
    }

    #[test]
    fn positional_pairs_by_index() {
        let rows = align(
            &gold(&["a", "b"]),
            &actual(&["b", "a", "c"]),
            Alignment::Position,
            CompareMode::Lenient,
            &[],
        );
        assert_eq!(
            kinds(&rows),
            vec![RowKind::WrongTool, RowKind::WrongTool, RowKind::Extra]
        );
    }

    #[test]
    fn a_failed_call_is_never_a_match() {
        let mut calls = actual(&["a"]);
        calls[0].failed = true;
        for alignment in Alignment::ALL {
            let rows = align(
                &gold(&["a"]),
                &calls,
                alignment,
                CompareMode::Lenient,
                &[Some(0)],
            );
            assert_eq!(kinds(&rows), vec![RowKind::Failed], "{alignment:?}");
        }
    }
}
