//! `toolcap-tui serve`: the headless OTLP receiver's flags, turned into [`ServeOptions`].

use std::path::PathBuf;

use clap::Args;

use crate::receiver::serve::ServeOptions;

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
    /// Bearer token every request must carry. Without it: --token-file, then the TOOLCAP_TOKEN
    /// environment variable; without any, ingest is open and the feed requires a random token
    /// kept in DIR/serve.token (the same one across restarts on the same DIR).
    #[arg(long, value_parser = super::non_blank_token)]
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
    /// Also append log lines (refused requests, failed writes, dropped readers) to FILE;
    /// they always go to stderr.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Receiver limits against slow, idle and stalled clients (defaults in docs/RECEIVER.md, "Limits").
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
    /// Connections per listener; beyond it the least productive connection (idle the longest,
    /// or furthest behind --min-body-rate) of the peer holding the most is closed.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// Connections one peer address may hold idle or mid-request; beyond it that peer's least
    /// productive one is closed.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections_per_peer: usize,
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
            max_connections_per_peer: self.max_connections_per_peer.max(1),
            feed_stall_timeout: Duration::from_secs(self.feed_stall_timeout.max(1)),
            ..crate::receiver::Limits::default()
        }
    }
}

/// Runs `serve`; returns the exit code.
pub fn run(args: &ServeArgs) -> i32 {
    let token = match (&args.token, &args.token_file) {
        (None, None) => match super::token_from_env() {
            Ok(token) => token,
            Err(why) => {
                eprintln!("toolcap-tui serve: {why}");
                return 2;
            }
        },
        (token, _) => token.clone(),
    };
    crate::receiver::serve::run(&ServeOptions {
        http: args.http.clone(),
        grpc: args.grpc.clone(),
        out: args.out.clone(),
        token,
        token_file: args.token_file.clone(),
        max_body_mb: args.max_body_mb,
        segment_mb: args.segment_mb,
        insecure: args.insecure,
        log_file: args.log_file.clone(),
        limits: args.limits.to_limits(),
    })
}
