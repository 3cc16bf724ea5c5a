//! The failure summary of a list of runs: what kind of failures, and how many.
//!
//! [`Breakdown::of`] is the one computation behind the TUI's summary overlay, the Markdown
//! report's tables, the report's JSON and the TUI's export. It counts **runs** unless a column
//! says calls, and a run failing for several reasons counts in each row it has. Each row carries
//! the query that lists exactly the runs it counts (the query crate's own terms, so `/`, `dump
//! --filter` and `report --filter` agree with it), or `None` when no query can be shown for it:
//! one whose text the masking pass would change (it would show what redaction hides) or whose
//! name the query language cannot spell (a tool or scorer name holding `=`).
//!
//! Labels, reasons, names and error types are kept verbatim: every view masks and sanitizes what
//! it prints ([`crate::redact::shown_line`]).

use foldhash::HashMap;

use crate::machine;
use crate::model::Health;
use crate::query::{GoldOutcomes, first_line};
use crate::redact::{self, Reveal};
use crate::store::Invocation;
use crate::triage::{EvalFacet, Facet, GoldOutcome};

/// How many evaluator reasons the summary lists (the most frequent).
pub const TOP_REASONS: usize = 10;

/// Buckets of the failures-over-time sparkline.
pub const TIME_BUCKETS: usize = 48;

/// One row of a breakdown table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What the row counts, verbatim (views mask it).
    pub label: String,
    /// Runs counted in this row: exactly the runs [`Row::query`] lists.
    pub runs: usize,
    /// Tool calls (tool tables only).
    pub calls: Option<usize>,
    /// Failed tool calls (tool tables only).
    pub failed_calls: Option<usize>,
    /// The query listing exactly the counted runs; `None` when the row is not filterable.
    pub query: Option<String>,
    /// The label quotes what a model produced (an Inspect scorer's explanation as a reason):
    /// shown as the quote is, and never offered as a filter.
    pub quotes_output: bool,
}

impl Row {
    fn new(label: impl Into<String>, runs: usize, query: Option<String>) -> Row {
        Row {
            label: label.into(),
            runs,
            calls: None,
            failed_calls: None,
            query: query.filter(|q| showable(q)),
            quotes_output: false,
        }
    }

    /// Failed calls over calls, when the row counts calls.
    pub fn error_rate(&self) -> Option<f64> {
        match (self.failed_calls, self.calls) {
            (Some(failed), Some(calls)) if calls > 0 => Some(failed as f64 / calls as f64),
            _ => None,
        }
    }

    /// The label as views start from under `mode` (see [`Row::quotes_output`]); each view then
    /// masks it as free text.
    pub fn shown_label(&self, mode: crate::redact::Reveal) -> std::borrow::Cow<'_, str> {
        crate::model::shown_reason(&self.label, self.quotes_output, mode)
    }
}

/// Which breakdown a table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    Facets,
    EvaluatorLabels,
    ScorerValues,
    Tools,
    ToolErrors,
    ErrorTypes,
    Cases,
    Reasons,
}

