//! The command line: `toolcap-tui [SOURCE...]` opens the TUI; `dump`, `report`, `check` and
//! `serve` are the headless commands. The contract is in docs/ARCHITECTURE.md ("CLI contract").
//!
//! Commands sit at the edge: each submodule owns its clap types and turns them into the plain
//! options the library takes. Nothing below `commands` knows about clap.

use std::path::PathBuf;

use crate::Error;

use clap::{Args, Parser, Subcommand};

pub mod annotate;
pub mod check;
pub mod compare;
pub mod dump;
pub mod report;
pub mod serve;
pub mod tui;

use annotate::AnnotateArgs;
use check::CheckArgs;
use compare::CompareArgs;
use dump::DumpArgs;
use report::ReportArgs;
use serve::ServeArgs;
use tui::UiArgs;

#[derive(Debug, Parser)]
#[command(
    name = "toolcap-tui",
    version,
    about = "Explore the traces of tool-calling LLM agents",
    long_about = "Explore the traces of tool-calling LLM agents.\n\n\
        With SOURCEs (files, directories, or the http:// URL of a running `toolcap-tui serve`) it opens \
        the terminal UI; with no SOURCE (and no --listen) it opens the current directory. Payloads are redacted until you \
        press `r` (or pass --reveal).",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub ui: UiArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print invocation trees (text or JSON), redacted unless --reveal.
    Dump(DumpArgs),
    /// Triage report of the listed invocations: Markdown (failing ones in detail) plus the
    /// matching `dump --json` document beside it; redacted unless --reveal.
    Report(ReportArgs),
    /// Compare actual tool-call trajectories with a gold one; exit 0 match, 1 differs, 2 error.
    Check(CheckArgs),
    /// Compare two runs of the same evaluation case by case (newly failing, fixed, still
    /// failing, still passing, only in one); exit 0 when nothing newly fails, 1 when something
    /// does, 2 on error.
    Compare(CompareArgs),
    /// Set a triage note (a label and free text) on one run, appended to the notes file
    /// (`.toolcap/notes.jsonl` beside SOURCE, or --notes FILE); exit 0 when written, 2 on error.
    Annotate(AnnotateArgs),
    /// Headless OTLP receiver: spool every accepted request to DIR and serve a live feed.
    Serve(ServeArgs),
    /// Print a shell completion script, e.g. `toolcap-tui completions bash > ~/.local/share/bash-completion/completions/toolcap-tui`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `toolcap-tui man | man -l -`.
    Man,
}

/// How every command that reads sources reaches remote ones (`dump`, `check` and `report` read
/// them once, as a snapshot; the TUI follows them). One set of flags, so each command takes the
/// same credentials the same way.
#[derive(Debug, Args, Clone, Default)]
pub struct RemoteArgs {
    /// Bearer token sent to remote sources and, with --listen, required by the embedded
    /// receiver. Without it: --token-file, then the TOOLCAP_TOKEN environment variable.
    #[arg(long, value_parser = non_blank_token)]
    pub token: Option<String>,
    /// Read the token from FILE (e.g. the `serve.token` a `serve` wrote in its spool directory).
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Extra header sent to remote sources, e.g. --header 'X-Team: agents' (repeatable).
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// PEM certificate(s) to trust for https:// sources, beside the system's (or SSL_CERT_FILE).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Seconds a snapshot of remote sources (dump, check, report) may take in all before it
    /// gives up with exit 2 [default: 120, or TOOLCAP_REMOTE_TIMEOUT].
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub remote_timeout: Option<f64>,
}

/// Which scorers decide a verdict made of several, for every command that reads evaluations.
#[derive(Debug, Args, Clone, Default)]
pub struct ScorerArgs {
    /// Only these scorers decide whether an Inspect sample passes (repeatable): `NAME` fails it
    /// on `I`, `0` or `false`; `NAME>=X` fails it when the value, read as a number (C 1, P 0.5,
    /// I and N 0), is under X. Default: every scorer decides. A sample error fails it anyway.
    #[arg(long = "scorer", value_name = "NAME[>=X]")]
    pub scorers: Vec<crate::model::ScorerChoice>,
}

impl ScorerArgs {
    pub fn rule(&self) -> crate::model::ScorerRule {
        crate::model::ScorerRule {
            deciding: self.scorers.clone(),
        }
    }
}

/// Where the triage notes are read and written, for every command that shows runs.
#[derive(Debug, Args, Clone, Default)]
pub struct NotesArgs {
    /// The triage notes file (JSON lines, appended to) instead of `.toolcap/notes.jsonl` in
    /// the first SOURCE directory (or beside the first SOURCE file).
    #[arg(long = "notes", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl NotesArgs {
    /// The notes file of `sources`: `--notes`, else the sidecar of the first local source.
    pub fn path(&self, sources: &[PathBuf]) -> Option<PathBuf> {
        self.file
            .clone()
            .or_else(|| sources.iter().find_map(|s| crate::notes::sidecar_for(s)))
    }

