//! The triage report of a set of listed invocations: Markdown for people (the failure summary's
//! tables, then per failing invocation its verdict, the evaluator's reason, its triage note,
//! failed spans with their errors, differing gold rows, ids, source file and line; then every
//! listed run's note) and, beside it, the `dump --json` document of the same selection with the
//! summary as its `summary` field. Shared by the TUI's `x` and the headless `report` command. All trace
//! text goes through the masking pass ([`redact::shown_line`]) and into a code span, so none of
//! it is read as Markdown or HTML; payloads stay redacted unless `mode` reveals them. Files are
//! written owner-only and never through a symlink ([`out_file`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::dump::{Selection, write_selection_json};
use super::{ProblemCounts, out_file, summary};
use crate::breakdown::Breakdown;
use crate::model::Origin;
use crate::redact::{self, Reveal};
use crate::store::{Invocation, Store};
use crate::triage::Facets;

/// A written-out report: the Markdown and the matching `dump --json` document.
#[derive(Debug, Clone)]
pub struct TriageReport {
    pub markdown: String,
    pub listed: usize,
    pub failing: usize,
    /// The failure summary at the top of the Markdown, and the JSON's `summary`.
    pub summary: Breakdown,
}

fn place(inv: &Invocation, span: usize) -> String {
    let Some(s) = inv.spans.get(span) else {
        return String::new();
    };
    match (s.origin(), s.line) {
        (Some(Origin::File(path)), Some(line)) => format!("{}:{line}", path.display()),
        (Some(Origin::File(path)), None) => path.display().to_string(),
        (Some(Origin::Endpoint(endpoint)), _) => endpoint.to_string(),
        (None, _) => String::new(),
    }
}

