//! `toolcap-tui serve`: the receiver with a durable spool as its sink and the read API on the
//! HTTP address. Prints the bound addresses (one per line, `http ADDR` / `grpc ADDR`) so a
//! caller that asked for port 0 can find them, and exits 0 after SIGINT/SIGTERM once every
//! accepted request is committed.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::spool::{Spool, SpoolConfig};
use super::{ReceiverConfig, RequestSink, token};

/// Serialized requests allowed to wait for the spool writer before clients get 503.
const QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// What `serve` was asked; the command line's flags are in `commands::serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub http: String,
    pub grpc: String,
    pub out: PathBuf,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub max_body_mb: u64,
    pub segment_mb: u64,
    pub insecure: bool,
    pub log_file: Option<PathBuf>,
    pub limits: super::Limits,
}

/// Runs the headless receiver until a signal; returns the exit code.
pub fn run(args: &ServeOptions) -> i32 {
    if let Err(why) = crate::logging::to_stderr(args.log_file.as_deref()) {
        eprintln!("toolcap-tui serve: --log-file {why}");
        return 2;
    }
    // A blank token would be no token, and no token leaves ingest open: refused, not guessed.
    if args
        .token
        .as_deref()
        .is_some_and(|token| token.trim().is_empty())
    {
        eprintln!("toolcap-tui serve: the token is empty or blank; give a token, or none");
        return 2;
    }
    let has_token = args.token.is_some() || args.token_file.is_some();
    for (flag, addr) in [("--http", &args.http), ("--grpc", &args.grpc)] {
        match super::exposure::check_bind(flag, addr, has_token, args.insecure) {
            Ok(None) => {}
            Ok(Some(warning)) => eprintln!("toolcap-tui serve: {warning}"),
            Err(refusal) => {
                eprintln!("toolcap-tui serve: {refusal}");
                return 2;
            }
        }
    }
    // Few blocking threads: each one that decodes a request keeps its own allocator arena, and
    // the receiver's memory budget matters more than parallel decoding beyond the core count.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(4)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("toolcap-tui serve: cannot start the runtime: {err}");
            return 2;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("toolcap-tui serve: {err:#}");
            2
        }
    }
}

async fn serve(args: &ServeOptions) -> anyhow::Result<()> {
    let mib = 1024 * 1024;
    // The spool (and its lock) first: a second serve on the same DIR must stop here, before
    // it binds anything or touches the token file.
    let spool = Arc::new(Spool::open(SpoolConfig {
        dir: args.out.clone(),
        segment_bytes: args.segment_mb.saturating_mul(mib),
        queue_bytes: QUEUE_BYTES,
    })?);
    let given_token = match (&args.token, &args.token_file) {
        (Some(token), _) => Some(token.clone()),
        (None, Some(path)) => Some(token::read(path)?),
        (None, None) => None,
    };
    // Ingest stays open without a given token (SDKs send none by default); the feed serves
    // raw payloads, so it always needs one.
    let (feed_token, token_file) = match &given_token {
        Some(token) => {
            let stale = args.out.join(token::TOKEN_FILE_NAME);
            if stale.exists() {
                std::fs::remove_file(&stale)?;
            }
            (token.clone(), args.token_file.clone())
        }
        // The token of an earlier run on this DIR is kept, so clients attached with its
        // token file reconnect after a restart.
        None => match token::kept_in(&args.out) {
            Ok(Some(kept)) => (kept, Some(args.out.join(token::TOKEN_FILE_NAME))),
            kept => {
                if let Err(why) = kept {
                    tracing::warn!("a new feed token replaces {why}");
                }
                let token = token::generate()?;
                let path = token::write_in(&args.out, &token)?;
                (token, Some(path))
            }
        },
    };
    let limits = args.limits.clone();
    // At the hard limit, the connection cap, not the open-file limit, decides when clients are
    // turned away.
    if let Some(soft) = crate::system::raise_open_file_limit() {
        // Each connection is a descriptor; leave room for the spool and the runtime.
        let room = usize::try_from(soft.saturating_sub(64) / 2).unwrap_or(usize::MAX);
        if limits.max_connections > room {
            tracing::warn!(
                "--max-connections {} per listener exceeds what the open-file limit ({soft}) \
                 allows for two listeners; accepting may fail before the cap",
                limits.max_connections
            );
        }
    }
    let config = ReceiverConfig {
        http: Some(args.http.clone()),
        grpc: Some(args.grpc.clone()),
        token: given_token.clone(),
        max_body_bytes: usize::try_from(args.max_body_mb.saturating_mul(mib)).unwrap_or(usize::MAX),
        limits: limits.clone(),
    };
    let feed = super::feed::router(super::feed::FeedConfig {
        spool: spool.state(),
        token: feed_token,
        stall_timeout: limits.feed_stall_timeout,
    });
    let sink: Arc<dyn RequestSink> = spool.clone();
    let handle = super::start(config, sink, Some(feed)).await?;

    let mut stdout = std::io::stdout().lock();
    if let Some(addr) = handle.http_addr {
        writeln!(stdout, "http {addr}")?;
    }
    if let Some(addr) = handle.grpc_addr {
        writeln!(stdout, "grpc {addr}")?;
    }
    writeln!(stdout, "spool {}", args.out.display())?;
    if let Some(path) = &token_file {
        writeln!(stdout, "token {}", path.display())?;
    }
    if let Some(addr) = handle.http_addr {
        let host = if addr.ip().is_unspecified() {
            std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
        } else {
            addr
        };
        match &token_file {
            Some(path) => writeln!(
                stdout,
                "attach toolcap-tui http://{host} --token-file {}",
                path.display()
            )?,
            None => writeln!(stdout, "attach TOOLCAP_TOKEN=... toolcap-tui http://{host}")?,
        }
    }
    stdout.flush()?;
    drop(stdout);

    wait_for_signal().await?;
    tracing::info!("shutting down");
    // Closing the spool first ends the feed streams, which graceful shutdown waits for; new
    // requests meanwhile get 503 (retryable), never a silent drop.
    let closing = spool.clone();
    tokio::task::spawn_blocking(move || closing.close()).await?;
    handle.shutdown().await;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        interrupted = tokio::signal::ctrl_c() => interrupted,
        _ = terminate.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}
