//! `toolcap-tui [SOURCE...]`: the TUI's flags; starts the sources and hands the terminal to
//! [`crate::tui::show`].

use std::path::PathBuf;

use clap::Args;
use tokio::sync::mpsc;

use crate::redact::Reveal;
use crate::sources::live::{LiveSources, spawn_sources};
use crate::store::{Budget, Store};
use crate::tui::app::{App, GoldContext};
use crate::tui::config;

#[derive(Debug, Args, Default, Clone)]
pub struct UiArgs {
    /// Trace files, directories (watched for new data), http(s) URLs of a running `serve`,
    /// jaeger+http(s)://HOST:16686?service=S&since=1h, or phoenix+http(s)://HOST:6006[/PROJECT].
    pub sources: Vec<String>,
    /// Also run an OTLP receiver (HTTP on ADDR, default 127.0.0.1:4318; gRPC on port 4317).
    /// The address only as --listen=ADDR: `--listen ./traces` listens on the default and opens ./traces.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "127.0.0.1:4318"
    )]
    pub listen: Option<String>,
    /// gRPC address of the embedded receiver (with --listen).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4317")]
    pub grpc: String,
    #[command(flatten)]
    pub remote: super::RemoteArgs,
    #[command(flatten)]
    pub scorer: super::ScorerArgs,
    /// Let --listen bind an address other machines can reach without a --token (warned).
    #[arg(long)]
    pub insecure: bool,
    /// Where log lines go while the screen is drawn (refused requests, failed reads); never
    /// the terminal. Default: toolcap-tui.log in the user's state directory.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Start with payloads revealed (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    /// Keep at most this many invocations (oldest are evicted, and the status bar says so).
    #[arg(long, value_name = "N")]
    pub max_invocations: Option<usize>,
    /// Keep at most about this many MiB of spans in memory (oldest runs are evicted first,
    /// and the status bar says so). 0 means no limit.
    #[arg(long, value_name = "MIB", default_value_t = 2048)]
    pub max_memory_mb: u64,
    /// Gold trajectory for the diff view (`d`).
    #[arg(long, value_name = "FILE")]
    pub gold: Option<PathBuf>,
    #[command(flatten)]
    pub notes: super::NotesArgs,
    /// On quitting, print on stderr where the store's memory went, structure by structure,
    /// with the heap in use and the resident size then (as `dump --stats` does).
    #[arg(long)]
    pub stats: bool,
}

/// Capacity of the ingest channel; a full channel slows sources down instead of growing memory.
const INGEST_CAPACITY: usize = 1024;

/// `toolcap-tui [SOURCE...]`: runs the full-screen app; returns the process exit code.
pub fn run(args: UiArgs) -> i32 {
    keep_big_buffers_out_of_the_heap();
    let remote = match args.remote.options() {
        Ok(remote) => remote,
        Err(why) => {
            eprintln!("toolcap-tui: {why}");
            return 2;
        }
    };
    if let Some(http) = &args.listen {
        let has_token = remote.token.is_some();
        let grpc = Some(&args.grpc).filter(|g| !g.is_empty());
        let addrs = std::iter::once(("--listen", http)).chain(grpc.map(|g| ("--grpc", g)));
        for (flag, addr) in addrs {
            match crate::receiver::exposure::check_bind(flag, addr, has_token, args.insecure) {
                Ok(None) => {}
                // Said before the screen is taken over, so it is seen.
                Ok(Some(warning)) => eprintln!("toolcap-tui: {warning}"),
                Err(refusal) => {
                    eprintln!("toolcap-tui: {refusal}");
                    return 2;
                }
            }
        }
    }
    if let Err(message) = crate::tui::terminal_check() {
        eprintln!("{message}");
        return 2;
    }
    // From here on the screen is ours: log lines go to a file, never to stderr.
    let log_file = args
        .log_file
        .clone()
        .or_else(crate::logging::default_log_file);
    let log_problem = log_file
        .as_deref()
        .map(crate::logging::to_file_only)
        .and_then(Result::err);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolcap-tui: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let config = config::load(config::no_color_requested());
    let store = Store::with_budget(Budget {
        max_invocations: args.max_invocations,
        max_bytes: Some(args.max_memory_mb)
            .filter(|&mb| mb > 0)
            .map(|mb| mb.saturating_mul(1 << 20)),
    })
    .indexing_later()
    .deciding_by(args.scorer.rule());
    let mut app = App::new(store, config, Reveal::from_flag(args.reveal));
    // With no SOURCE (and no --listen) the TUI opens the current directory, and keeps its
    // notes there.
    let local: Vec<PathBuf> = match args.sources.is_empty() && args.listen.is_none() {
        true => vec![PathBuf::from(".")],
        false => args.sources.iter().map(PathBuf::from).collect(),
    };
    if let Some(path) = args.notes.path(&local) {
        crate::tui::app::notes::use_notes_file(&mut app, path);
    }
    if let Some(path) = &args.gold {
        match crate::gold::source::load_gold_file(path) {
            Ok((file, problems)) => {
                app.gold = GoldContext::new(Some(file));
                if let Some(problem) = problems.first() {
                    app.message = Some(crate::redact::sanitize_line(&problem.to_string()));
                }
            }
            Err(why) => {
                eprintln!(
                    "toolcap-tui: --gold {}: {}",
                    path.display(),
                    crate::redact::sanitize_line(&why.to_string())
                );
                return 2;
            }
        }
    }
    let result = runtime.block_on(async {
        let (tx, rx) = mpsc::channel(INGEST_CAPACITY);
        let wanted = LiveSources {
            sources: args.sources.clone(),
            listen: args.listen.clone(),
            grpc: Some(args.grpc.clone()).filter(|g| !g.is_empty()),
        };
        let sources = spawn_sources(&wanted, &remote, tx).await;
        if let Some(note) = sources.notes.first() {
            app.message = Some(note.clone());
        } else if let Some(why) = &log_problem {
            app.message = Some(crate::redact::sanitize_line(&format!(
                "not logging: --log-file {why}"
            )));
        }
        let outcome = crate::tui::show(&mut app, rx).await;
        if let Some(receiver) = sources.receiver {
            receiver.shutdown().await;
        }
        drop(sources.watch);
        outcome
    });
    // Background loaders may still be reading; they stop when the runtime drops.
    runtime.shutdown_background();
    // Read with the views still held, as they were while the screen was shown; the terminal
    // is restored, so stderr is seen.
    if args.stats {
        eprint!("{}", crate::views::dump::memory_text(&app.store));
    }
    // The terminal is restored: what is left is freeing the store, which the exit does at once.
    super::kept_until_exit(std::mem::take(&mut app.store));
    drop(app);
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("toolcap-tui: {e}");
            1
        }
    }
}

/// Buffers of 1 MiB and more (file pieces, parse batches) get their own mappings, handed back
/// to the system when freed. glibc's default raises that threshold to the largest buffer freed
/// so far, so after the first piece the pieces would come out of the heap, between the runs
/// the store keeps, and the heap would grow around them. A fixed threshold keeps the TUI's peak
/// lower while it reads, for a slightly slower read (each piece's pages are fresh from the
/// kernel).
fn keep_big_buffers_out_of_the_heap() {
    crate::system::fix_mmap_threshold(1 << 20);
}
