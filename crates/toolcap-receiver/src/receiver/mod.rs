//! OTLP receiver: OTLP/HTTP `POST /v1/traces` and OTLP/gRPC `TraceService/Export`, answering
//! with the status codes and bodies the OTLP spec requires (docs/ARCHITECTURE.md, "Receiver
//! obligations").
//!
//! The server only decodes and validates, once, with the decoders trace files use (gRPC bodies
//! too: tonic hands over the message's bytes). Where accepted requests go is a [`RequestSink`],
//! which takes the decoded request on the decoding thread: `toolcap-tui serve` spools it to a
//! durable [`spool::Spool`], the TUI's `--listen` builds its spans right there
//! (`sources::listen`). A sink that cannot take more answers [`SinkError::Full`], which becomes
//! 503 + `Retry-After` (HTTP) or UNAVAILABLE (gRPC): load never turns into a silent drop or a 500.

pub mod connections;
pub mod decode;
pub mod exposure;
pub mod feed;
mod grpc;
mod http;
pub mod serve;
pub mod spool;
pub mod token;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::formats::otlp::CheckedRequest;
use decode::{DecodeError, Validation};

/// Largest body accepted by default, counted after decompression (the spec's recommendation).
pub const DEFAULT_MAX_BODY_BYTES: usize = 20 * 1024 * 1024;

/// Seconds a client is told to wait when the sink is full.
pub const RETRY_AFTER_SECS: u64 = 1;

/// Requests decoded at once. Each may hold a body and its inflated copy up to the size limit,
/// so this bounds the receiver's memory whatever the number of clients.
pub const MAX_REQUESTS_IN_FLIGHT: usize = 8;

/// How long a request waits for one of those slots before it is told to retry (503).
pub const IN_FLIGHT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Request bodies being received, in bytes, across all clients. A client holds only the bytes
/// it has actually sent, so slow senders cannot keep fast ones out.
pub const BODY_BUDGET_BYTES: usize = 64 * 1024 * 1024;

/// How long shutdown waits for open connections to finish before closing them.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Limits that keep slow, idle or stalled clients from starving the others. Every one answers
/// the client in a way the OTLP spec lets it retry (503 + Retry-After, UNAVAILABLE, or a
/// closed idle connection it simply reopens).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time from the first byte of a request to the end of its headers.
    pub header_timeout: Duration,
    /// A kept-alive (or new) connection that sends nothing for this long is closed.
    pub idle_timeout: Duration,
    /// Grace for a request body before the minimum rate applies.
    pub body_timeout: Duration,
    /// After the grace, a body must keep arriving at this many bytes per second on average.
    pub min_body_bytes_per_sec: u64,
    /// Connections per listener; beyond it, the least productive one of the peer holding the
    /// most is closed (`connections`' module note).
    pub max_connections: usize,
    /// Connections one peer address may hold idle or mid-request (an IPv6 /64 counts as one);
    /// beyond it, that peer's least productive one is closed. Connections whose request is
    /// handled or answered (feed readers) do not count against it.
    pub max_connections_per_peer: usize,
    /// A feed reader that takes nothing for this long is disconnected.
    pub feed_stall_timeout: Duration,
    /// Whole gRPC calls, body included (tonic enforces it; CANCELLED is retryable).
    pub grpc_request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(10),
            min_body_bytes_per_sec: 4 * 1024,
            max_connections: 1024,
            max_connections_per_peer: 256,
            feed_stall_timeout: Duration::from_secs(30),
            grpc_request_timeout: Duration::from_secs(60),
        }
    }
}

/// Where and how the receiver listens.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// OTLP/HTTP address; `None` disables HTTP. Port 0 binds any free port.
    pub http: Option<String>,
    /// OTLP/gRPC address; `None` disables gRPC.
    pub grpc: Option<String>,
    /// Bearer token every request must carry; `None` accepts all requests.
    pub token: Option<String>,
    /// Largest request body in bytes, after decompression.
    pub max_body_bytes: usize,
    pub limits: Limits,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            http: Some("127.0.0.1:4318".into()),
            grpc: Some("127.0.0.1:4317".into()),
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            limits: Limits::default(),
        }
    }
}

