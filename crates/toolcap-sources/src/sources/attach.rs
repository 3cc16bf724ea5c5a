//! Attaching to a running `toolcap-tui serve`: follow its `GET /api/v1/stream` feed (NDJSON,
//! one OTLP/JSON `ExportTraceServiceRequest` per line), and reconnect with capped exponential
//! backoff when the receiver restarts or is not up yet.
//!
//! Resuming: the feed replays the spool from the start, and `?skip=N` skips its first N lines.
//! The client counts the complete, non-blank lines it has consumed and asks for exactly those
//! to be skipped, so a reconnect neither repeats nor misses a request. A line cut off by a
//! dropped connection is not counted; it arrives whole after the reconnect.
//!
//! Every line is written to a bounded temporary spool ([`super::live_spool`]) before it is
//! built, so its payloads are byte ranges into the spool, not copies in memory.

use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::{Request, StatusCode, Uri, header};
use tokio::sync::mpsc::Sender;
use tokio::task::JoinHandle;

use crate::formats::otlp::{LiveBody, batch_from_live_body};
use crate::model::{Batch, Origin, Problem};
use crate::sources::live_spool::{DEFAULT_LIVE_SPOOL_BYTES, Keeper, Spooled};
use crate::sources::remote::{self, HttpClient, RemoteOptions};
use crate::sources::{IngestEvent, SourceStatus};

/// A feed line longer than this is reported and skipped (still counted as consumed).
pub const MAX_FEED_LINE_BYTES: usize = 64 << 20;

/// Parses one feed line (an OTLP/JSON request) into a batch; the line was written to the live
/// spool where given (`None`: keep payloads in memory).
pub type LineParser = fn(Origin, &[u8], Option<&Spooled>) -> Batch;

/// Backoff bounds and the line parser.
#[derive(Clone)]
pub struct AttachOptions {
    /// First wait after a failed or dropped connection; doubled on each further failure.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    pub connect_timeout: Duration,
    /// Default: the line decoded as the OTLP/JSON request the feed sends.
    pub parse: LineParser,
    /// Token and `--header`s sent with every request.
    pub remote: RemoteOptions,
    /// Bytes of feed lines the live spool keeps (payloads of older ones are dropped).
    pub spool_bytes: u64,
    /// Where the spool's directory is made; `None`: [`super::live_spool::default_parent`].
    pub spool_parent: Option<std::path::PathBuf>,
}

impl Default for AttachOptions {
    fn default() -> Self {
        AttachOptions {
            backoff_min: Duration::from_millis(250),
            backoff_max: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            parse: parse_feed_line,
            remote: RemoteOptions::default(),
            spool_bytes: DEFAULT_LIVE_SPOOL_BYTES,
            spool_parent: None,
        }
    }
}

/// A feed line is an OTLP/JSON request (`serve` writes nothing else), decoded as one: no
/// format detection per line.
fn parse_feed_line(origin: Origin, line: &[u8], spooled: Option<&Spooled>) -> Batch {
    let body = LiveBody {
        bytes: line,
        protobuf: false,
        kept_in: spooled.map(|kept| (kept.segment.clone(), kept.offset)),
    };
    batch_from_live_body(&body, &origin, "otlp-json", true)
}

/// Follows `url` (e.g. `http://127.0.0.1:4318`) until `tx` is closed. Must be called from
/// inside a tokio runtime.
pub fn spawn_attach(url: String, tx: Sender<IngestEvent>) -> JoinHandle<()> {
    spawn_attach_with(url, tx, AttachOptions::default())
}

/// [`spawn_attach`] with explicit options.
pub fn spawn_attach_with(
    url: String,
    tx: Sender<IngestEvent>,
    options: AttachOptions,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut feed = Feed::new(url, tx, options);
        let _ = feed.run().await;
    })
}

fn is_tls_failure(error: &hyper_util::client::legacy::Error) -> bool {
    let chain = remote::error_chain(error);
    chain.contains("certificate") || chain.contains("tls") || chain.contains("TLS")
}

/// The app stopped listening.
struct Closed;

enum Ended {
    Closed,
    /// The connection could not be made or broke; `problem` is worth telling the user
    /// (a wrong URL or an unexpected answer, not "the receiver is down").
    Dropped {
        problem: Option<String>,
    },
}

