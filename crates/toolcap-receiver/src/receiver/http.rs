//! OTLP/HTTP: `POST /v1/traces`, answered in the request's content type.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message;
use tokio::sync::watch;
use tower::ServiceExt;

use super::connections::{BusyGuard, ConnectionHandle, Registry, TrackedIo};
use super::decode::{self, BodyType, Compression, DecodeError, RpcStatus, rpc_code};
use super::{RETRY_AFTER_SECS, RawBody, Refusal, Shared, SinkError, Transport};

pub(crate) fn router(shared: Arc<Shared>, extra_routes: Option<Router>) -> Router {
    let mut router: Router = Router::new()
        .route("/v1/traces", post(export))
        .with_state(shared.clone());
    if let Some(extra) = extra_routes {
        router = router.merge(extra);
    }
    router.layer(middleware::from_fn_with_state(shared, require_token))
}

/// Largest buffer hyper keeps per connection, for reading a request head and for queueing a
/// response. Bounds what a reader that stopped reading costs (OTLP heads are small).
const CONNECTION_BUFFER_BYTES: usize = 8 * 1024;

/// Answer to a connection turned away because every connection slot is busy with a request.
fn refusal() -> Vec<u8> {
    let body = format!(
        "{{\"code\":{},\"message\":\"receiver is full (every connection is busy), retry later\"}}",
        rpc_code::UNAVAILABLE
    );
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {RETRY_AFTER_SECS}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Accepts connections under the [`Registry`]'s cap and deadlines and serves `router` on each
/// with HTTP/1.1, until `stopped`; then finishes open requests for a bounded time.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    registry: Arc<Registry>,
    stopped: watch::Receiver<bool>,
) {
    tokio::spawn(registry.clone().reap_until(stopped.clone()));
    let mut connections = tokio::task::JoinSet::new();
    let stop = super::wait_for_stop(stopped.clone());
    tokio::pin!(stop);
    let mut accept_failures = 0u32;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                accept_failures = 0;
                accepted
            }
            Err(err) => {
                // Out of file descriptors, typically: tell once, then give closing connections
                // a moment instead of spinning on the error.
                if accept_failures == 0 {
                    tracing::warn!("OTLP/HTTP cannot accept a connection: {err}");
                }
                accept_failures = accept_failures.saturating_add(1);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        match registry.admit(stream, peer) {
            Ok(io) => {
                connections.spawn(serve_connection(io, router.clone(), stopped.clone()));
            }
            Err(mut stream) => {
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    let refuse = async {
                        stream.write_all(&refusal()).await?;
                        stream.shutdown().await
                    };
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), refuse).await;
                });
            }
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(super::SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        registry.kill_all("the receiver is shutting down");
        while connections.join_next().await.is_some() {}
    }
}

async fn serve_connection(io: TrackedIo, router: Router, stopped: watch::Receiver<bool>) {
    let conn = io.conn.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let busy = conn.begin_request();
        request
            .extensions_mut()
            .insert(ConnectionHandle(conn.clone()));
        let router = router.clone();
        async move {
            let response = router
                .oneshot(request.map(Body::new))
                .await
                .unwrap_or_else(|never| match never {});
            Ok::<_, std::convert::Infallible>(
                response.map(|body| Body::new(UntilSent { body, _busy: busy })),
            )
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The registry's reaper enforces the header deadline (from the first byte, not from the
    // end of the previous request).
    // Vectored writes would let hyper queue up to 16 body chunks whatever `max_buf_size` says
    // (~128 KiB per stalled feed reader); flattening keeps the queue within that size.
    builder
        .max_buf_size(CONNECTION_BUFFER_BYTES)
        .writev(false)
        .header_read_timeout(None);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = super::wait_for_stop(stopped) => connection.as_mut().graceful_shutdown(),
    }
    let _ = connection.await;
}

/// A response body that keeps its connection marked busy until it is sent or dropped.
struct UntilSent {
    body: Body,
    _busy: BusyGuard,
}

