//! Lining up gold and actual calls as diff rows, by one of three policies:
//! an edit script on tool names (default; a call found elsewhere is a move, not two edits),
//! positional (what toolscore's trajectory metric scores), and per-name best pairing (what
//! argument F1 uses). A paired call that failed is never a plain match.

use super::compare::{ArgDiff, ArgVerdict, CompareMode, args_all_ok, compare_args};
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
        Alignment::Name => name_rows(gold, actual, mode, name_pairing),
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

fn position_rows(gold: &[GoldCall], actual: &[ActualCall], mode: CompareMode) -> Vec<Row> {
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

/// Longest common subsequence of tool names, as (gold, actual) index pairs in order.
fn lcs_pairs(gold: &[GoldCall], actual: &[ActualCall]) -> Vec<(usize, usize)> {
    let (n, m) = (gold.len(), actual.len());
    let width = m + 1;
    let mut table = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i * width + j] = if gold[i].tool == actual[j].name {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(table[0] as usize);
    while i < n && j < m {
        if gold[i].tool == actual[j].name {
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
    let anchors = lcs_pairs(gold, actual);
    let mut gold_taken = vec![false; gold.len()];
    let mut actual_taken = vec![false; actual.len()];
    for &(g, a) in &anchors {
        gold_taken[g] = true;
        actual_taken[a] = true;
    }
    // A gold call whose tool appears unmatched elsewhere in the actual run was moved.
    let mut moved_to: Vec<Option<usize>> = vec![None; gold.len()];
    for g in 0..gold.len() {
        if gold_taken[g] {
            continue;
        }
        if let Some(a) =
            (0..actual.len()).find(|&a| !actual_taken[a] && actual[a].name == gold[g].tool)
        {
            moved_to[g] = Some(a);
            gold_taken[g] = true;
            actual_taken[a] = true;
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
