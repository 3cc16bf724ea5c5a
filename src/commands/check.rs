//! `toolcap-tui check`: every loaded invocation that has a gold, compared with it; exit 0 when
//! all match, 1 when any differs, 2 on error.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::RemoteArgs;
use crate::gold::align::Alignment;
use crate::gold::check::{Extras, ReadingCache, check_store, origin_file};
use crate::gold::compare::CompareMode;
use crate::gold::metrics::Weights;
use crate::gold::policy::Policy;
use crate::gold::report::{CheckOptions, DiffReport};
use crate::gold::source::{is_arksim_scenarios, load_gold_file};
use crate::gold::toolscore_reading;
use crate::model::Severity;
use crate::redact::{self, Reveal};
use crate::sources::load::{SourceReport, apply_sources};
use crate::store::Store;

#[derive(Debug, Args, Clone, Default)]
pub struct CheckArgs {
    /// Gold file: toolscore gold (list or {"calls": [...]}), or a map of invocation id to calls.
    #[arg(long, required = true)]
    pub gold: PathBuf,
    /// Trace files, directories, http(s):// URLs of a running `serve`, or jaeger+http(s)://….
    pub sources: Vec<PathBuf>,
    /// Print a JSON report per invocation (toolscore's metric names).
    #[arg(long)]
    pub json: bool,
    /// Compare argument types strictly and recurse into nested values.
    #[arg(long)]
    pub strict: bool,
    /// How gold and actual rows are aligned.
    #[arg(long, value_name = "edit|position|name", default_value = "edit")]
    pub align: String,
    /// Metric weight override, e.g. --weight selection_accuracy=2 (renormalized).
    #[arg(long = "weight", value_name = "NAME=VALUE")]
    pub weights: Vec<String>,
    /// Show argument values in the diff (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    /// Calls that must never be made: TOOL,TOOL,… or a toolscore rule file (JSON list of
    /// {"tool", "args"?, "reason"?}, with $regex / $contains / $one_of argument operators).
    #[arg(long, value_name = "TOOL,...|RULES.json")]
    pub forbidden: Option<String>,
    /// The toolscore --format to compare with (auto, openai, anthropic, gemini, mcp, langchain,
    /// otel, custom). Traces are always read by content; this only changes toolscore's reading.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub format: String,
    /// Also show how toolscore 1.10.0 would read each trace, and where that differs.
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub scorer: super::ScorerArgs,
    #[command(flatten)]
    pub notes: super::NotesArgs,
}

fn options_from(args: &CheckArgs) -> Result<CheckOptions, crate::Error> {
    let alignment =
        Alignment::parse(&args.align).ok_or_else(|| crate::Error::UnknownAlignment {
            given: args.align.clone(),
        })?;
    Ok(CheckOptions {
        mode: if args.strict {
            CompareMode::Strict
        } else {
            CompareMode::Lenient
        },
        alignment,
        weights: Weights::from_overrides(&args.weights)?,
    })
}

