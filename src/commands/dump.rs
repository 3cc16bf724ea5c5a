//! `toolcap-tui dump`: print invocation trees (text, or one JSON document) of every source.

use std::path::PathBuf;

use clap::Args;

use super::RemoteArgs;
use crate::redact::Reveal;
use crate::sources::load::load_into;
use crate::store::Store;
use crate::views::dump::{
    Selection, explain_json, explain_text, write_selection_json, write_selection_text,
};

#[derive(Debug, Args, Clone, Default)]
pub struct DumpArgs {
    /// Trace files, directories (searched recursively), http(s):// URLs of a running `serve`
    /// (read once: what it has acknowledged so far), or jaeger+http(s)://HOST:16686?service=S.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Print one JSON document (schema: docs/dump.schema.json) instead of text trees.
    #[arg(long)]
    pub json: bool,
    /// Show payloads (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    /// Print, per source, the detected format, why, and what may have been lost.
    #[arg(long)]
    pub explain: bool,
    /// Only invocations matching QUERY (the TUI's `/` language, see docs/QUERIES.md); the
    /// JSON lists each one's matched span ids.
    #[arg(long, value_name = "QUERY", allow_hyphen_values = true)]
    pub filter: Option<String>,
    /// Print on stderr where the loaded store's memory goes, structure by structure, and the
    /// process's peak resident size.
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub scorer: super::ScorerArgs,
    #[command(flatten)]
    pub notes: super::NotesArgs,
}

/// Runs `dump`; returns the exit code: 0 when anything loaded, 2 when nothing could.
pub fn run(args: &DumpArgs) -> i32 {
    let Some(query) = super::parse_filter(args.filter.as_deref()) else {
        return 2;
    };
    let remote = match args.remote.options() {
        Ok(remote) => remote,
        Err(why) => {
            eprintln!("toolcap-tui dump: {why}");
            return 2;
        }
    };
    let (mut store, reports) = load_into(
        Store::unindexed().deciding_by(args.scorer.rule()),
        &args.sources,
        &remote,
    );
    args.notes.read_into(&mut store, &args.sources);
    let store = super::kept_until_exit(store);
    let mode = Reveal::from_flag(args.reveal);
    let selection = match &query {
        Some(query) => Selection::filtered(store, query, mode),
        None => Selection::all(store),
    };
    use std::io::Write;
    widen_stdout_pipe();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed pipe (`dump | head`) is not an error worth a message.
    let _ = if args.json {
        let extra = if args.explain {
            vec![("sources", explain_json(&reports, mode))]
        } else {
            Vec::new()
        };
        write_selection_json(&mut stdout, store, &selection, mode, extra)
    } else {
        let explained = match args.explain {
            true => stdout.write_all(explain_text(&reports, mode).as_bytes()),
            false => Ok(()),
        };
        explained.and_then(|()| write_selection_text(&mut stdout, store, &selection, mode))
    };
    let _ = stdout.flush();
    drop(stdout);
    if args.stats {
        eprint!("{}", crate::views::dump::memory_text(store));
    }
    if store.is_empty() {
        // Say why on stderr too: the output may be a pipe into a JSON tool.
        super::say_why_nothing_loaded("dump", store);
        2
    } else {
        0
    }
}

/// Grows stdout's buffer to 1 MiB when it is a pipe (Linux's ceiling for a process without
/// privileges): `dump --json` writes about as many bytes as the file it read, and through the
/// default 64 KiB pipe the writer waits on its reader sixteen times as often.
/// Not a pipe, or refused: nothing changes.
fn widen_stdout_pipe() {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let _ = crate::system::widen_pipe(std::io::stdout().as_fd(), 1 << 20);
    }
}