impl TableKind {
    pub fn title(self) -> &'static str {
        match self {
            TableKind::Facets => "Failing runs by facet",
            TableKind::EvaluatorLabels => "Failures by evaluator label",
            TableKind::ScorerValues => "Runs by scorer value",
            TableKind::Tools => "Failures by tool",
            TableKind::ToolErrors => "Failed calls by tool and error type",
            TableKind::ErrorTypes => "Failing runs by error type",
            TableKind::Cases => "Failing runs by case",
            TableKind::Reasons => "Top evaluator reasons",
        }
    }

    /// The name the JSON uses.
    pub fn key(self) -> &'static str {
        match self {
            TableKind::Facets => "facets",
            TableKind::EvaluatorLabels => "evaluator_labels",
            TableKind::ScorerValues => "scorer_values",
            TableKind::Tools => "tools",
            TableKind::ToolErrors => "tool_errors",
            TableKind::ErrorTypes => "error_types",
            TableKind::Cases => "cases",
            TableKind::Reasons => "reasons",
        }
    }

    /// The heading of the label column.
    pub fn label_heading(self) -> &'static str {
        match self {
            TableKind::Facets => "facet",
            TableKind::EvaluatorLabels => "evaluator label",
            TableKind::ScorerValues => "scorer=value",
            TableKind::Tools => "tool",
            TableKind::ToolErrors => "tool · error type",
            TableKind::ErrorTypes => "error type",
            TableKind::Cases => "case",
            TableKind::Reasons => "reason (first line)",
        }
    }

    /// Whether the table has the calls columns.
    pub fn counts_calls(self) -> bool {
        matches!(self, TableKind::Tools | TableKind::ToolErrors)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub kind: TableKind,
    pub rows: Vec<Row>,
}

/// Which run total a distribution is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    Latency,
    Tokens,
    Score,
}

impl Measure {
    pub fn title(self) -> &'static str {
        match self {
            Measure::Latency => "Latency",
            Measure::Tokens => "Tokens",
            Measure::Score => "Evaluator score",
        }
    }
    pub fn key(self) -> &'static str {
        match self {
            Measure::Latency => "latency",
            Measure::Tokens => "tokens",
            Measure::Score => "score",
        }
    }
    /// The metric's name in queries.
    fn metric(self) -> &'static str {
        match self {
            Measure::Latency => "dur",
            Measure::Tokens => "tokens",
            Measure::Score => "score",
        }
    }
}

/// A histogram of one run total: each bin a row (label, runs, the query of its range).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub measure: Measure,
    pub bins: Vec<Row>,
}

/// The failure summary of a list of runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Breakdown {
    pub listed: usize,
    pub failing: usize,
    pub tables: Vec<Table>,
    pub distributions: Vec<Distribution>,
    /// Failing runs by start time, [`TIME_BUCKETS`] equal buckets from the earliest start to the
    /// latest; empty when the runs carry no times.
    pub failures_over_time: Vec<u64>,
    /// The first bucket's start and the last one's end (Unix nanoseconds).
    pub time_range: Option<(u64, u64)>,
}

impl Breakdown {
    pub fn table(&self, kind: TableKind) -> Option<&Table> {
        self.tables.iter().find(|t| t.kind == kind)
    }
}

/// A query text shown by the summary must be what the masking pass shows (a query that would be
/// shown masked would not list what it says) and must parse.
fn showable(query: &str) -> bool {
    redact::shown_line(query, Reveal::Redacted) == query
        && crate::query::Query::parse(query).is_ok()
}

/// `field:"value"`, quoted and escaped as the query language reads it back.
pub fn quoted_term(field: &str, value: &str) -> String {
    let mut out = String::with_capacity(field.len() + value.len() + 4);
    out.push_str(field);
    out.push_str(":\"");
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Rows grouped by a case-insensitive key (the query terms compare lower-cased text), labelled
/// by the first spelling seen.
#[derive(Default)]
struct Groups<'a> {
    /// Spellings already placed: most repeat from run to run, and one found here needs no
    /// lower-casing.
    index_of_raw: HashMap<&'a str, usize>,
    index_of_key: HashMap<String, usize>,
    groups: Vec<Group<'a>>,
}

struct Group<'a> {
    label: &'a str,
    /// The Inspect task of a case row: a sample id is unique only within its task.
    scope: Option<&'a str>,
    key: String,
    runs: usize,
    calls: usize,
    failed_calls: usize,
    /// The last run counted, so a run counts once per group.
    last_run: usize,
    /// Some run's text of this group quotes a model's output.
    quotes_output: bool,
}

impl<'a> Groups<'a> {
    fn index(&mut self, raw: &'a str) -> usize {
        if let Some(&i) = self.index_of_raw.get(raw) {
            return i;
        }
        let i = self.index_of_key(raw, None, raw.to_lowercase());
        self.index_of_raw.insert(raw, i);
        i
    }

