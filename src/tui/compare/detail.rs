//! One case as the detail pane shows it: each run's verdict, evaluator and final answer, each
//! side's epochs of the case, the tool calls of both runs aligned, and each run's gold report.
//! The runs are read when the case is selected ([`CaseDetail::of`]); the lines are built for a
//! reveal mode from that ([`case_blocks`]), so `r` re-shows the case without reading it again.

use ratatui::text::{Line, Span};

use super::state::Golds;
use crate::gold::ActualCall;
use crate::gold::align::{Row, RowKind};
use crate::gold::check::{actual_calls, report_in};
use crate::gold::report::{CheckOptions, DiffReport, fmt2};
use crate::model::{GoldCall, GoldSpec, PayloadState, SpanKind};
use crate::redact::{self, Reveal};
use crate::store::{Invocation, Store};
use crate::triage::EvalFacet;
use crate::tui::payload::payload_lines;
use crate::tui::theme::{Role, Theme};
use crate::tui::verdict::evaluator_lines;
use crate::views::compare::{Entry, Repeats, Side, glyph};

/// Lines of a final answer shown per side; the rest is counted.
const ANSWER_LINES: usize = 200;

/// What the detail pane draws: a line across the pane, or two columns side by side (A left,
/// B right), each wrapped within its half and padded to the longer of the two.
#[derive(Debug, Clone)]
pub enum Block {
    Full(Line<'static>),
    Pair(Vec<Line<'static>>, Vec<Line<'static>>),
    /// A, B and the gold, for a trajectory row when the case has a gold.
    Triple(Vec<Line<'static>>, Vec<Line<'static>>, Vec<Line<'static>>),
}

/// One run of the case, read from its store.
#[derive(Debug)]
pub struct SideRun {
    pub run: &'static Invocation,
    pub calls: Vec<ActualCall>,
    pub answer: Answer,
    /// The run against its gold, when one applies (as `d` finds it in the main view).
    pub gold: Option<DiffReport>,
    /// The run's triage note in its side's notes.
    pub note: Option<crate::notes::Note>,
}

/// A run's final answer: the output of its last LLM span that recorded one, else its root
/// span's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Text(String),
    NotCaptured,
    Unreadable(String),
}

/// The selected case's runs and their calls lined up.
#[derive(Debug)]
pub struct CaseDetail {
    /// A's run and B's; `None` for the side the case did not run on.
    pub sides: [Option<SideRun>; 2],
    /// A's calls standing as the gold and B's as the actual: the gold diff's alignment pairs
    /// the calls of the two runs and says how each pair differs.
    pub trajectory: DiffReport,
    /// What went wrong finding a run's gold (a sidecar that does not parse), for the status
    /// line.
    pub problems: Vec<String>,
}

impl CaseDetail {
    /// Reads the runs of `entry` from the stores and aligns their calls.
    pub fn of(entry: &Entry, stores: [&'static Store; 2], golds: &mut [Golds; 2]) -> Self {
        let mut sides = [None, None];
        let mut problems = Vec::new();
        for (n, side) in [&entry.a, &entry.b].into_iter().enumerate() {
            let run = side.as_ref().and_then(|side| stores[n].get(&side.run));
            sides[n] = run.map(|run| side_run(run, stores[n], &mut golds[n], &mut problems));
        }
        let calls_of = |side: &Option<SideRun>| {
            side.as_ref()
                .map(|side| side.calls.clone())
                .unwrap_or_default()
        };
        let a_calls = calls_of(&sides[0]);
        let as_gold = GoldSpec {
            calls: a_calls
                .iter()
                .map(|call| GoldCall {
                    tool: call.name.clone(),
                    args: call.args.clone(),
                    ..GoldCall::default()
                })
                .collect(),
            source: "A".into(),
            ..GoldSpec::default()
        };
        let trajectory = DiffReport::build(
            "A → B",
            as_gold,
            calls_of(&sides[1]),
            CheckOptions::default(),
        );
        CaseDetail {
            sides,
            trajectory,
            problems,
        }
    }

    /// A's call a trajectory row stands on.
    fn a_call(&self, row: &Row) -> Option<&ActualCall> {
        let a = self.sides[0].as_ref()?;
        row.gold.and_then(|g| a.calls.get(g))
    }

    fn b_call(&self, row: &Row) -> Option<&ActualCall> {
        row.actual.and_then(|b| self.trajectory.actual.get(b))
    }

    /// Whether the runs part ways at this row: another tool or other arguments, a call one run
    /// made and the other did not, or a call that failed on one side only.
    pub fn diverges(&self, row: &Row) -> bool {
        let failed = |call: Option<&ActualCall>| call.is_some_and(|c| c.failed);
        !matches!(row.kind, RowKind::Match | RowKind::Failed)
            || failed(self.a_call(row)) != failed(self.b_call(row))
    }

    /// The first row where the runs part ways.
    pub fn first_divergence(&self) -> Option<usize> {
        self.trajectory
            .rows
            .iter()
            .position(|row| self.diverges(row))
    }
}

fn side_run(
    run: &'static Invocation,
    store: &Store,
    golds: &mut Golds,
    problems: &mut Vec<String>,
) -> SideRun {
    let (calls, _) = actual_calls(run);
    let mut found = Vec::new();
    let mut gold = report_in(
        store,
        &golds.conversations,
        run,
        None,
        CheckOptions::default(),
        &mut golds.sidecars,
        &mut found,
    );
    problems.extend(found.iter().map(ToString::to_string));
    // A whole conversation's gold marks this turn's rows, as the main view's `d` does.
    if let Some(scope) = gold.as_mut().and_then(|g| g.conversation.as_mut()) {
        let id = run.id.to_string();
        scope.focus = scope.turns.iter().position(|turn| *turn == id);
    }
    SideRun {
        run,
        calls,
        answer: answer_of(run),
        gold,
        note: store.notes().of_run(&run.id.to_string()).cloned(),
    }
}

fn answer_of(run: &Invocation) -> Answer {
    let recorded = |span: &&crate::model::Span| {
        let output = span.output();
        output.is_captured() && output.state != PayloadState::Empty
    };
    let last_llm = run
        .spans
        .iter()
        .filter(|span| span.kind == SpanKind::Llm)
        .filter(recorded)
        .max_by_key(|span| (span.end_unix_nano, span.start_unix_nano));
    let root = || {
        let tree = run.tree();
        let root = tree.roots.first().copied();
        root.and_then(|at| run.spans.get(at)).filter(recorded)
    };
    let Some(span) = last_llm.or_else(root) else {
        return Answer::NotCaptured;
    };
    match crate::formats::load_payload(&span.output()) {
        Ok(Some(text)) => Answer::Text(message_text(&text).unwrap_or(text)),
        Ok(None) => Answer::NotCaptured,
        Err(why) => Answer::Unreadable(why.to_string()),
    }
}

/// The words of an output that is a list of chat messages (GenAI `parts` or a `content`
/// text), joined: an answer reads as what the model said, not as its message JSON. `None`
/// for any other shape, which is shown as it is.
fn message_text(output: &str) -> Option<String> {
    let messages: Vec<serde_json::Value> = serde_json::from_str(output).ok()?;
    let mut texts = Vec::new();
    for message in &messages {
        match (&message["parts"], &message["content"]) {
            (serde_json::Value::Array(parts), _) => texts.extend(
                parts
                    .iter()
                    .filter(|part| part["type"] == "text")
                    .filter_map(|part| part["content"].as_str()),
            ),
            (_, serde_json::Value::String(text)) => texts.push(text),
            _ => return None,
        }
    }
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The blocks of a case under `mode`: its verdicts, its epochs on each side (`repeats`, A's and
/// B's runs of its id where its index counts repeats), its calls aligned, its final answers.
pub fn case_blocks(
    entry: &Entry,
    class: &str,
    detail: &CaseDetail,
    repeats: [Option<&Repeats>; 2],
    mode: Reveal,
    theme: &Theme,
) -> Vec<Block> {
    let title = theme.style(Role::Title);
    let mut blocks = vec![
        Block::Full(Line::styled(
            format!(
                "{} · {} · {class}",
                redact::shown_line(&entry.case.id, mode),
                entry.case.index
            ),
            title,
        )),
        Block::Pair(
            verdict_lines("A", entry.a.as_ref(), detail.sides[0].as_ref(), mode, theme),
            verdict_lines("B", entry.b.as_ref(), detail.sides[1].as_ref(), mode, theme),
        ),
        Block::Full(Line::raw("")),
    ];
    blocks.extend(repeats_blocks(entry, repeats, theme));
    blocks.extend(trajectory_blocks(detail, mode, theme));
    blocks.push(Block::Full(Line::raw("")));
    blocks.push(Block::Full(Line::styled("── final answer ──", title)));
    let answer = |side: &Option<SideRun>| match side {
        None => vec![Line::styled("(not run)", theme.style(Role::Dim))],
        Some(side) => answer_lines(&side.answer, mode, theme),
    };
    blocks.push(Block::Pair(
        answer(&detail.sides[0]),
        answer(&detail.sides[1]),
    ));
    blocks
}

/// Each side's runs of the case's id in index order as a strip of verdicts, the run shown in
/// brackets (`✓[✗]✓`), with how many pass and whether they disagree; nothing when neither
/// side ran the id more than once.
fn repeats_blocks(entry: &Entry, repeats: [Option<&Repeats>; 2], theme: &Theme) -> Vec<Block> {
    if !repeats.iter().flatten().any(|runs| runs.runs.len() > 1) {
        return Vec::new();
    }
    let dim = theme.style(Role::Dim);
    let side_lines = |name: &str, side: Option<&Side>, runs: Option<&Repeats>| {
        let Some(runs) = runs else {
            let why = if side.is_some() {
                "no epochs"
            } else {
                "not run"
            };
            return vec![Line::styled(format!("{name} · {why}"), dim)];
        };
        let mut spans = vec![Span::styled(format!("{name}  "), theme.style(Role::Text))];
        for &(index, failing) in &runs.runs {
            let role = if failing {
                Role::StatusError
            } else {
                Role::StatusOk
            };
            let style = theme.style(role);
            if index == entry.case.index {
                spans.push(Span::styled("[", dim));
                spans.push(Span::styled(glyph(failing).to_string(), style));
                spans.push(Span::styled("]", dim));
            } else {
                spans.push(Span::styled(glyph(failing).to_string(), style));
            }
        }
        spans.push(Span::styled(
            format!("  {}", runs.counts_words()),
            theme.style(Role::Text),
        ));
        if runs.flaky() {
            spans.push(Span::styled(" · flaky", theme.style(Role::StatusDegraded)));
        }
        vec![Line::from(spans)]
    };
    vec![
        Block::Full(Line::styled(
            "── the case's epochs in order · [ ] is this one ──",
            theme.style(Role::Title),
        )),
        Block::Pair(
            side_lines("A", entry.a.as_ref(), repeats[0]),
            side_lines("B", entry.b.as_ref(), repeats[1]),
        ),
        Block::Full(Line::raw("")),
    ]
}

/// A side's verdict, failing facets, evaluator and gold, one line each (the evaluator's reason
/// verbatim, a screen line per line of it, as the main view's verdict block shows it).
fn verdict_lines(
    name: &str,
    side: Option<&Side>,
    run: Option<&SideRun>,
    mode: Reveal,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let dim = theme.style(Role::Dim);
    let plain = theme.style(Role::Text);
    let Some(side) = side else {
        return vec![Line::styled(format!("{name} · not run"), dim)];
    };
    let (glyph, word, role) = if side.failing {
        ("✗", "failing", Role::StatusError)
    } else {
        ("✓", "passing", Role::StatusOk)
    };
    let mut lines = vec![Line::styled(
        format!("{name} {glyph} {word}"),
        theme.style(role),
    )];
    let facets = match side.facets.as_slice() {
        [] => "none".to_owned(),
        facets => facets.join(", "),
    };
    lines.push(Line::from(vec![
        Span::styled("facets  ", dim),
        Span::styled(facets, plain),
    ]));
    let Some(run) = run else {
        return lines;
    };
    match (&run.note, &side.note) {
        (Some(note), _) => lines.extend(crate::tui::verdict::note_lines(note, mode, theme)),
        // B's run has none, and the case still fails: A's triage most likely holds.
        (None, Some(carried)) if carried.carried => lines.push(Line::from(vec![
            Span::styled("note    ", dim),
            Span::styled(
                match carried.label.as_str() {
                    "" => "A's note holds (still failing)".to_owned(),
                    label => format!("[{label}] A's note holds (still failing)"),
                },
                plain,
            ),
        ])),
        _ => {}
    }
    if let Some(eval) = run.run.eval() {
        let facet = EvalFacet::of(eval);
        lines.extend(evaluator_lines(
            &facet,
            Some(eval),
            ("eval", 7),
            mode,
            theme,
        ));
    }
    if let Some(gold) = &run.gold {
        let (text, role) = if gold.passed() {
            ("✓ matches", Role::StatusOk)
        } else {
            ("✗ differs", Role::StatusError)
        };
        lines.push(Line::from(vec![
            Span::styled("gold    ", dim),
            Span::styled(text, theme.style(role)),
            Span::styled(
                format!("  score {} · d shows it", fmt2(gold.metrics.score)),
                plain,
            ),
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled("run     ", dim),
        Span::styled(
            redact::shown_line(&run.run.summary().name, mode),
            theme.style(Role::Dim),
        ),
    ]));
    lines
}

/// The calls of both runs, row by row as the alignment pairs them, the first row where they
/// part ways marked `▶`; a row whose arguments differ lists them below it.
fn trajectory_blocks(detail: &CaseDetail, mode: Reveal, theme: &Theme) -> Vec<Block> {
    let report = &detail.trajectory;
    let count = |n: usize| {
        detail.sides[n]
            .as_ref()
            .map_or("-".to_owned(), |side| side.calls.len().to_string())
    };
    let first = detail.first_divergence();
    let verdict = match first {
        _ if report.rows.is_empty() => "no tool calls on either side".to_owned(),
        Some(row) => format!("first divergence ▶ row {}", row + 1),
        None => "the same calls".to_owned(),
    };
    // The gold as a third column, aligned through a run's own diff against it: A's when A
    // has one (its calls are the rows' left side), else B's.
    let gold = match (&detail.sides[0], &detail.sides[1]) {
        (
            Some(SideRun {
                gold: Some(diff), ..
            }),
            _,
        ) => Some((diff, 0)),
        (
            _,
            Some(SideRun {
                gold: Some(diff), ..
            }),
        ) => Some((diff, 1)),
        _ => None,
    };
    let gold_words = gold.map_or(String::new(), |(diff, _)| {
        format!(" · gold {}", diff.gold.calls.len())
    });
    let mut blocks = vec![Block::Full(Line::styled(
        format!(
            "── tool calls · A {} → B {}{gold_words} · {verdict} ──",
            count(0),
            count(1)
        ),
        theme.style(Role::Title),
    ))];
    let gold_cell = |row: &Row| -> Vec<Line<'static>> {
        let Some((diff, side)) = gold else {
            return Vec::new();
        };
        let call = if side == 0 {
            detail.a_call(row)
        } else {
            detail.b_call(row)
        };
        // The same call in the diff's own list (which may hold a whole conversation's calls):
        // by call id when both have one, else by tool and arguments.
        let same = |other: &ActualCall| {
            call.is_some_and(|call| match (&call.call_id, &other.call_id) {
                (Some(id), Some(other_id)) => id == other_id,
                _ => call.name == other.name && call.args == other.args,
            })
        };
        let matched = diff
            .rows
            .iter()
            .find(|g| g.actual.and_then(|a| diff.actual.get(a)).is_some_and(same));
        match matched.filter(|g| g.gold.is_some()) {
            Some(g) => vec![Line::styled(
                diff.gold_cell(g, mode),
                theme.style(Role::Text),
            )],
            None => vec![Line::styled("  —", theme.style(Role::Dim))],
        }
    };
    for (n, row) in report.rows.iter().enumerate() {
        let marker = if first == Some(n) { "▶" } else { " " };
        let role = if detail.diverges(row) {
            match row.kind {
                RowKind::Missing => Role::DiffRemoved,
                RowKind::Extra => Role::DiffAdded,
                RowKind::Moved => Role::DiffMoved,
                _ => Role::DiffChanged,
            }
        } else {
            Role::Text
        };
        let style = theme.style(role);
        let prefix = Span::styled(format!("{marker}{:>2} ", n + 1), theme.style(Role::Dim));
        let absent = || vec![Line::styled("  —", theme.style(Role::Dim))];
        let mut left = match detail.a_call(row) {
            Some(call) => {
                let cell = match call.args {
                    None => format!("{}(?)", call.name),
                    Some(_) => report.gold_cell(row, mode),
                };
                call_lines(&cell, call, mode, style, theme)
            }
            None => absent(),
        };
        left[0].spans.insert(0, prefix);
        let mut right = match detail.b_call(row) {
            Some(call) => call_lines(&report.actual_cell(row, mode), call, mode, style, theme),
            None => absent(),
        };
        if detail.diverges(row) {
            right[0]
                .spans
                .push(Span::styled(format!(" · {}", kind_word(row)), style));
        }
        blocks.push(match gold {
            Some(_) => Block::Triple(left, right, gold_cell(row)),
            None => Block::Pair(left, right),
        });
        if row.kind == RowKind::ArgMismatch {
            for line in report.arg_lines(row, mode) {
                blocks.push(Block::Full(Line::styled(
                    format!("      {}", redact::shown_line(&line, mode)),
                    theme.style(Role::Dim),
                )));
            }
        }
    }
    // Gold calls neither run's row met: the calls the gold expects that the side it is
    // aligned through never made.
    if let Some((diff, _)) = gold {
        for missing in diff
            .rows
            .iter()
            .filter(|g| g.actual.is_none() && g.gold.is_some())
        {
            let absent = || vec![Line::styled("  —", theme.style(Role::Dim))];
            blocks.push(Block::Triple(
                absent(),
                absent(),
                vec![Line::styled(
                    format!("{} · not called", diff.gold_cell(missing, mode)),
                    theme.style(Role::DiffRemoved),
                )],
            ));
        }
    }
    blocks
}

/// How the calls of a row where the runs part ways differ (A's run stands where a gold would).
fn kind_word(row: &Row) -> String {
    let word = match row.kind {
        RowKind::Match | RowKind::Failed => "failed on one side",
        RowKind::ArgMismatch => "other arguments",
        RowKind::WrongTool => "other tool",
        RowKind::Missing => "A only",
        RowKind::Extra => "B only",
        RowKind::Moved if row.args_ok => "moved",
        RowKind::Moved => "moved, other arguments",
    };
    word.to_owned()
}

/// One call as `name(arg=value, …)` (already shaped for `mode`), then its error when it failed.
fn call_lines(
    cell: &str,
    call: &ActualCall,
    mode: Reveal,
    style: ratatui::style::Style,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let glyph = if call.failed { "✗ " } else { "  " };
    let mut lines = vec![Line::from(vec![
        Span::styled(glyph, theme.style(Role::StatusError)),
        Span::styled(redact::shown_line(cell, mode), style),
    ])];
    if call.failed
        && let Some(error) = call.shown_error(mode)
    {
        lines.push(Line::styled(
            format!("  {}", redact::sanitize_line(&error)),
            theme.style(Role::StatusError),
        ));
    }
    lines
}

/// A final answer under `mode`, as the main view's payload pane shows a payload.
fn answer_lines(answer: &Answer, mode: Reveal, theme: &Theme) -> Vec<Line<'static>> {
    match answer {
        Answer::Text(text) => {
            let mut lines = payload_lines(text, mode, theme);
            if lines.len() > ANSWER_LINES {
                let more = lines.len() - ANSWER_LINES;
                lines.truncate(ANSWER_LINES);
                lines.push(Line::styled(
                    format!("… {more} more lines"),
                    theme.style(Role::Truncated),
                ));
            }
            lines
        }
        Answer::NotCaptured => vec![Line::styled("not captured", theme.style(Role::Missing))],
        Answer::Unreadable(why) => vec![Line::styled(
            format!("unreadable: {}", redact::shown_line(why, mode)),
            theme.style(Role::StatusError),
        )],
    }
}
