//! The command line: `toolcap-tui [SOURCE...]` opens the TUI; `dump`, `check` and `serve` are
//! the headless commands. The contract is in README.md ("CLI").

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Bearer token the embedded receiver requires and that is sent to a `serve` feed
    /// (or TOOLCAP_TOKEN).
    #[arg(long, env = "TOOLCAP_TOKEN", hide_env_values = true)]
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
    /// Let --listen bind an address other machines can reach without a --token (warned).
    #[arg(long)]
    pub insecure: bool,
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

/// How `dump` and `check` reach remote sources (read once, as a snapshot).
#[derive(Debug, Args, Clone, Default)]
pub struct RemoteArgs {
    /// Bearer token sent to remote sources (or TOOLCAP_TOKEN).
    #[arg(long, env = "TOOLCAP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Extra header sent to remote sources, e.g. --header 'X-Team: agents' (repeatable).
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// PEM certificate(s) to trust for https:// sources, beside the system's (or SSL_CERT_FILE).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
}

impl RemoteArgs {
    pub fn options(&self) -> Result<crate::sources::remote::RemoteOptions, String> {
        let mut options =
            crate::sources::remote::RemoteOptions::from_args(self.token.clone(), &self.headers)?;
        options.ca_cert = self.cacert.clone();
        Ok(options)
    }
}

#[derive(Debug, Args, Clone, Default)]
pub struct ReportArgs {
    /// Trace files or directories (searched recursively).
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Only invocations matching this query (the `/` query language, e.g. `is:failing`).
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    /// Show payloads (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    /// Write the Markdown here and the `dump --json` subset beside it (FILE with .json);
    /// without it the Markdown goes to stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct DumpArgs {
    /// Trace files, directories (searched recursively), http(s):// URLs of a running `serve`
    /// (read once: what it has acknowledged so far), or jaeger+http(s)://HOST:16686?service=S.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Print one JSON document (schema in README.md) instead of text trees.
    #[arg(long)]
    pub json: bool,
    /// Show payloads (secret-looking values stay masked).
    #[arg(long)]
    pub reveal: bool,
    /// Print, per source, the detected format, why, and what may have been lost.
    #[arg(long)]
    pub explain: bool,
    /// Only invocations matching QUERY (the TUI's `/` language, see README "Queries"); the
    /// JSON lists each one's matched span ids.
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

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
}

#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// OTLP/HTTP address (POST /v1/traces, GET /api/v1/stream, GET /api/v1/health).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    pub http: String,
    /// OTLP/gRPC address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4317")]
    pub grpc: String,
    /// Spool directory: every accepted request is appended here before it is acknowledged.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Bearer token every request must carry (or TOOLCAP_TOKEN). Without it (or --token-file),
    /// ingest is open and the feed requires a random token written to DIR/serve.token.
    #[arg(long, env = "TOOLCAP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Read the token every request must carry from FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Largest request body accepted, in MiB, counted after decompression.
    #[arg(long, value_name = "MIB", default_value_t = 20)]
    pub max_body_mb: u64,
    /// Spool segment size before rotating to a new file, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub segment_mb: u64,
    /// Bind an address other machines can reach without a token (warned).
    #[arg(long)]
    pub insecure: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Receiver limits against slow, idle and stalled clients (defaults in README, "serve").
#[derive(Debug, Args, Clone)]
pub struct LimitArgs {
    /// Seconds from the first byte of a request to the end of its headers.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub header_timeout: u64,
    /// Seconds a connection may send nothing before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub idle_timeout: u64,
    /// Seconds of grace for a request body before --min-body-rate applies.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub body_timeout: u64,
    /// Bytes per second a request body must average after the grace (else 503 + Retry-After).
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    pub min_body_rate: u64,
    /// Connections per listener; beyond it the connection idle the longest is closed.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// Seconds a feed reader may take nothing before it is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub feed_stall_timeout: u64,
}

impl LimitArgs {
    pub fn to_limits(&self) -> crate::receiver::Limits {
        use std::time::Duration;
        crate::receiver::Limits {
            header_timeout: Duration::from_secs(self.header_timeout.max(1)),
            idle_timeout: Duration::from_secs(self.idle_timeout.max(1)),
            body_timeout: Duration::from_secs(self.body_timeout.max(1)),
            min_body_bytes_per_sec: self.min_body_rate.max(1),
            max_connections: self.max_connections.max(1),
            feed_stall_timeout: Duration::from_secs(self.feed_stall_timeout.max(1)),
            ..crate::receiver::Limits::default()
        }
    }
}

/// Runs the parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Some(Command::Dump(args)) => crate::views::dump::run(&args),
        Some(Command::Report(args)) => crate::triage::report::run(&args),
        Some(Command::Check(args)) => crate::gold::check::run(&args),
        Some(Command::Serve(args)) => crate::receiver::serve::run(&args),
        Some(Command::Completions { shell }) => print_completions(shell),
        Some(Command::Man) => print_man_page(),
        None => crate::tui::run(cli.ui),
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
