//! `toolcap-tui compare A B`: two runs of the same evaluation, case by case, as a CI gate.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::RemoteArgs;
use crate::redact::{self, Reveal};
use crate::sources::load::load_store_with;
use crate::views::compare::{Comparison, compare, text};

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The run before: trace files, a directory (searched recursively) or a remote source.
    pub a: PathBuf,
    /// The run after, read the same way.
    pub b: PathBuf,
    /// Print the comparison as JSON: one array per class (`newly_failing`, `fixed`,
    /// `still_failing`, `still_passing`, `only_in_a`, `only_in_b`).
    #[arg(long)]
    pub json: bool,
    /// What makes the exit code 1: a case that newly fails (default), or any case failing in B.
    #[arg(long, value_enum, default_value_t = FailOn::NewlyFailing)]
    pub fail_on: FailOn,
    /// Show texts the redaction pass would mask (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// A case passing in A (or absent from it) fails in B.
    NewlyFailing,
    /// Any case fails in B.
    AnyFailing,
}

/// Exit 0 when nothing fails as `--fail-on` says, 1 when something does, 2 on error.
pub fn run(args: &CompareArgs) -> i32 {
    let mode = Reveal::from_flag(args.reveal);
    let remote = match args.remote.options() {
        Ok(remote) => remote,
        Err(why) => {
            eprintln!("toolcap-tui compare: {why}");
            return 2;
        }
    };
    let mut stores = Vec::new();
    for (side, source) in [("A", &args.a), ("B", &args.b)] {
        let (store, _) = load_store_with(std::slice::from_ref(source), &remote);
        let store = super::kept_until_exit(store);
        if store.is_empty() {
            eprintln!(
                "toolcap-tui compare: nothing could be loaded from {side} ({})",
                redact::sanitize_line(&source.display().to_string())
            );
            super::say_why_nothing_loaded("compare", store);
            return 2;
        }
        stores.push(store);
    }
    let comparison = compare(stores[0], stores[1], mode);
    let written = if args.json {
        // Control and invisible characters are written as escapes, as in every JSON output.
        serde_json::to_string_pretty(&comparison)
            .map_err(std::io::Error::other)
            .and_then(|json| {
                let json = redact::escape_json_text(&json).into_owned() + "\n";
                std::io::stdout().lock().write_all(json.as_bytes())
            })
    } else {
        let shown = |path: &PathBuf| redact::sanitize_line(&path.display().to_string());
        std::io::stdout()
            .lock()
            .write_all(text(&comparison, &shown(&args.a), &shown(&args.b)).as_bytes())
    };
    if let Err(why) = written {
        eprintln!("toolcap-tui compare: {why}");
        return 2;
    }
    exit_code(&comparison, args.fail_on)
}

fn exit_code(comparison: &Comparison, fail_on: FailOn) -> i32 {
    let failing = match fail_on {
        FailOn::NewlyFailing => {
            comparison.newly_failing.len()
                + comparison
                    .only_in_b
                    .iter()
                    .filter(|entry| entry.b.as_ref().is_some_and(|b| b.failing))
                    .count()
        }
        FailOn::AnyFailing => comparison.failing_in_b(),
    };
    i32::from(failing > 0)
}
