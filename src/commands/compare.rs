//! `toolcap-tui compare A B`: two runs of the same evaluation, case by case, as a CI gate.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::RemoteArgs;
use crate::redact::{self, Reveal};
use crate::sources::load::load_into;
use crate::store::Store;
use crate::tui::compare::CompareState;
use crate::tui::config::{self, Config};
use crate::views::compare::{Comparison, KeyRule, compare, markdown, text};
use crate::views::out_file;

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The run before: trace files, a directory (searched recursively) or a remote source.
    pub a: PathBuf,
    /// The run after, read the same way.
    pub b: PathBuf,
    /// Print the comparison as JSON: one array per class (`newly_failing`, `fixed`,
    /// `still_failing`, `still_passing`, `only_in_a`, `only_in_b`).
    #[arg(long, conflicts_with_all = ["md", "text"])]
    pub json: bool,
    /// Print the comparison as Markdown: the summary, then a table per class that changed or
    /// still fails.
    #[arg(long, conflicts_with = "text")]
    pub md: bool,
    /// Print the comparison as plain text even on a terminal (where it opens the interactive
    /// view otherwise).
    #[arg(long)]
    pub text: bool,
    /// Write the output to FILE (0600, written beside it and renamed over it) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Pair runs by this attribute's text (on a run's first span that has it) instead of the
    /// case the format names, e.g. `--key attr:dataset.example.id`; runs without it are paired
    /// by name and occurrence.
    #[arg(long, value_name = "attr:NAME", value_parser = key_rule)]
    pub key: Option<KeyRule>,
    /// What makes the exit code 1: `newly-failing` (default: a case passing in A, or absent
    /// from it, fails in B), `any-failing` (any case fails in B), or `score-drop=X` (the mean
    /// evaluator score falls by more than X from A to B).
    #[arg(long, value_parser = fail_on, default_value = "newly-failing")]
    pub fail_on: FailOn,
    /// Show texts the redaction pass would mask (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub scorer: super::ScorerArgs,
    #[command(flatten)]
    pub notes: super::NotesArgs,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailOn {
    /// A case passing in A (or absent from it) fails in B.
    NewlyFailing,
    /// Any case fails in B.
    AnyFailing,
    /// The mean evaluator score falls by more than this from A to B.
    ScoreDrop(f64),
}

fn fail_on(text: &str) -> Result<FailOn, String> {
    match text {
        "newly-failing" => Ok(FailOn::NewlyFailing),
        "any-failing" => Ok(FailOn::AnyFailing),
        _ => match text.strip_prefix("score-drop=").map(str::parse::<f64>) {
            Some(Ok(drop)) if drop.is_finite() && drop >= 0.0 => Ok(FailOn::ScoreDrop(drop)),
            _ => Err(format!(
                "expected newly-failing, any-failing or score-drop=X (X a number >= 0), got {text:?}"
            )),
        },
    }
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
        let (mut store, _) = load_into(
            Store::unindexed().deciding_by(args.scorer.rule()),
            std::slice::from_ref(source),
            &remote,
        );
        args.notes
            .read_into(&mut store, std::slice::from_ref(source));
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
    let rule = args.key.clone().unwrap_or(KeyRule::Case);
    let shown = |path: &PathBuf| redact::sanitize_line(&path.display().to_string());
    let interactive = !(args.json || args.md || args.text || args.out.is_some())
        && crate::tui::terminal_check().is_ok();
    if interactive {
        let sources = [shown(&args.a), shown(&args.b)];
        return run_interactive([stores[0], stores[1]], sources, rule, mode, args.fail_on);
    }
    let comparison = compare(stores[0], stores[1], &rule, mode);
    let output = if args.json {
        // Control and invisible characters are written as escapes, as in every JSON output.
        match serde_json::to_string_pretty(&comparison) {
            Ok(json) => redact::escape_json_text(&json).into_owned() + "\n",
            Err(why) => {
                eprintln!("toolcap-tui compare: {why}");
                return 2;
            }
        }
    } else if args.md {
        markdown(&comparison, &shown(&args.a), &shown(&args.b))
    } else {
        text(&comparison, &shown(&args.a), &shown(&args.b))
    };
    let written = match &args.out {
        Some(path) => out_file::replace(path, |file| file.write_all(output.as_bytes())),
        None => std::io::stdout().lock().write_all(output.as_bytes()),
    };
    if let Err(why) = written {
        match &args.out {
            Some(path) => eprintln!("toolcap-tui compare: {}: {why}", shown(path)),
            None => eprintln!("toolcap-tui compare: {why}"),
        }
        return 2;
    }
    exit_code(&comparison, args.fail_on)
}

/// The interactive view over the comparison; the exit code is the gate's, as without it.
fn run_interactive(
    stores: [&'static Store; 2],
    sources: [String; 2],
    rule: KeyRule,
    mode: Reveal,
    fail_on: FailOn,
) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(why) => {
            eprintln!("toolcap-tui compare: cannot start the async runtime: {why}");
            return 2;
        }
    };
    // Revealed once: the view masks every text again under its own mode, so `r` needs no
    // second pass over the runs.
    let comparison = compare(stores[0], stores[1], &rule, Reveal::Revealed);
    let (config, warning) = view_config();
    let mut state = CompareState::new(comparison, stores, sources, rule, mode, config);
    state.message = warning;
    if let Err(why) = runtime.block_on(crate::tui::compare::show(&mut state)) {
        eprintln!("toolcap-tui compare: {why}");
        return 2;
    }
    exit_code(&state.comparison, fail_on)
}

/// The user's theme with the default keys (the view's keys are its own, and the gold diff it
/// embeds names the default ones in its titles), and the first problem with the config file.
fn view_config() -> (Config, Option<String>) {
    let no_color = config::no_color_requested();
    let user = config::load(no_color);
    let mut view = config::from_toml("", no_color);
    view.theme = user.theme;
    (view, user.warnings.into_iter().next())
}

fn key_rule(text: &str) -> Result<KeyRule, String> {
    match text.strip_prefix("attr:") {
        Some(name) if !name.trim().is_empty() => Ok(KeyRule::Attribute(name.to_owned())),
        _ => Err(format!("expected attr:NAME, got {text:?}")),
    }
}

fn exit_code(comparison: &Comparison, fail_on: FailOn) -> i32 {
    let failing = match fail_on {
        FailOn::NewlyFailing => comparison.newly_failing_in_b(),
        FailOn::AnyFailing => comparison.failing_in_b(),
        FailOn::ScoreDrop(drop) => {
            let (a, b) = (
                comparison.summary.a.mean_score,
                comparison.summary.b.mean_score,
            );
            // A side no evaluator scored cannot show a drop: a B without scores fails the gate
            // when A had them (its evaluation is missing, not better).
            usize::from(match (a, b) {
                (Some(a), Some(b)) => a - b > drop,
                (Some(_), None) => true,
                (None, _) => false,
            })
        }
    };
    i32::from(failing > 0)
}