/// `text` as one inline code span: fenced by more backticks than its longest run of them, padded
/// with a space where it starts or ends with a backtick or a space (Markdown strips one space
/// each side). Empty text stays empty: no span can hold it.
pub(crate) fn code_of_shown(text: String) -> String {
    if text.is_empty() {
        return text;
    }
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    let pad = if text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' '))
    {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A triage note in the report: the label in bold (a plain word), the text and the author in
/// code spans through the masking pass, then the time.
fn note_markdown(note: &crate::notes::Note, mode: Reveal) -> String {
    let mut out = String::new();
    if !note.label.is_empty() {
        let _ = write!(out, "**{}** ", note.label);
    }
    if !note.note.is_empty() {
        let _ = write!(
            out,
            "{} ",
            code_of_shown(redact::shown_line(&note.note, mode))
        );
    }
    let _ = write!(
        out,
        "({}, {})",
        code_of_shown(redact::shown_line(&note.author, mode)),
        redact::sanitize_line(&note.time)
    );
    out
}

/// Problems (and notes) listed in the Markdown; a file with thousands of bad lines has them all
/// in the JSON beside it.
const MAX_PROBLEMS_LISTED: usize = 50;

/// Builds the report of `selection` (the invocations currently listed).
pub fn build(store: &Store, selection: &Selection, mode: Reveal) -> TriageReport {
    // Trace text is untrusted: shown as the screen shows it, then held in a code span so no
    // Markdown or HTML in it (comments, scripts, links, images) is read as such.
    let code = |text: &str| code_of_shown(redact::shown_line(text, mode));
    let mut body = String::new();
    let mut failing = 0;
    for (inv, _) in &selection.rows {
        let gold = selection.gold_report(&inv.id.text());
        let facets = Facets::of(inv, selection.gold(&inv.id.text()));
        if !facets.failing() {
            continue;
        }
        failing += 1;
        let name = inv.summary().name.clone();
        let _ = writeln!(body, "## {} {}\n", code(&name), code(&inv.id.text()));
        let facet_names: Vec<&str> = facets.list().into_iter().map(|f| f.name()).collect();
        let _ = writeln!(
            body,
            "- verdict: {} {}",
            facets.glyphs(),
            facet_names.join(", ")
        );
        if let Some(eval) = &facets.eval {
            let score = eval
                .score
                .map(|s| format!(" (score {s:.2})"))
                .unwrap_or_default();
            let _ = writeln!(
                body,
                "- evaluator: {}{score}{}",
                code(&eval.label),
                if eval.failed { " — failed" } else { "" }
            );
            if !eval.reason.is_empty() {
                let _ = writeln!(body, "- reason: {}", code(&eval.shown_reason(mode)));
            }
            // Dataset text, like an answer: its length until revealed.
            if let Some(target) = inv.eval().and_then(|verdict| verdict.target.as_ref()) {
                let _ = writeln!(
                    body,
                    "- target: {}",
                    code(&redact::shown_quote(target, mode))
                );
            }
            if let Some(limit) = inv.eval().and_then(|verdict| verdict.limit.as_ref()) {
                let _ = writeln!(body, "- limit: {}", code(limit));
            }
        }
        if let Some(note) = selection.notes().of_run(&inv.id.text()) {
            let _ = writeln!(body, "- note: {}", note_markdown(note, mode));
        }
        if let Some(root) = facets.root() {
            let _ = writeln!(body, "- source: {}", code(&place(inv, root)));
        }
        if facets.failed_spans().len() > 0 {
            let _ = writeln!(body, "- failed spans:");
            for i in facets.failed_spans() {
                let span = &inv.spans[i];
                let error = span
                    .error()
                    .and_then(|e| redact::error_message(e, mode))
                    .unwrap_or_default();
                let _ = writeln!(
                    body,
                    "  - {} {} — {}: {} ({})",
                    code(&span.span_id.text()),
                    code(&span.name),
                    code(span.error_type().unwrap_or("error")),
                    code_of_shown(redact::sanitize_line(&error)),
                    code(&place(inv, i)),
                );
            }
        }
        if let Some(report) = gold.filter(|_| facets.gold_mismatch()) {
            let _ = writeln!(
                body,
                "- gold ({}): toolcap gold: ✗ differs, score {:.2}",
                code(&report.gold.source),
                report.metrics.score
            );
            for verdict in report.verdict_lines() {
                let _ = writeln!(body, "  - {}", code(&verdict));
            }
            for &r in &report.differing_rows() {
                let row = &report.rows[r];
                let _ = writeln!(
                    body,
                    "  - row {}: {} vs {} — {}",
                    r + 1,
                    code(&report.gold_cell(row, mode)),
                    code(&report.actual_cell(row, mode)),
                    code(&report.verdict_label(row)),
                );
            }
        }
        body.push('\n');
    }
    let mut markdown = String::new();
    let _ = writeln!(markdown, "# toolcap triage report\n");
    if let Some(query) = &selection.query {
        let _ = writeln!(markdown, "- filter: {}", code(query));
    }
    let _ = writeln!(
        markdown,
        "- {failing} failing of {} listed ({} loaded)",
        selection.rows.len(),
        store.len(),
    );
    // What did not load is said at the top, so the counts above never read greener than the
    // data; the problems themselves are listed at the end.
    let (problems, notes): (Vec<_>, Vec<_>) = store.problems().iter().partition(|p| p.is_counted());
    if !problems.is_empty() {
        let _ = writeln!(
            markdown,
            "- loading: {} (listed under [Problems while loading](#problems-while-loading))",
            ProblemCounts::of(store.problems()).words()
        );
    }
    let _ = writeln!(
        markdown,
        "- payloads: {}\n",
        match mode {
            Reveal::Redacted => "redacted",
            Reveal::Revealed => "revealed (secrets masked)",
        }
    );
    let breakdown = summary::of_selection(selection);
    markdown.push_str(&summary::markdown(&breakdown, mode));
    markdown.push_str(&body);
    let noted: Vec<_> = selection
        .rows
        .iter()
        .filter_map(|(inv, _)| Some((*inv, selection.notes().of_run(&inv.id.text())?)))
        .collect();
    if !noted.is_empty() {
        let _ = writeln!(markdown, "## Triage notes ({})\n", noted.len());
        for (inv, note) in noted {
            let _ = writeln!(
                markdown,
                "- {} {}: {}",
                code(&inv.summary().name),
                code(&inv.id.text()),
                note_markdown(note, mode)
            );
        }
        markdown.push('\n');
    }
    for (heading, list) in [("Problems while loading", problems), ("Notes", notes)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(markdown, "## {heading} ({})\n", list.len());
        for p in list.iter().take(MAX_PROBLEMS_LISTED) {
            let place = match p.line {
                Some(line) => format!("{}:{line}", p.source),
                None => p.source.clone(),
            };
            let _ = writeln!(
                markdown,
                "- {}: {}: {}",
                p.severity.as_str(),
                code(&place),
                code(&p.message)
            );
        }
        if list.len() > MAX_PROBLEMS_LISTED {
            let _ = writeln!(
                markdown,
                "- … and {} more (the JSON's `problems` holds every one)",
                list.len() - MAX_PROBLEMS_LISTED
            );
        }
        markdown.push('\n');
    }
    TriageReport {
        markdown,
        listed: selection.rows.len(),
        failing,
        summary: breakdown,
    }
}

/// The JSON file written beside a Markdown report: `NAME.md` → `NAME.json`.
pub fn json_path(markdown: &Path) -> PathBuf {
    markdown.with_extension("json")
}

/// Writes the Markdown to `markdown` and, beside it, the selection's `dump --json` document
/// (streamed, as `dump` writes it); returns the total bytes written. Each replaces what was at
/// its path ([`out_file::replace`]): a symlink there is replaced, its target left alone.
pub fn write(
    report: &TriageReport,
    markdown: &Path,
    store: &Store,
    selection: &Selection,
    mode: Reveal,
) -> std::io::Result<u64> {
    use std::io::Write as _;
    out_file::replace(markdown, |file| file.write_all(report.markdown.as_bytes()))?;
    let json = out_file::replace(&json_path(markdown), |file| {
        write_json(file, report, store, selection, mode)
    })?;
    Ok(report.markdown.len() as u64 + json)
}

/// Writes the report as new files in `dir`, named by the UTC time `at`
/// (`toolcap-report-20261206T021500Z.md` and `.json`, then `-2`, `-3` … when taken); returns the
/// Markdown's path and the total bytes written.
pub fn write_new(
    report: &TriageReport,
    dir: &Path,
    at: time::OffsetDateTime,
    store: &Store,
    selection: &Selection,
    mode: Reveal,
) -> std::io::Result<(PathBuf, u64)> {
    use std::io::Write as _;
    let stem = format!("toolcap-report-{}", out_file::utc_stamp(at));
    let files = out_file::create_numbered(dir, &stem, &["md", "json"])?;
    let [(markdown, mut markdown_file), (_, mut json_file)]: [_; 2] = files
        .try_into()
        .map_err(|_| std::io::Error::other("one file per extension"))?;
    markdown_file.write_all(report.markdown.as_bytes())?;
    let json = write_json(&mut json_file, report, store, selection, mode)?;
    Ok((markdown, report.markdown.len() as u64 + json))
}

/// The report's JSON into `file`: the selection's `dump --json` document with the failure
/// summary as its `summary` field; returns the bytes written. `report --json` prints the same.
pub fn write_json(
    file: impl std::io::Write,
    report: &TriageReport,
    store: &Store,
    selection: &Selection,
    mode: Reveal,
) -> std::io::Result<u64> {
    use std::io::Write as _;
    let mut out = CountingWriter {
        inner: std::io::BufWriter::new(file),
        bytes: 0,
    };
    let summary = summary::json(&report.summary, mode);
    write_selection_json(&mut out, store, selection, mode, vec![("summary", summary)])?;
    out.flush()?;
    Ok(out.bytes)
}

/// Counts what passes through, for the "N bytes" the status bar and stderr report.
struct CountingWriter<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.bytes += written as u64;
        Ok(written)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