    fn index_of_key(&mut self, label: &'a str, scope: Option<&'a str>, key: String) -> usize {
        if let Some(&i) = self.index_of_key.get(&key) {
            return i;
        }
        self.groups.push(Group {
            label,
            scope,
            key: key.clone(),
            runs: 0,
            calls: 0,
            failed_calls: 0,
            last_run: usize::MAX,
            quotes_output: false,
        });
        let i = self.groups.len() - 1;
        self.index_of_key.insert(key, i);
        i
    }

    /// Counts run `run` in the group of `raw` (once per run).
    fn count_run(&mut self, raw: &'a str, run: usize) -> usize {
        let i = self.index(raw);
        let group = &mut self.groups[i];
        if group.last_run != run {
            group.last_run = run;
            group.runs += 1;
        }
        i
    }

    /// Counts run `run` in the group of `raw` within `scope` (once per run): the same text in
    /// two scopes is two groups.
    fn count_run_in(&mut self, scope: Option<&'a str>, raw: &'a str, run: usize) {
        let i = match scope {
            None => self.index(raw),
            Some(scope) => {
                let key = format!("{}\u{0}{}", scope.to_lowercase(), raw.to_lowercase());
                self.index_of_key(raw, Some(scope), key)
            }
        };
        let group = &mut self.groups[i];
        if group.last_run != run {
            group.last_run = run;
            group.runs += 1;
        }
    }

    /// Adds the counts of `later` (a tally of runs after these): a run is in one tally only, so
    /// counts add up, and the first spelling seen stays the label.
    fn merge(&mut self, later: Groups<'a>) {
        for group in later.groups {
            let i = self.index_of_key(group.label, group.scope, group.key);
            let mine = &mut self.groups[i];
            mine.runs += group.runs;
            mine.calls += group.calls;
            mine.failed_calls += group.failed_calls;
            mine.quotes_output |= group.quotes_output;
        }
    }

    /// Rows, most runs first (then most failed calls, most calls, label), each labelled by its
    /// group's first spelling and filtered by `query` of it.
    fn rows(self, query: impl Fn(&str) -> Option<String>, with_calls: bool) -> Vec<Row> {
        self.rows_with(|g| (g.label.to_owned(), query(g.label)), with_calls)
    }

    /// Rows as [`Groups::rows`], their label and query made by `row` from the whole group.
    fn rows_with(
        self,
        row: impl Fn(&Group) -> (String, Option<String>),
        with_calls: bool,
    ) -> Vec<Row> {
        let mut rows: Vec<Row> = self
            .groups
            .into_iter()
            .map(|g| {
                let (label, query) = row(&g);
                Row {
                    calls: with_calls.then_some(g.calls),
                    failed_calls: with_calls.then_some(g.failed_calls),
                    quotes_output: g.quotes_output,
                    ..Row::new(label, g.runs, query.filter(|_| !g.quotes_output))
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.runs
                .cmp(&a.runs)
                .then(b.failed_calls.cmp(&a.failed_calls))
                .then(b.calls.cmp(&a.calls))
                .then_with(|| a.label.cmp(&b.label))
        });
        rows
    }
}

/// The failing runs by case. When they are of more than one Inspect task (or of a task and of
/// a format without tasks), a task's case reads `task · id` and its query names the task too,
/// so two tasks' sample 1 are two rows, each listing exactly its runs.
fn case_rows(cases: Groups) -> Vec<Row> {
    let scopes: std::collections::HashSet<Option<&str>> =
        cases.groups.iter().map(|group| group.scope).collect();
    let by_task = scopes.len() > 1;
    cases.rows_with(
        |group| {
            let case = quoted_term("case-id", group.label);
            match group.scope.filter(|_| by_task) {
                Some(task) => (
                    crate::model::Case::id_in_task(task, group.label),
                    Some(format!("is:failing {} {case}", quoted_term("task", task))),
                ),
                None => (group.label.to_owned(), Some(format!("is:failing {case}"))),
            }
        },
        false,
    )
}

/// Runs a tally takes on one core at least: fewer are not worth a thread.
const RUNS_PER_TALLY: usize = 8_192;

/// The counts of a stretch of runs, before they are rows.
#[derive(Default)]
struct Tally<'a> {
    /// Failing runs by facet: span error, degraded, evaluator failure, gold mismatch, and
    /// stopped by a limit.
    facet_runs: [usize; 5],
    failing: usize,
    labels: Groups<'a>,
    scorers: HashMap<(String, String), ScorerCount>,
    tools: Groups<'a>,
    tool_errors: HashMap<(String, String), ToolErrorCount>,
    error_types: Groups<'a>,
    cases: Groups<'a>,
    reasons: Groups<'a>,
    durations: Vec<f64>,
    tokens: Vec<f64>,
    scores: Vec<f64>,
    failing_starts: Vec<u64>,
    time_bounds: Option<(u64, u64)>,
}

