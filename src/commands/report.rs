//! `toolcap-tui report`: the triage report of the listed invocations, headless.

use std::path::PathBuf;

use clap::Args;

use super::RemoteArgs;
use crate::redact::Reveal;
use crate::sources::load::load_into;
use crate::store::Store;
use crate::views::dump::Selection;
use crate::views::report::{build, json_path, write, write_json};

#[derive(Debug, Args, Clone, Default)]
pub struct ReportArgs {
    /// Trace files, directories (searched recursively), or remote sources as for `dump` (read
    /// once).
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Only invocations matching this query (the `/` query language, e.g. `is:failing`).
    #[arg(long, value_name = "QUERY", allow_hyphen_values = true)]
    pub filter: Option<String>,
    /// Show payloads (secret-looking values stay masked). With --out this is the explicit ask
    /// for a revealed report on disk; without --reveal both files are redacted.
    #[arg(long)]
    pub reveal: bool,
    /// Write the Markdown here and the `dump --json` subset beside it (FILE with .json);
    /// without it the Markdown goes to stdout. Each file is written 0600 beside its path and
    /// renamed over it: an existing file or symlink there is replaced, never written through.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the JSON document instead of the Markdown: the `dump --json` of the listed runs
    /// with the failure summary's tables as `summary` (what --out writes beside the Markdown).
    #[arg(long, conflicts_with = "out")]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub scorer: super::ScorerArgs,
    #[command(flatten)]
    pub notes: super::NotesArgs,
}

/// `toolcap-tui report`: exit 0 when written, 2 on error.
pub fn run(args: &ReportArgs) -> i32 {
    let mode = Reveal::from_flag(args.reveal);
    let Some(query) = super::parse_filter(args.filter.as_deref()) else {
        return 2;
    };
    let remote = match args.remote.options() {
        Ok(remote) => remote,
        Err(why) => {
            eprintln!("toolcap-tui report: {why}");
            return 2;
        }
    };
    let (mut store, _) = load_into(
        Store::unindexed().deciding_by(args.scorer.rule()),
        &args.sources,
        &remote,
    );
    args.notes.read_into(&mut store, &args.sources);
    let store = super::kept_until_exit(store);
    if store.is_empty() {
        eprintln!("toolcap-tui report: nothing could be loaded");
        super::say_why_nothing_loaded("report", store);
        return 2;
    }
    let selection = match &query {
        Some(query) => Selection::filtered(store, query, mode),
        None => Selection::all(store),
    };
    let report = build(store, &selection, mode);
    match &args.out {
        Some(path) => match write(&report, path, store, &selection, mode) {
            Ok(bytes) => {
                eprintln!(
                    "toolcap-tui report: {} failing of {} listed → {} and {} ({bytes} bytes)",
                    report.failing,
                    report.listed,
                    path.display(),
                    json_path(path).display()
                );
                0
            }
            Err(why) => {
                eprintln!("toolcap-tui report: {}: {why}", path.display());
                2
            }
        },
        None if args.json => {
            match write_json(std::io::stdout().lock(), &report, store, &selection, mode) {
                Ok(_) => 0,
                Err(why) => {
                    eprintln!("toolcap-tui report: {why}");
                    2
                }
            }
        }
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(report.markdown.as_bytes());
            0
        }
    }
}
