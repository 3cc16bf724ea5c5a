//! The failure summary in the report: [`Breakdown`] as Markdown tables (at the top of `report`
//! and the TUI's `x`) and as the `summary` field of the report's JSON. Labels, reasons, names and
//! error types are trace text: masked ([`redact::shown_line`], [`redact::shown_data`]) like every
//! other output, and held in code spans in the Markdown.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::dump::Selection;
use super::report::code_of_shown;
use crate::breakdown::{Breakdown, Row, Table, TableKind};
use crate::redact::{self, Reveal};
use crate::store::Invocation;
use crate::triage::GoldOutcome;

/// What the summary says about counting, wherever it is shown.
pub const SEVERAL_ROWS: &str = "a run may count in several rows";

/// The breakdown of what `selection` lists, with the gold outcomes the report judges by.
pub fn of_selection(selection: &Selection) -> Breakdown {
    let runs: Vec<&Invocation> = selection.rows.iter().map(|(inv, _)| *inv).collect();
    let gold = |inv: &Invocation| -> GoldOutcome { selection.gold(&inv.id.text()) };
    Breakdown::of(&runs, &gold)
}

/// A table cell holding trace text: masked, inert, in a code span, its pipes escaped (GitHub's
/// tables split cells at a pipe even inside code).
fn cell(text: &str, mode: Reveal) -> String {
    code_of_shown(redact::shown_line(text, mode)).replace('|', "\\|")
}

fn filter_cell(row: &Row) -> String {
    match &row.query {
        Some(query) => code_of_shown(query.clone()).replace('|', "\\|"),
        None => "—".into(),
    }
}

fn rate(row: &Row) -> String {
    row.error_rate()
        .map_or_else(|| "—".into(), |r| format!("{:.0}%", r * 100.0))
}

/// A table's count columns: heading and the row's value, after the label and before the
/// filter.
type Column = (&'static str, fn(&Row) -> String);

fn table_markdown(out: &mut String, table: &Table, mode: Reveal) {
    let _ = writeln!(out, "### {}\n", table.kind.title());
    let columns: &[Column] = match table.kind {
        TableKind::Tools => &[
            ("calls", |r| r.calls.unwrap_or(0).to_string()),
            ("failed calls", |r| r.failed_calls.unwrap_or(0).to_string()),
            ("failing runs", |r| r.runs.to_string()),
            ("error rate", rate),
        ],
        TableKind::ToolErrors => &[
            ("failed calls", |r| r.failed_calls.unwrap_or(0).to_string()),
            ("runs", |r| r.runs.to_string()),
        ],
        _ => &[("runs", |r| r.runs.to_string())],
    };
    let headings: Vec<&str> = columns.iter().map(|(heading, _)| *heading).collect();
    let _ = writeln!(
        out,
        "| {} | {} | filter |\n| --- |{} --- |",
        table.kind.label_heading(),
        headings.join(" | "),
        " ---: |".repeat(columns.len())
    );
    for row in &table.rows {
        let counts: Vec<String> = columns.iter().map(|(_, value)| value(row)).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            cell(&row.shown_label(mode), mode),
            counts.join(" | "),
            filter_cell(row)
        );
    }
    out.push('\n');
}

/// The summary's Markdown: a heading, the counting rule, each table, the distributions.
pub fn markdown(breakdown: &Breakdown, mode: Reveal) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Summary\n\n{} failing of {} listed; {SEVERAL_ROWS}. Counts are of runs unless a column says calls; each filter lists exactly its row's runs (`/`, `dump --filter`).\n",
        breakdown.failing, breakdown.listed
    );
    for table in &breakdown.tables {
        table_markdown(&mut out, table, mode);
    }
    if breakdown.distributions.iter().any(|d| !d.bins.is_empty()) {
        let _ = writeln!(
            out,
            "### Distributions\n\n| measure | range | runs | filter |\n| --- | --- | ---: | --- |"
        );
        for distribution in &breakdown.distributions {
            // Empty bins are left out here (the JSON and the TUI's charts keep them).
            for bin in distribution.bins.iter().filter(|b| b.runs > 0) {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    distribution.measure.title(),
                    redact::sanitize_line(&bin.label),
                    bin.runs,
                    filter_cell(bin)
                );
            }
        }
        out.push('\n');
    }
    out
}

fn row_json(row: &Row, mode: Reveal, with_calls: bool) -> Value {
    let mut value = json!({
        "label": redact::shown_data(&row.shown_label(mode), mode),
        "runs": row.runs,
        "query": row.query,
    });
    if with_calls {
        value["calls"] = json!(row.calls);
        value["failed_calls"] = json!(row.failed_calls);
        value["error_rate"] = json!(row.error_rate());
    }
    value
}

/// The summary as the report's JSON carries it (`summary`; schema in docs/dump.schema.json).
pub fn json(breakdown: &Breakdown, mode: Reveal) -> Value {
    let tables: serde_json::Map<String, Value> = breakdown
        .tables
        .iter()
        .map(|table| {
            let rows = table
                .rows
                .iter()
                .map(|row| row_json(row, mode, table.kind.counts_calls()))
                .collect();
            (table.kind.key().to_owned(), Value::Array(rows))
        })
        .collect();
    let distributions: serde_json::Map<String, Value> = breakdown
        .distributions
        .iter()
        .map(|d| {
            let bins = d.bins.iter().map(|b| row_json(b, mode, false)).collect();
            (d.measure.key().to_owned(), Value::Array(bins))
        })
        .collect();
    json!({
        "listed": breakdown.listed,
        "failing": breakdown.failing,
        "counting": SEVERAL_ROWS,
        "tables": tables,
        "distributions": distributions,
        "failures_over_time": {
            "buckets": breakdown.failures_over_time,
            "from_unix_nano": breakdown.time_range.map(|(lo, _)| lo),
            "to_unix_nano": breakdown.time_range.map(|(_, hi)| hi),
        },
    })
}