impl hyper::body::Body for UntilSent {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

async fn require_token(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if super::bearer_matches(shared.token.as_deref(), authorization) {
        return next.run(request).await;
    }
    let body_type = request_body_type(request.headers()).unwrap_or(BodyType::Json);
    let mut response = failure(
        StatusCode::UNAUTHORIZED,
        body_type,
        rpc_code::UNAUTHENTICATED,
        "missing or wrong bearer token".into(),
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

fn request_body_type(headers: &HeaderMap) -> Option<BodyType> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(BodyType::from_content_type)
}

async fn export(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let Some(body_type) = request_body_type(request.headers()) else {
        let got = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .unwrap_or_else(|| "none".into());
        return failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BodyType::Json,
            rpc_code::INVALID_ARGUMENT,
            format!(
                "unsupported Content-Type {got:?}: send application/x-protobuf or application/json"
            ),
        );
    };
    let encoding = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let Some(compression) = Compression::from_content_encoding(encoding.as_deref()) else {
        return failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            body_type,
            rpc_code::INVALID_ARGUMENT,
            format!(
                "unsupported Content-Encoding {:?}: send gzip, deflate, zstd or none",
                encoding.unwrap_or_default()
            ),
        );
    };

    let limit = shared.max_body_bytes;
    // While its body arrives, the connection may be closed to make room if it is the least
    // productive: a flood of slow bodies cannot hold every connection.
    let connection = request.extensions().get::<ConnectionHandle>().cloned();
    if let Some(ConnectionHandle(conn)) = &connection {
        conn.reading_body();
    }
    // The body is read before a decoding slot is taken: a slow sender holds only the bytes it
    // has sent, never a slot that fast clients need.
    let read = read_body(&shared, request.into_body()).await;
    if let Some(ConnectionHandle(conn)) = &connection {
        conn.body_read();
    }
    let (raw, _body_bytes) = match read {
        Ok(read) => read,
        Err(BodyFailure::TooLarge) => {
            return decode_failure(body_type, DecodeError::TooLarge { limit });
        }
        Err(BodyFailure::TooSlow { received }) => {
            let limits = &shared.limits;
            let mut response = sink_failure(
                body_type,
                &SinkError::Unavailable(format!(
                    "request body arrived too slowly ({received} bytes; after {} s it must \
                     keep up {} bytes/s)",
                    limits.body_timeout.as_secs(),
                    limits.min_body_bytes_per_sec
                )),
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        Err(BodyFailure::Full) => return sink_failure(body_type, &SinkError::Full),
        Err(BodyFailure::Read(err)) => {
            return failure(
                StatusCode::BAD_REQUEST,
                body_type,
                rpc_code::INVALID_ARGUMENT,
                format!("cannot read the request body: {err}"),
            );
        }
    };
    let _slot = match shared.request_slot().await {
        Ok(slot) => slot,
        Err(err) => return sink_failure(body_type, &err),
    };
    let transport = match body_type {
        BodyType::Protobuf => Transport::HttpProtobuf,
        BodyType::Json => Transport::HttpJson,
    };
    // Inflating and decoding up to 20 MiB is CPU work; keep it off the async workers.
    let sink = shared.sink.clone();
    let judged = tokio::task::spawn_blocking(move || {
        let bytes = decode::decompress(raw, compression, limit).map_err(Refusal::Decode)?;
        let body = RawBody { bytes, body_type };
        super::judge_and_take(sink.as_ref(), body, transport)
    })
    .await;
    let (validation, delivery) = match judged {
        Ok(Ok(judged)) => judged,
        Ok(Err(Refusal::Decode(err))) => return decode_failure(body_type, err),
        Ok(Err(Refusal::Sink(err))) => return sink_failure(body_type, &err),
        Err(join_error) => {
            return failure(
                StatusCode::SERVICE_UNAVAILABLE,
                body_type,
                rpc_code::UNAVAILABLE,
                format!("decoding was interrupted: {join_error}"),
            );
        }
    };
    if let Some(delivery) = delivery
        && let Err(err) = delivery.await
    {
        return sink_failure(body_type, &err);
    }
    success(body_type, validation.rejected, validation.message)
}

enum BodyFailure {
    TooLarge,
    TooSlow { received: u64 },
    Full,
    Read(axum::Error),
}

/// Reads a request body under the size limit, the minimum-rate rule and the shared body budget.
/// The deadline grows with what has arrived: `body_timeout` plus one second per
/// `min_body_bytes_per_sec` bytes received.
async fn read_body(
    shared: &Shared,
    mut body: Body,
) -> Result<(Bytes, Option<tokio::sync::OwnedSemaphorePermit>), BodyFailure> {
    let limits = &shared.limits;
    let started = tokio::time::Instant::now();
    let rate = limits.min_body_bytes_per_sec.max(1) as f64;
    let mut received: u64 = 0;
    let mut held: Option<tokio::sync::OwnedSemaphorePermit> = None;
    let mut chunks: Vec<Bytes> = Vec::new();
    loop {
        let allowed =
            limits.body_timeout + std::time::Duration::from_secs_f64(received as f64 / rate);
        let frame = match tokio::time::timeout_at(started + allowed, body.frame()).await {
            Err(_) => return Err(BodyFailure::TooSlow { received }),
            Ok(None) => break,
            Ok(Some(Err(err))) => return Err(BodyFailure::Read(err)),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        received += data.len() as u64;
        if received > shared.max_body_bytes as u64 {
            return Err(BodyFailure::TooLarge);
        }
        let wanted = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let permit = tokio::time::timeout(
            super::IN_FLIGHT_WAIT,
            shared.body_budget.clone().acquire_many_owned(wanted),
        )
        .await
        .map_err(|_| BodyFailure::Full)?
        .map_err(|_| BodyFailure::Full)?;
        match held.as_mut() {
            Some(held) => held.merge(permit),
            None => held = Some(permit),
        }
        chunks.push(data);
    }
    let raw = match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().unwrap_or_default(),
        _ => {
            let mut joined = Vec::with_capacity(usize::try_from(received).unwrap_or(0));
            for chunk in &chunks {
                joined.extend_from_slice(chunk);
            }
            Bytes::from(joined)
        }
    };
    Ok((raw, held))
}

fn success(body_type: BodyType, rejected: usize, message: String) -> Response {
    let body = if rejected == 0 && message.is_empty() {
        match body_type {
            BodyType::Protobuf => Vec::new(),
            // The crate's serde writes `{"partialSuccess":null}`; the spec wants `{}`.
            BodyType::Json => b"{}".to_vec(),
        }
    } else {
        let rejected_spans = i64::try_from(rejected).unwrap_or(i64::MAX);
        match body_type {
            BodyType::Protobuf => ExportTraceServiceResponse {
                partial_success: Some(ExportTracePartialSuccess {
                    rejected_spans,
                    error_message: message,
                }),
            }
            .encode_to_vec(),
            // int64 is a decimal string in proto3 JSON.
            BodyType::Json => serde_json::json!({"partialSuccess": {
                "rejectedSpans": rejected_spans.to_string(),
                "errorMessage": message,
            }})
            .to_string()
            .into_bytes(),
        }
    };
    with_body(StatusCode::OK, body_type, body)
}

fn decode_failure(body_type: BodyType, err: DecodeError) -> Response {
    let status = match err {
        DecodeError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        DecodeError::Decompress { .. } | DecodeError::Undecodable { .. } => StatusCode::BAD_REQUEST,
    };
    failure(
        status,
        body_type,
        rpc_code::INVALID_ARGUMENT,
        err.to_string(),
    )
}

fn sink_failure(body_type: BodyType, err: &SinkError) -> Response {
    if let SinkError::TooLarge(why) = err {
        return failure(
            StatusCode::PAYLOAD_TOO_LARGE,
            body_type,
            rpc_code::INVALID_ARGUMENT,
            why.clone(),
        );
    }
    let mut response = failure(
        StatusCode::SERVICE_UNAVAILABLE,
        body_type,
        rpc_code::UNAVAILABLE,
        err.to_string(),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

/// A failure response whose body is a `google.rpc.Status` in the request's encoding.
fn failure(status: StatusCode, body_type: BodyType, code: i32, message: String) -> Response {
    log_rejection(status, &message);
    let rpc_status = RpcStatus { code, message };
    let body = match body_type {
        BodyType::Protobuf => rpc_status.encode_to_vec(),
        BodyType::Json => serde_json::to_vec(&rpc_status).unwrap_or_else(|_| b"{}".to_vec()),
    };
    with_body(status, body_type, body)
}

fn with_body(status: StatusCode, body_type: BodyType, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, body_type.content_type())],
        Body::from(body),
    )
        .into_response()
}

/// Logs a refused request, at most one line a second: a client sending garbage in a loop
/// must not turn the log into a second spool. Lines held back are counted in the next one.
fn log_rejection(status: StatusCode, message: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST_SECOND: AtomicU64 = AtomicU64::new(0);
    static HELD_BACK: AtomicU64 = AtomicU64::new(0);
    let second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if LAST_SECOND.swap(second, Ordering::Relaxed) == second {
        HELD_BACK.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let held_back = HELD_BACK.swap(0, Ordering::Relaxed);
    // The message quotes request headers: masked like every output, personal data included.
    let message = crate::redact::shown_line(message, crate::redact::Reveal::Redacted);
    if held_back > 0 {
        tracing::warn!(
            "OTLP/HTTP request refused with {status}: {message} ({held_back} more refused since the last line)"
        );
    } else {
        tracing::warn!("OTLP/HTTP request refused with {status}: {message}");
    }
}