/// Which wire protocol a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    HttpProtobuf,
    HttpJson,
    Grpc,
}

/// One accepted export request, as the decoding thread holds it. It lives only for
/// [`RequestSink::take`]: a sink builds what it keeps from the decoded request there, so no
/// one decodes the body again to use it.
pub struct ReceivedRequest<'a> {
    /// The decompressed body as the client sent it; it still holds the rejected spans, if any.
    pub body: &'a RawBody,
    /// The body decoded by the decoders trace files use, the rejected spans removed.
    pub checked: &'a CheckedRequest<'a>,
    pub transport: Transport,
}

impl ReceivedRequest<'_> {
    /// Spans accepted (the client is told the others were rejected).
    pub fn spans(&self) -> usize {
        self.checked.accepted
    }
}

/// Bytes of an `ExportTraceServiceRequest` in one of the two OTLP encodings.
#[derive(Debug, Clone)]
pub struct RawBody {
    pub bytes: bytes::Bytes,
    pub body_type: decode::BodyType,
}

/// Why a sink did not take a request. Both are retryable for the client.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SinkError {
    #[error("receiver is full, retry later")]
    Full,
    #[error("receiver cannot store requests right now: {0}")]
    Unavailable(String),
    /// The request can never be stored as it is (retrying it cannot help).
    #[error("{0}")]
    TooLarge(String),
}

/// What a sink has still to do once it has taken a request; the client is acknowledged when it
/// resolves (for the spool: once the request is written and synced).
pub type Delivery = BoxFuture<'static, Result<(), SinkError>>;

/// A delivery with nothing left to do.
pub fn delivered() -> Delivery {
    Box::pin(async { Ok(()) })
}

/// Destination of accepted requests.
pub trait RequestSink: Send + Sync + 'static {
    /// Takes an accepted request, on the blocking thread that decoded it. A sink that cannot
    /// take more says so here ([`SinkError::Full`]).
    fn take(&self, received: ReceivedRequest<'_>) -> Result<Delivery, SinkError>;
}

/// Why a body was refused: the client's answer depends on which.
pub enum Refusal {
    Decode(DecodeError),
    Sink(SinkError),
}

/// Decodes and judges an uncompressed body, and hands it to the sink when it holds accepted
/// spans: the one decode every transport shares. CPU work: run it on a blocking thread.
pub fn judge_and_take(
    sink: &dyn RequestSink,
    body: RawBody,
    transport: Transport,
) -> Result<(Validation, Option<Delivery>), Refusal> {
    let (checked, validation) =
        decode::check(&body.bytes, body.body_type).map_err(Refusal::Decode)?;
    if validation.accepted == 0 {
        return Ok((validation, None));
    }
    let received = ReceivedRequest {
        body: &body,
        checked: &checked,
        transport,
    };
    let delivery = sink.take(received).map_err(Refusal::Sink)?;
    Ok((validation, Some(delivery)))
}