impl From<Closed> for Ended {
    fn from(_: Closed) -> Self {
        Ended::Closed
    }
}

struct Feed {
    url: String,
    base: String,
    origin: Origin,
    tx: Sender<IngestEvent>,
    options: AttachOptions,
    /// `Err`: why no client could be made (an unreadable `--cacert`), said once.
    client: Result<HttpClient, crate::Error>,
    /// Complete non-blank lines consumed: the `skip` of the next connection.
    consumed: u64,
    /// A line above the size limit is being dropped until its newline.
    skipping_line: bool,
    /// The live spool the lines are written to; removed when the feed ends.
    keeper: Keeper,
    /// The last answer was 401: the status bar says so until a connection is made.
    unauthorized: bool,
}

impl Feed {
    fn new(url: String, tx: Sender<IngestEvent>, options: AttachOptions) -> Self {
        let client = remote::client(options.connect_timeout, &options.remote);
        let keeper = Keeper::new(options.spool_bytes, options.spool_parent.as_deref());
        Feed {
            base: url.trim_end_matches('/').to_owned(),
            origin: Origin::endpoint(url.clone()),
            url,
            tx,
            options,
            client,
            consumed: 0,
            skipping_line: false,
            keeper,
            unauthorized: false,
        }
    }

    async fn run(&mut self) -> Result<(), Closed> {
        if !remote::is_remote(&self.base) {
            return self
                .problem(format!(
                    "cannot attach to {}: only http:// and https:// feeds are supported",
                    self.url
                ))
                .await;
        }
        if let Err(why) = &self.client {
            return self
                .problem(format!("cannot attach to {}: {why}", self.url))
                .await;
        }
        let mut delay = self.options.backoff_min;
        let mut last_problem: Option<String> = None;
        loop {
            let mut connected = false;
            match self.stream_once(&mut connected).await {
                Ended::Closed => return Err(Closed),
                Ended::Dropped { problem } => {
                    if let Some(message) = problem
                        && last_problem.as_ref() != Some(&message)
                    {
                        self.problem(message.clone()).await?;
                        last_problem = Some(message);
                    }
                }
            }
            if connected {
                delay = self.options.backoff_min;
            }
            self.status(false, Some(delay)).await?;
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.tx.closed() => return Err(Closed),
            }
            delay = (delay * 2).min(self.options.backoff_max);
        }
    }

    async fn stream_once(&mut self, connected: &mut bool) -> Ended {
        self.unauthorized = false;
        let target = format!("{}/api/v1/stream?skip={}", self.base, self.consumed);
        let uri: Uri = match target.parse() {
            Ok(uri) => uri,
            Err(e) => {
                return Ended::Dropped {
                    problem: Some(format!("invalid feed URL {target}: {e}")),
                };
            }
        };
        let request = match self
            .options
            .remote
            .apply(Request::get(uri).header(header::ACCEPT, "application/x-ndjson"))
            .body(Empty::new())
        {
            Ok(request) => request,
            Err(e) => {
                return Ended::Dropped {
                    problem: Some(format!("cannot build the feed request: {e}")),
                };
            }
        };
        let Ok(client) = &self.client else {
            return Ended::Closed;
        };
        // A server that takes the connection but never answers is dropped and retried; once
        // the feed flows, a quiet one is normal (nothing new was received).
        let idle = self.options.remote.timeouts.idle;
        let response = tokio::select! {
            answer = client.request(request) => answer,
            _ = self.tx.closed() => return Ended::Closed,
            _ = tokio::time::sleep(idle) => {
                return Ended::Dropped {
                    problem: Some(format!(
                        "{}: no answer for {} s",
                        self.url,
                        idle.as_secs_f64()
                    )),
                };
            }
        };
        let response = match response {
            Ok(response) => response,
            // A TLS failure will not mend by retrying: say it; "down" needs no word.
            Err(e) if e.is_connect() && is_tls_failure(&e) => {
                return Ended::Dropped {
                    problem: Some(format!(
                        "cannot attach to {}: {}",
                        self.url,
                        remote::error_chain(&e)
                    )),
                };
            }
            Err(_) => return Ended::Dropped { problem: None },
        };
        self.unauthorized = response.status() == StatusCode::UNAUTHORIZED;
        if self.unauthorized {
            if self.token_file_changed() {
                return Ended::Dropped { problem: None };
            }
            return Ended::Dropped {
                problem: Some(format!(
                    "{} answered {} for /api/v1/stream{}",
                    self.url,
                    response.status(),
                    remote::unauthorized_hint(&self.options.remote)
                )),
            };
        }
        if response.status() != StatusCode::OK {
            return Ended::Dropped {
                problem: Some(format!(
                    "{} answered {} for /api/v1/stream; is it a toolcap-tui serve?",
                    self.url,
                    response.status()
                )),
            };
        }
        *connected = true;
        if self.status(true, None).await.is_err() {
            return Ended::Closed;
        }
        // A partial line from a previous connection was never counted; start clean.
        self.skipping_line = false;
        let mut body = response.into_body();
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                _ = self.tx.closed() => return Ended::Closed,
            };
            let Some(Ok(frame)) = frame else {
                // End of body or a broken connection: both mean reconnect and resume.
                return Ended::Dropped { problem: None };
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if let Err(Closed) = self.take_bytes(&mut pending, &data).await {
                return Ended::Closed;
            }
        }
    }

    /// Reads `--token-file` again after a 401 and takes its token when it differs from the one
    /// refused: a `serve` restarted without its old token file wrote a new one there.
    fn token_file_changed(&mut self) -> bool {
        let remote = &mut self.options.remote;
        let Some(path) = &remote.token_file else {
            return false;
        };
        match crate::receiver::token::read(path) {
            Ok(token) if remote.token.as_ref() != Some(&token) => {
                remote.token = Some(token);
                true
            }
            _ => false,
        }
    }

    /// Splits the feed into lines, handing each complete one over.
    async fn take_bytes(&mut self, pending: &mut Vec<u8>, data: &[u8]) -> Result<(), Closed> {
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', data) {
            let piece = data.get(start..end).unwrap_or_default();
            start = end + 1;
            if self.skipping_line {
                self.skipping_line = false;
                pending.clear();
                continue;
            }
            if pending.is_empty() {
                self.take_line(piece).await?;
            } else {
                pending.extend_from_slice(piece);
                let line = std::mem::take(pending);
                self.take_line(&line).await?;
            }
        }
        let rest = data.get(start..).unwrap_or_default();
        if self.skipping_line {
            return Ok(());
        }
        if pending.len() + rest.len() > MAX_FEED_LINE_BYTES {
            pending.clear();
            self.skipping_line = true;
            self.consumed += 1;
            return self
                .problem(format!(
                    "feed line {} is longer than {MAX_FEED_LINE_BYTES} bytes; skipped",
                    self.consumed
                ))
                .await;
        }
        pending.extend_from_slice(rest);
        Ok(())
    }

    async fn take_line(&mut self, line: &[u8]) -> Result<(), Closed> {
        if line.trim_ascii().is_empty() {
            return Ok(()); // keep-alive
        }
        self.consumed += 1;
        let spooled = self.keeper.keep(line);
        let mut batch = (self.options.parse)(self.origin.clone(), line, spooled.as_ref());
        if let Some(warning) = self.keeper.take_warning() {
            batch
                .problems
                .push(Problem::warning(&self.origin, None, warning));
        }
        self.send(IngestEvent::Batch(batch)).await
    }

    async fn status(&self, connected: bool, retry: Option<Duration>) -> Result<(), Closed> {
        self.send(IngestEvent::Status(SourceStatus::Attached {
            url: self.url.clone(),
            connected,
            retry_in_ms: retry.map(|d| d.as_millis() as u64),
            unauthorized: self.unauthorized,
        }))
        .await
    }

    async fn problem(&self, message: String) -> Result<(), Closed> {
        let mut batch = Batch::default();
        batch
            .problems
            .push(Problem::warning(&self.origin, None, message));
        self.send(IngestEvent::Batch(batch)).await
    }

    async fn send(&self, event: IngestEvent) -> Result<(), Closed> {
        self.tx.send(event).await.map_err(|_| Closed)
    }
}
