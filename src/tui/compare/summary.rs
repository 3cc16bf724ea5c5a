//! The detail pane while a class's title row is selected: what the class holds, then both
//! runs as wholes (pass rate, counts, evaluator labels, tools whose failures changed).

use ratatui::text::{Line, Span};

use super::detail::Block;
use crate::redact::{self, Reveal};
use crate::tui::theme::{Role, Theme};
use crate::views::compare::{Comparison, Summary, tool_deltas};

/// What each class of [`Comparison::classes`] holds, in the same order.
pub const CLASS_MEANINGS: [&str; 6] = [
    "passing in A, failing in B",
    "failing in A, passing in B",
    "failing in both runs",
    "passing in both runs",
    "run in A only",
    "run in B only",
];

pub fn class_blocks(
    comparison: &Comparison,
    class: usize,
    mode: Reveal,
    theme: &Theme,
) -> Vec<Block> {
    let title = theme.style(Role::Title);
    let dim = theme.style(Role::Dim);
    let (name, entries) = comparison.classes()[class];
    let mut blocks = vec![
        Block::Full(Line::styled(format!("{name} ({})", entries.len()), title)),
        Block::Full(Line::styled(CLASS_MEANINGS[class], dim)),
        Block::Full(Line::raw("")),
        Block::Full(Line::styled("── A → B ──", title)),
    ];
    let (a, b) = (&comparison.summary.a, &comparison.summary.b);
    let percent = |s: &Summary| {
        s.pass_rate
            .map_or("-".to_owned(), |rate| format!("{:.1}%", rate * 100.0))
    };
    let score = |s: &Summary| s.mean_score.map_or("-".to_owned(), |m| format!("{m:.2}"));
    let figure = |label: &str, a: String, b: String| {
        Block::Full(Line::from(vec![
            Span::styled(format!("{label:<21} "), dim),
            Span::styled(format!("{a} → {b}"), theme.style(Role::Text)),
        ]))
    };
    blocks.push(figure("pass rate", percent(a), percent(b)));
    blocks.push(figure("runs", a.runs.to_string(), b.runs.to_string()));
    blocks.push(figure(
        "failing",
        a.failing.to_string(),
        b.failing.to_string(),
    ));
    blocks.push(figure(
        "evaluated",
        a.evaluated.to_string(),
        b.evaluated.to_string(),
    ));
    blocks.push(figure(
        "errored",
        a.errored.to_string(),
        b.errored.to_string(),
    ));
    if comparison.summary.any_problems() {
        blocks.push(figure(
            "problems loading",
            a.problems.words(),
            b.problems.words(),
        ));
    }
    blocks.push(figure("mean evaluator score", score(a), score(b)));
    let labels: std::collections::BTreeSet<&String> =
        a.eval_labels.keys().chain(b.eval_labels.keys()).collect();
    if !labels.is_empty() {
        blocks.push(Block::Full(Line::raw("")));
        blocks.push(Block::Full(Line::styled("── evaluator labels ──", title)));
        for label in labels {
            let count = |s: &Summary| s.eval_labels.get(label).copied().unwrap_or(0);
            blocks.push(figure(
                &redact::shown_line(label, mode),
                count(a).to_string(),
                count(b).to_string(),
            ));
        }
    }
    let tools = tool_deltas(comparison);
    if !tools.is_empty() {
        blocks.push(Block::Full(Line::raw("")));
        blocks.push(Block::Full(Line::styled(
            "── tools whose failures changed (failed of calls) ──",
            title,
        )));
        for (name, ta, tb) in tools {
            blocks.push(figure(
                &redact::shown_line(name, mode),
                format!("{} of {}", ta.failed, ta.calls),
                format!("{} of {}", tb.failed, tb.calls),
            ));
        }
    }
    blocks
}