    /// Reads the notes of `sources` into `store` (none when there is no local source).
    pub fn read_into(&self, store: &mut crate::store::Store, sources: &[PathBuf]) {
        if let Some(path) = self.path(sources) {
            store.set_notes(crate::notes::Notes::read(&path));
        }
    }
}

/// A number of seconds above 0, as `--remote-timeout` takes it.
fn positive_seconds(text: &str) -> Result<f64, Error> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs < 1e9 => Ok(secs),
        _ => Err(Error::NotSeconds { text: text.into() }),
    }
}

impl RemoteArgs {
    /// The token: `--token`, else `--token-file`, else `TOOLCAP_TOKEN`.
    pub fn token(&self) -> Result<Option<String>, Error> {
        if let Some(token) = &self.token {
            return Ok(Some(token.clone()));
        }
        if let Some(path) = &self.token_file {
            return crate::receiver::token::read(path)
                .map(Some)
                .map_err(Error::TokenFile);
        }
        token_from_env()
    }

    pub fn options(&self) -> Result<crate::sources::remote::RemoteOptions, Error> {
        let mut options =
            crate::sources::remote::RemoteOptions::from_args(self.token()?, &self.headers)?;
        options.ca_cert = self.cacert.clone();
        if let Some(secs) = self.remote_timeout {
            options.timeouts.total = std::time::Duration::from_secs_f64(secs);
        }
        // A token read from a file is read again when it is refused: a `serve` that made a new
        // one is followed without restarting the client.
        options.token_file = self.token_file.clone();
        Ok(options)
    }
}

/// The environment variable that stands for `--token` when neither it nor `--token-file` is
/// given.
pub const TOKEN_ENV: &str = "TOOLCAP_TOKEN";

/// `--token`'s parser: a blank token is refused rather than taken as none, since taking it as
/// none would leave open what it was meant to guard (an address `serve` binds for others).
fn non_blank_token(text: &str) -> Result<String, Error> {
    if text.trim().is_empty() {
        Err(Error::BlankToken)
    } else {
        Ok(text.to_owned())
    }
}

/// `TOOLCAP_TOKEN`, when set. Set but blank is an error for the same reason as a blank
/// `--token`: it is most often a substitution that failed (`TOOLCAP_TOKEN=$(cat missing)`).
pub fn token_from_env() -> Result<Option<String>, Error> {
    match std::env::var(TOKEN_ENV) {
        Ok(token) if token.trim().is_empty() => Err(Error::BlankTokenEnv),
        Ok(token) => Ok(Some(token)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::TokenEnvNotUtf8),
    }
}

/// Parses `--filter`; a bad query is printed with a caret under its position (`None` then).
fn parse_filter(filter: Option<&str>) -> Option<Option<crate::query::Query>> {
    match filter.map(crate::query::Query::parse).transpose() {
        Ok(query) => Some(query),
        Err(error) => {
            eprint!(
                "{}",
                crate::views::dump::query_error_text(filter.unwrap_or(""), &error)
            );
            None
        }
    }
}

/// Runs the parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Some(Command::Dump(args)) => dump::run(&args),
        Some(Command::Report(args)) => report::run(&args),
        Some(Command::Check(args)) => check::run(&args),
        Some(Command::Compare(args)) => compare::run(&args),
        Some(Command::Serve(args)) => serve::run(&args),
        Some(Command::Annotate(args)) => annotate::run(&args),
        Some(Command::Completions { shell }) => print_completions(shell),
        Some(Command::Man) => print_man_page(),
        None => tui::run(cli.ui),
    }
}

fn print_completions(shell: clap_complete::Shell) -> i32 {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    let mut stdout = std::io::stdout().lock();
    clap_complete::generate(shell, &mut command, "toolcap-tui", &mut stdout);
    0
}

fn print_man_page() -> i32 {
    use clap::CommandFactory as _;
    let mut stdout = std::io::stdout().lock();
    match clap_mangen::Man::new(Cli::command()).render(&mut stdout) {
        Ok(()) => 0,
        Err(e) => {
            // A closed pipe (`man | head`) is not worth a message.
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!("toolcap-tui man: {e}");
            }
            2
        }
    }
}

/// Prints on stderr the errors that left `store` empty, one line each, as the masking pass
/// shows them.
fn say_why_nothing_loaded(command: &str, store: &crate::store::Store) {
    let errors = store
        .problems()
        .iter()
        .filter(|p| p.severity == crate::model::Severity::Error);
    for problem in errors {
        eprintln!(
            "toolcap-tui {command}: {}",
            crate::redact::sanitize_line(&problem.to_string())
        );
    }
}

/// Keeps a store until the process exits instead of freeing it run by run: freeing 100,000 runs
/// one allocation at a time costs `dump` time for nothing and delays the shell after the TUI's
/// quit key. The operating system takes the memory back at exit.
fn kept_until_exit(store: crate::store::Store) -> &'static crate::store::Store {
    Box::leak(Box::new(store))
}