pub fn run(args: &CheckArgs) -> i32 {
    let reveal = Reveal::from_flag(args.reveal);
    let options = match options_from(args) {
        Ok(options) => options,
        Err(why) => {
            eprintln!("toolcap-tui check: {why}");
            return 2;
        }
    };
    if args.sources.is_empty() {
        eprintln!("toolcap-tui check: no trace SOURCE given");
        return 2;
    }
    // An arksim scenarios file is read like a trace file: its assertions join their
    // conversations in the store, so each is judged over all of the conversation's turns.
    let scenarios = is_arksim_scenarios(&args.gold);
    let (gold_file, mut problems) = if scenarios {
        (None, Vec::new())
    } else {
        match load_gold_file(&args.gold) {
            Ok((file, problems)) => (Some(file), problems),
            Err(why) => {
                eprintln!(
                    "toolcap-tui check: {}",
                    redact::shown_line(&why.to_string(), reveal)
                );
                return 2;
            }
        }
    };
    if !toolscore_reading::FORMATS.contains(&args.format.as_str()) {
        eprintln!(
            "toolcap-tui check: --format {:?}: expected one of {}",
            args.format,
            toolscore_reading::FORMATS.join(", ")
        );
        return 2;
    }
    let policy = match args
        .forbidden
        .as_deref()
        .map(Policy::from_option)
        .transpose()
    {
        Ok(policy) => policy,
        Err(why) => {
            eprintln!(
                "toolcap-tui check: {}",
                redact::shown_line(&why.to_string(), reveal)
            );
            return 2;
        }
    };
    let remote = match args.remote.options() {
        Ok(remote) => remote,
        Err(why) => {
            eprintln!("toolcap-tui check: {why}");
            return 2;
        }
    };
    let mut store = Store::unindexed().deciding_by(args.scorer.rule());
    let mut unloaded = Vec::new();
    // Each source is loaded on its own so that one that loads nothing is known: diffing the
    // gold against whatever else loaded (a scenarios file's own conversations) would judge a
    // run that was never read.
    for source in &args.sources {
        let reports = apply_sources(&mut store, std::slice::from_ref(source), &remote);
        if let Some(why) = nothing_loaded(&reports) {
            unloaded.push(format!("nothing loaded from {}: {why}", source.display()));
        }
    }
    if !unloaded.is_empty() {
        for line in &unloaded {
            eprintln!("toolcap-tui check: {}", redact::shown_line(line, reveal));
        }
        return 2;
    }
    if scenarios {
        apply_sources(&mut store, std::slice::from_ref(&args.gold), &remote);
    }
    // Settled once, with every source and the scenarios in: a trace split across sources is
    // assembled once.
    store.settle();
    args.notes.read_into(&mut store, &args.sources);
    let store = super::kept_until_exit(store);
    problems.extend(
        store
            .problems()
            .iter()
            .filter(|p| !p.source.ends_with(".gold.json"))
            .cloned(),
    );
    let mut readings = ReadingCache::default();
    let checked: Vec<(DiffReport, Extras)> =
        check_store(store, gold_file.as_ref(), options, &mut problems)
            .into_iter()
            .map(|mut report| {
                let file = store.get(&report.invocation).and_then(origin_file);
                let extras = Extras::of(
                    &mut report,
                    file,
                    policy.as_ref(),
                    &args.format,
                    &mut readings,
                );
                (report, extras)
            })
            .collect();
    let reports: Vec<&DiffReport> = checked.iter().map(|(r, _)| r).collect();
    for problem in &problems {
        eprintln!("{}", redact::shown_line(&problem.to_string(), reveal));
    }
    if reports.is_empty() {
        eprintln!(
            "toolcap-tui check: no invocation with a gold was loaded ({} invocation(s) in total)",
            store.len()
        );
        return 2;
    }
    let all_passed = reports.iter().all(|r| r.passed());
    let out = if args.json {
        let mut doc = json!({
            "passed": all_passed,
            "invocations": checked.iter().map(|(r, extras)| {
                let mut doc = r.to_json(reveal);
                extras.extend_json(&mut doc, r, reveal);
                if let Some(note) = store.notes().of_run(&r.invocation) {
                    doc["note"] = crate::views::dump::note_json(note, reveal);
                }
                doc
            }).collect::<Vec<_>>(),
            "problems": problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        });
        crate::gold::shown_document(&mut doc, reveal);
        let json = serde_json::to_string_pretty(&doc).unwrap_or_default();
        redact::escape_json_text(&json).into_owned() + "\n"
    } else {
        let mut text = String::new();
        for (report, extras) in &checked {
            text.push_str(&report.to_text(reveal));
            if let Some(note) = store.notes().of_run(&report.invocation) {
                text.push_str(&crate::views::dump::note_line(note, reveal));
                text.push('\n');
            }
            if args.explain {
                text.push_str(&extras.explain_text(report, reveal));
            }
            text.push('\n');
        }
        let failing = reports.iter().filter(|r| !r.passed()).count();
        text.push_str(&format!(
            "{} of {} invocation(s) match their gold\n",
            reports.len() - failing,
            reports.len()
        ));
        text
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    if all_passed { 0 } else { 1 }
}

/// Why a source gave nothing to check, when it gave no span at all: its first error, else its
/// first note (a file that is not a trace), else that it held no trace.
fn nothing_loaded(reports: &[SourceReport]) -> Option<String> {
    if reports.iter().any(|r| r.spans > 0) {
        return None;
    }
    let said = |wanted: fn(Severity) -> bool| {
        reports.iter().find_map(|r| {
            r.warnings
                .iter()
                .zip(&r.severities)
                .find(|(_, severity)| wanted(**severity))
                .map(|(warning, _)| warning.clone())
        })
    };
    Some(
        said(|s| s == Severity::Error)
            .or_else(|| said(|_| true))
            .unwrap_or_else(|| "no trace in it".into()),
    )
}