/// A running receiver. Dropping it does not stop the servers; call [`ReceiverHandle::shutdown`].
pub struct ReceiverHandle {
    pub http_addr: Option<SocketAddr>,
    pub grpc_addr: Option<SocketAddr>,
    pub http_stats: Arc<connections::ConnectionStats>,
    pub grpc_stats: Arc<connections::ConnectionStats>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl ReceiverHandle {
    /// Stops accepting connections, lets in-flight requests finish, and waits for the servers.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Everything a request handler needs, shared by HTTP and gRPC.
pub(crate) struct Shared {
    pub sink: Arc<dyn RequestSink>,
    pub token: Option<String>,
    pub max_body_bytes: usize,
    pub limits: Limits,
    in_flight: tokio::sync::Semaphore,
    /// Bytes of request bodies being received (see [`BODY_BUDGET_BYTES`]).
    pub body_budget: Arc<tokio::sync::Semaphore>,
}

impl Shared {
    /// A decoding slot, or `SinkError::Full` when none frees up in time.
    pub async fn request_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, SinkError> {
        match tokio::time::timeout(IN_FLIGHT_WAIT, self.in_flight.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(SinkError::Full),
        }
    }
}

/// Binds the configured addresses and starts serving. `extra_routes` are merged into the HTTP
/// server (serve's read API) and are behind the same bearer token.
pub async fn start(
    config: ReceiverConfig,
    sink: Arc<dyn RequestSink>,
    extra_routes: Option<axum::Router>,
) -> Result<ReceiverHandle, crate::Error> {
    let token = config.token.clone().filter(|token| !token.is_empty());
    let body_budget = BODY_BUDGET_BYTES
        .max(config.max_body_bytes)
        .min(tokio::sync::Semaphore::MAX_PERMITS);
    let shared = Arc::new(Shared {
        sink,
        token: token.clone(),
        max_body_bytes: config.max_body_bytes,
        limits: config.limits.clone(),
        in_flight: tokio::sync::Semaphore::new(MAX_REQUESTS_IN_FLIGHT),
        body_budget: Arc::new(tokio::sync::Semaphore::new(body_budget)),
    });
    let (stop, stopped) = watch::channel(false);
    let mut tasks = Vec::new();
    let http_stats = Arc::new(connections::ConnectionStats::default());
    let grpc_stats = Arc::new(connections::ConnectionStats::default());

    let http_addr = match &config.http {
        Some(addr) => {
            let listener = bind("HTTP", addr).await?;
            let local = listener.local_addr().map_err(|source| crate::Error::Bind {
                what: "HTTP",
                addr: addr.clone(),
                source,
            })?;
            let router = http::router(shared.clone(), extra_routes);
            let registry = connections::Registry::new(
                connections::Protocol::Http1,
                config.limits.clone(),
                http_stats.clone(),
            );
            tasks.push(tokio::spawn(http::serve(
                listener,
                router,
                registry,
                stopped.clone(),
            )));
            Some(local)
        }
        None => None,
    };
    let grpc_addr = match &config.grpc {
        Some(addr) => {
            let listener = bind("gRPC", addr).await?;
            let local = listener.local_addr().map_err(|source| crate::Error::Bind {
                what: "gRPC",
                addr: addr.clone(),
                source,
            })?;
            let registry = connections::Registry::new(
                connections::Protocol::Http2,
                config.limits.clone(),
                grpc_stats.clone(),
            );
            tasks.push(tokio::spawn(grpc::serve(
                listener,
                shared.clone(),
                registry,
                stopped.clone(),
            )));
            Some(local)
        }
        None => None,
    };
    Ok(ReceiverHandle {
        http_addr,
        grpc_addr,
        http_stats,
        grpc_stats,
        stop,
        tasks,
    })
}

async fn bind(what: &'static str, addr: &str) -> Result<tokio::net::TcpListener, crate::Error> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| crate::Error::Bind {
            what,
            addr: addr.to_string(),
            source,
        })
}

/// Resolves when `stopped` turns true or its sender is gone.
pub(crate) async fn wait_for_stop(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Compares a presented `Authorization` header value with the expected bearer token without
/// an early exit on the first differing byte.
pub(crate) fn bearer_matches(expected: Option<&str>, authorization: Option<&[u8]>) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    let Some(presented) = authorization.and_then(|value| {
        let prefix = b"bearer ";
        (value.len() > prefix.len() && value[..prefix.len()].eq_ignore_ascii_case(prefix))
            .then(|| &value[prefix.len()..])
    }) else {
        return false;
    };
    let expected = expected.as_bytes();
    presented.len() == expected.len()
        && presented
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_must_match_exactly() {
        assert!(bearer_matches(None, None));
        assert!(bearer_matches(Some("s3cret"), Some(b"Bearer s3cret")));
        assert!(bearer_matches(Some("s3cret"), Some(b"bearer s3cret")));
        assert!(!bearer_matches(Some("s3cret"), None));
        assert!(!bearer_matches(Some("s3cret"), Some(b"Bearer s3cre")));
        assert!(!bearer_matches(Some("s3cret"), Some(b"Bearer s3cretX")));
        assert!(!bearer_matches(Some("s3cret"), Some(b"Basic s3cret")));
        assert!(!bearer_matches(Some("s3cret"), Some(b"Bearer ")));
    }
}