impl<'a> Tally<'a> {
    /// Counts `runs`, the first of them being run `first` of the list.
    fn of(runs: &[&'a Invocation], first: usize, gold: &dyn GoldOutcomes) -> Tally<'a> {
        let mut tally = Tally {
            durations: Vec::with_capacity(runs.len()),
            tokens: Vec::with_capacity(runs.len()),
            ..Tally::default()
        };
        for (offset, inv) in runs.iter().enumerate() {
            tally.add(first + offset, inv, gold);
        }
        tally
    }

    fn add(&mut self, run: usize, inv: &'a Invocation, gold: &dyn GoldOutcomes) {
        let summary = inv.summary();
        let eval = inv.eval();
        let eval_failed = eval.is_some_and(EvalFacet::failed);
        let gold_mismatch = matches!(gold.gold(inv), GoldOutcome::Differs { .. });
        let run_failing = summary.health != Health::Ok || eval_failed || gold_mismatch;
        match summary.health {
            Health::Error => self.facet_runs[0] += 1,
            Health::Degraded => self.facet_runs[1] += 1,
            Health::Ok => {}
        }
        self.facet_runs[2] += usize::from(eval_failed);
        self.facet_runs[3] += usize::from(gold_mismatch);
        self.facet_runs[4] += usize::from(run_failing && eval.is_some_and(|e| e.limit.is_some()));
        self.durations.push(summary.duration_ms());
        self.tokens.push(summary.tokens() as f64);
        if summary.start_unix_nano > 0 {
            let (lo, hi) = self.time_bounds.get_or_insert((summary.start_unix_nano, 0));
            *lo = (*lo).min(summary.start_unix_nano);
            *hi = (*hi).max(summary.start_unix_nano);
        }
        if let Some(eval) = eval {
            // An infinite score still compares (`score>…`); only NaN never does.
            if let Some(score) = eval.score.filter(|s| !s.is_nan()) {
                self.scores.push(score);
            }
            if eval_failed {
                self.labels.count_run(&eval.label, run);
                let line = first_line(&eval.reason);
                if !line.is_empty() {
                    let i = self.reasons.count_run(line, run);
                    self.reasons.groups[i].quotes_output |= eval.reason_quotes_output;
                }
            }
            for scorer in &eval.scorers {
                let value = scorer.value_text();
                let key = (scorer.name.to_lowercase(), value.to_lowercase());
                let entry = self.scorers.entry(key).or_insert_with(|| ScorerCount {
                    label: format!("{}={value}", scorer.name),
                    runs: 0,
                    last_run: usize::MAX,
                });
                // A name repeated within a run counts the run once.
                if entry.last_run != run {
                    entry.last_run = run;
                    entry.runs += 1;
                }
            }
        }
        // Tool calls are counted in every listed run (a call fails in a run that is not
        // failing only when it is an evaluator's, which the tool rows still count).
        for call in summary.tool_calls.iter() {
            let name = call.name(&inv.spans);
            let i = self.tools.index(name);
            self.tools.groups[i].calls += 1;
            if call.failed {
                self.tools.count_run(name, run);
                self.tools.groups[i].failed_calls += 1;
                let error_type = inv
                    .spans
                    .get(call.span())
                    .and_then(|s| s.error_type())
                    .unwrap_or("");
                let entry = self
                    .tool_errors
                    .entry((name.to_lowercase(), error_type.to_lowercase()))
                    .or_insert_with(|| ToolErrorCount {
                        tool: name.to_owned(),
                        error_type: error_type.to_owned(),
                        runs: 0,
                        last_run: usize::MAX,
                        failed_calls: 0,
                    });
                entry.failed_calls += 1;
                if entry.last_run != run {
                    entry.last_run = run;
                    entry.runs += 1;
                }
            }
        }
        if !run_failing {
            return;
        }
        self.failing += 1;
        if summary.start_unix_nano > 0 {
            self.failing_starts.push(summary.start_unix_nano);
        }
        if let Some(case) = inv.case() {
            self.cases.count_run_in(case.task.as_deref(), &case.id, run);
        }
        if summary.counts.errors > 0 {
            for span in inv.spans.iter() {
                if span.status.is_error() && !span.is_evaluator() {
                    self.error_types
                        .count_run(span.error_type().unwrap_or(""), run);
                }
            }
        }
    }

    /// Adds the tally of the runs after these.
    fn merge(mut self, later: Tally<'a>) -> Tally<'a> {
        for (mine, theirs) in self.facet_runs.iter_mut().zip(later.facet_runs) {
            *mine += theirs;
        }
        self.failing += later.failing;
        self.labels.merge(later.labels);
        for (key, count) in later.scorers {
            match self.scorers.get_mut(&key) {
                Some(mine) => mine.runs += count.runs,
                None => {
                    self.scorers.insert(key, count);
                }
            }
        }
        self.tools.merge(later.tools);
        for (key, count) in later.tool_errors {
            match self.tool_errors.get_mut(&key) {
                Some(mine) => {
                    mine.runs += count.runs;
                    mine.failed_calls += count.failed_calls;
                }
                None => {
                    self.tool_errors.insert(key, count);
                }
            }
        }
        self.error_types.merge(later.error_types);
        self.cases.merge(later.cases);
        self.reasons.merge(later.reasons);
        self.durations.extend(later.durations);
        self.tokens.extend(later.tokens);
        self.scores.extend(later.scores);
        self.failing_starts.extend(later.failing_starts);
        self.time_bounds = match (self.time_bounds, later.time_bounds) {
            (Some((lo, hi)), Some((lo2, hi2))) => Some((lo.min(lo2), hi.max(hi2))),
            (bounds, None) | (None, bounds) => bounds,
        };
        self
    }
}

impl Breakdown {
    /// The breakdowns of `runs` (what is listed); `gold` says each run's gold outcome, as the
    /// list's `is:` queries see it. A long list is tallied on every core, in stretches merged
    /// in list order, so the result is the one-thread result.
    pub fn of(runs: &[&Invocation], gold: &dyn GoldOutcomes) -> Breakdown {
        let stretch = runs.len().div_ceil(machine::cores()).max(RUNS_PER_TALLY);
        let tally = if runs.len() <= stretch {
            Tally::of(runs, 0, gold)
        } else {
            let stretches = runs.chunks(stretch).enumerate();
            machine::map_all(stretches, |(i, chunk)| Tally::of(chunk, i * stretch, gold))
                .into_iter()
                .reduce(Tally::merge)
                .unwrap_or_default()
        };
        Breakdown::from_tally(tally, runs.len())
    }

    fn from_tally(tally: Tally, listed: usize) -> Breakdown {
        let Tally {
            facet_runs,
            failing,
            labels,
            scorers,
            tools,
            tool_errors,
            error_types,
            cases,
            reasons,
            durations,
            tokens,
            scores,
            failing_starts,
            time_bounds,
        } = tally;
        let scorer_rows = scorer_rows(scorers);
        let facet_rows = facet_rows(failing, facet_runs);
        let mut tables = vec![
            Table {
                kind: TableKind::Facets,
                rows: facet_rows,
            },
            Table {
                kind: TableKind::EvaluatorLabels,
                rows: labels
                    .rows(
                        |label| Some(format!("is:eval-failed {}", quoted_term("eval", label))),
                        false,
                    )
                    .into_iter()
                    .map(|row| placeholder(row, "(no label)"))
                    .collect(),
            },
            Table {
                kind: TableKind::ScorerValues,
                rows: scorer_rows,
            },
            Table {
                kind: TableKind::Tools,
                rows: tools.rows(
                    |name| (!name.contains('=')).then(|| quoted_term("tool-failed", name)),
                    true,
                ),
            },
            Table {
                kind: TableKind::ToolErrors,
                rows: tool_error_rows(tool_errors),
            },
            Table {
                kind: TableKind::ErrorTypes,
                rows: error_types
                    .rows(|t| Some(quoted_term("error", t)), false)
                    .into_iter()
                    .map(|row| placeholder(row, "(no error type)"))
                    .collect(),
            },
            Table {
                kind: TableKind::Cases,
                rows: case_rows(cases),
            },
            Table {
                kind: TableKind::Reasons,
                rows: {
                    let mut rows = reasons.rows(
                        |line| Some(format!("is:eval-failed {}", quoted_term("reason", line))),
                        false,
                    );
                    rows.truncate(TOP_REASONS);
                    rows
                },
            },
        ];
        tables.retain(|t| t.kind == TableKind::Facets || !t.rows.is_empty());
        let mut distributions = vec![
            Distribution {
                measure: Measure::Latency,
                bins: bins(
                    Measure::Latency,
                    &durations,
                    &edges_over(&durations, &LATENCY_EDGES_MS),
                ),
            },
            Distribution {
                measure: Measure::Tokens,
                bins: bins(Measure::Tokens, &tokens, &edges_over(&tokens, &TOKEN_EDGES)),
            },
        ];
        if !scores.is_empty() {
            distributions.push(Distribution {
                measure: Measure::Score,
                bins: bins(Measure::Score, &scores, &score_edges(&scores)),
            });
        }
        let (failures_over_time, time_range) = match time_bounds {
            Some((lo, hi)) => (over_time(&failing_starts, lo, hi), Some((lo, hi))),
            None => (Vec::new(), None),
        };
        Breakdown {
            listed,
            failing,
            tables,
            distributions,
            failures_over_time,
            time_range,
        }
    }
}

/// An empty label shown as what it means (its query still names the empty text).
fn placeholder(mut row: Row, shown: &str) -> Row {
    if row.label.is_empty() {
        row.label = shown.into();
    }
    row
}

fn facet_rows(failing: usize, facet_runs: [usize; 5]) -> Vec<Row> {
    let mut rows = vec![Row::new("failing", failing, Some("is:failing".into()))];
    let facets = [
        Facet::SpanError,
        Facet::SpanDegraded,
        Facet::EvalFailed,
        Facet::GoldMismatch,
    ];
    for (facet, runs) in facets.into_iter().zip(facet_runs) {
        rows.push(Row::new(
            facet.name(),
            runs,
            Some(format!("is:{}", facet.name())),
        ));
    }
    // Failing runs a limit stopped (an Inspect sample's), when there are any: a limited run
    // may still pass, so its filter asks for both.
    if facet_runs[4] > 0 {
        rows.push(Row::new(
            "limited",
            facet_runs[4],
            Some("is:failing is:limited".into()),
        ));
    }
    rows
}

struct ScorerCount {
    label: String,
    runs: usize,
    last_run: usize,
}

fn scorer_rows(counts: HashMap<(String, String), ScorerCount>) -> Vec<Row> {
    let mut rows: Vec<Row> = counts
        .into_iter()
        .map(|((name, value), ScorerCount { label, runs, .. })| {
            // `scorer:` compares ASCII case-insensitively and splits at the first `=`: only
            // names and values it reads back exactly get a query.
            let spellable = !name.contains('=') && name.is_ascii() && value.is_ascii();
            let query = spellable.then(|| quoted_term("scorer", &label));
            Row::new(label, runs, query)
        })
        .collect();
    rows.sort_by(|a, b| b.runs.cmp(&a.runs).then_with(|| a.label.cmp(&b.label)));
    rows
}

/// Failed calls of one tool with one error type, and the runs they failed in.
struct ToolErrorCount {
    tool: String,
    error_type: String,
    runs: usize,
    last_run: usize,
    failed_calls: usize,
}

fn tool_error_rows(tool_errors: HashMap<(String, String), ToolErrorCount>) -> Vec<Row> {
    let mut rows: Vec<Row> = tool_errors
        .into_values()
        .map(
            |ToolErrorCount {
                 tool,
                 error_type,
                 runs,
                 failed_calls,
                 ..
             }| {
                let query = (!tool.contains('='))
                    .then(|| quoted_term("tool-failed", &format!("{tool}={error_type}")));
                let shown_type = if error_type.is_empty() {
                    "(no error type)"
                } else {
                    error_type.as_str()
                };
                Row {
                    failed_calls: Some(failed_calls),
                    ..Row::new(format!("{tool} · {shown_type}"), runs, query)
                }
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        b.failed_calls
            .cmp(&a.failed_calls)
            .then(b.runs.cmp(&a.runs))
            .then_with(|| a.label.cmp(&b.label))
    });
    rows
}

/// Latency bin edges (milliseconds) for runs spread over more than a factor of ten: steps of
/// 1, 2 and 5, then minutes and the hour.
const LATENCY_EDGES_MS: [f64; 22] = [
    1.0,
    2.0,
    5.0,
    10.0,
    20.0,
    50.0,
    100.0,
    200.0,
    500.0,
    1_000.0,
    2_000.0,
    5_000.0,
    10_000.0,
    20_000.0,
    30_000.0,
    60_000.0,
    120_000.0,
    300_000.0,
    600_000.0,
    1_200_000.0,
    1_800_000.0,
    3_600_000.0,
];
/// Token bin edges for runs spread over more than a factor of ten: steps of 1, 2 and 5.
const TOKEN_EDGES: [f64; 19] = [
    10.0,
    20.0,
    50.0,
    100.0,
    200.0,
    500.0,
    1_000.0,
    2_000.0,
    5_000.0,
    10_000.0,
    20_000.0,
    50_000.0,
    100_000.0,
    200_000.0,
    500_000.0,
    1_000_000.0,
    2_000_000.0,
    5_000_000.0,
    10_000_000.0,
];

/// Steps a distribution over a narrow range is cut into: at most this many, and one more when
/// the steps fall across both of its ends.
const NARROW_BINS: f64 = 8.0;

/// Bin edges for `values`: runs within a factor of ten of each other (an eval's samples, most
/// often) in equal steps of 1, 2 or 5 times a power of ten, about [`NARROW_BINS`] of them, so
/// they do not all fall in one bar; runs spread wider in the steps of `spread`.
fn edges_over(values: &[f64], spread: &[f64]) -> Vec<f64> {
    let finite = || {
        values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    if !(lo > 0.0 && hi > lo && hi <= lo * 10.0) {
        return spread.to_vec();
    }
    let wanted = (hi - lo) / NARROW_BINS;
    let power = 10f64.powi(wanted.log10().floor() as i32);
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= wanted)
        .unwrap_or(10.0 * power);
    // Whole steps from the one at or under the lowest value to past the highest, each edge
    // read back from its own text so that the bins and their queries agree exactly.
    let first = (lo / step).floor() as i64;
    let last = (hi / step).floor() as i64 + 1;
    (first..=last)
        .map(|k| {
            let edge = k as f64 * step;
            format!("{edge:.6}").parse().unwrap_or(edge)
        })
        .collect()
}

/// Ten equal bins over the scores' range, their edges rounded to what a query spells exactly
/// (each edge is read back from its own text, so the bins and their queries agree).
fn score_edges(scores: &[f64]) -> Vec<f64> {
    let finite = || scores.iter().copied().filter(|s| s.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo > hi || (lo >= 0.0 && hi <= 1.0) {
        (0.0, 1.0)
    } else {
        (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
    };
    (1..10)
        .map(|i| {
            let edge = lo + (hi - lo) * i as f64 / 10.0;
            format!("{edge:.2}").parse().unwrap_or(edge)
        })
        .filter(|e: &f64| *e >= 0.0)
        .collect()
}

/// Counts `values` into the bins between `edges` (`< first`, `[edge, next)`, `>= last`), empty
/// bins at either end dropped. Each bin's query is its range in the metric's own terms.
fn bins(measure: Measure, values: &[f64], edges: &[f64]) -> Vec<Row> {
    if values.is_empty() {
        return Vec::new();
    }
    let mut counts = vec![0usize; edges.len() + 1];
    for &v in values {
        let bin = edges.partition_point(|&edge| edge <= v);
        counts[bin] += 1;
    }
    let metric = measure.metric();
    let label_of = |edge: f64| match measure {
        Measure::Latency => format_ms(edge),
        Measure::Tokens => format_count(edge),
        Measure::Score => format!("{edge}"),
    };
    let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
    let last = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
    (first..=last)
        .map(|bin| {
            let lower = bin.checked_sub(1).map(|i| edges[i]);
            let upper = edges.get(bin).copied();
            let (label, query) = match (lower, upper) {
                (None, Some(hi)) => (format!("< {}", label_of(hi)), format!("{metric}<{hi}")),
                (Some(lo), Some(hi)) => (
                    format!("{} – {}", label_of(lo), label_of(hi)),
                    format!("{metric}>={lo} {metric}<{hi}"),
                ),
                (Some(lo), None) => (format!("≥ {}", label_of(lo)), format!("{metric}>={lo}")),
                (None, None) => ("all".to_owned(), String::new()),
            };
            // A run without a score has no score bin; every run has a duration and tokens.
            let query = (!query.is_empty()).then_some(query);
            Row::new(label, counts[bin], query)
        })
        .collect()
}

fn format_ms(ms: f64) -> String {
    if ms >= 60_000.0 && ms % 60_000.0 == 0.0 {
        format!("{}m", ms / 60_000.0)
    } else if ms >= 1_000.0 {
        format!("{}s", ms / 1_000.0)
    } else {
        format!("{ms}ms")
    }
}

fn format_count(n: f64) -> String {
    if n >= 1_000_000.0 {
        format!("{}M", n / 1_000_000.0)
    } else if n >= 1_000.0 {
        format!("{}k", n / 1_000.0)
    } else {
        format!("{n}")
    }
}

fn over_time(starts: &[u64], lo: u64, hi: u64) -> Vec<u64> {
    let mut buckets = vec![0u64; TIME_BUCKETS];
    let width = (hi - lo) / TIME_BUCKETS as u64 + 1;
    for &start in starts {
        let bucket = ((start.saturating_sub(lo)) / width) as usize;
        buckets[bucket.min(TIME_BUCKETS - 1)] += 1;
    }
    buckets
}

#[cfg(test)]
mod tests;
