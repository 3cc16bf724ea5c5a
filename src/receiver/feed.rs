//! `serve`'s read API: `GET /api/v1/stream` replays the spool and then follows it live, as
//! NDJSON or SSE, one spool line (= one accepted request) per record; `GET /api/v1/health`.
//!
//! Readers only ever read committed bytes (synced, complete lines), so what they see is
//! exactly what a restart would find on disk. `?skip=N` skips the first N records, which is
//! how a reconnecting client resumes without duplicates.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use tokio::sync::mpsc;

use super::connections::ConnectionHandle;
use super::spool::{SpoolState, segment_name};

/// Spool bytes read per step. With [`QUEUED_FRAMES`] and hyper's per-connection buffer this
/// bounds what one reader that stopped reading costs, whatever the spool holds.
const READ_CHUNK: u64 = 8 * 1024;
/// Frames (each the complete lines of one chunk) waiting for one reader's connection. The next
/// chunk is read only once there is room for it, so a stalled reader holds no more than this.
const QUEUED_FRAMES: usize = 1;
/// A partial line buffer larger than this is given back after use.
const KEEP_PARTIAL_BYTES: usize = 64 * 1024;

/// What the feed needs: the spool, the token readers must present, and the stall limit.
pub struct FeedConfig {
    pub spool: Arc<SpoolState>,
    pub token: String,
    pub stall_timeout: Duration,
}

struct Feed {
    config: FeedConfig,
    readers: AtomicUsize,
    stalled: AtomicUsize,
}

pub fn router(config: FeedConfig) -> Router {
    let feed = Arc::new(Feed {
        config,
        readers: AtomicUsize::new(0),
        stalled: AtomicUsize::new(0),
    });
    Router::new()
        .route("/api/v1/stream", get(stream))
        .route("/api/v1/health", get(health))
        .with_state(feed)
}

async fn health(State(feed): State<Arc<Feed>>) -> Response {
    let state = &feed.config.spool;
    let committed = state.committed();
    let failing = state.write_failure();
    let mut body = serde_json::json!({
        "status": if failing.is_some() { "degraded" } else { "ok" },
        "requests": committed.requests,
        "spans": committed.spans,
        "segments": committed.segments.len(),
        "spool": state.dir.display().to_string(),
        "feed_readers": feed.readers.load(Ordering::Relaxed),
        "feed_readers_stalled": feed.stalled.load(Ordering::Relaxed),
    });
    if let Some(reason) = failing {
        body["reason"] = serde_json::Value::String(format!("spool writes are failing: {reason}"));
    }
    axum::Json(body).into_response()
}

#[derive(Debug, Deserialize)]
struct StreamParams {
    #[serde(default)]
    skip: u64,
    format: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Ndjson,
    Sse,
}

async fn stream(
    State(feed): State<Arc<Feed>>,
    Query(params): Query<StreamParams>,
    request: Request,
) -> Response {
    let headers = request.headers();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if !super::bearer_matches(Some(&feed.config.token), authorization) {
        let body = serde_json::json!({
            "error": "the feed needs `Authorization: Bearer TOKEN`; serve printed where the token \
                      is (DIR/serve.token unless --token/--token-file was given)"
        });
        let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    let wants_sse = params.format.as_deref() == Some("sse")
        || headers
            .get(header::ACCEPT)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|accept| accept.contains("text/event-stream"));
    let framing = if wants_sse {
        Framing::Sse
    } else {
        Framing::Ndjson
    };
    let connection = request.extensions().get::<ConnectionHandle>().cloned();
    let (records, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(QUEUED_FRAMES);
    let reader = Reader {
        feed,
        records,
        connection,
    };
    tokio::spawn(follow(reader, params.skip, framing));
    let body = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let content_type = match framing {
        Framing::Ndjson => "application/x-ndjson",
        Framing::Sse => "text/event-stream",
    };
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// One connected feed reader: where its frames go, and its connection so a reader that stops
/// reading can be dropped (its socket is the only thing that would otherwise notice).
struct Reader {
    feed: Arc<Feed>,
    records: mpsc::Sender<Result<Bytes, std::io::Error>>,
    connection: Option<ConnectionHandle>,
}

/// The reader has gone (or was disconnected): stop following.
struct Gone;

impl Reader {
    /// Room for the next frame; waits at most the stall timeout for the reader to make it.
    async fn room(&self) -> Result<mpsc::Permit<'_, Result<Bytes, std::io::Error>>, Gone> {
        match self.records.try_reserve() {
            Ok(permit) => return Ok(permit),
            Err(mpsc::error::TrySendError::Closed(())) => return Err(Gone),
            Err(mpsc::error::TrySendError::Full(())) => {}
        }
        let stall = self.feed.config.stall_timeout;
        self.feed.stalled.fetch_add(1, Ordering::Relaxed);
        let reserved = tokio::time::timeout(stall, self.records.reserve()).await;
        self.feed.stalled.fetch_sub(1, Ordering::Relaxed);
        match reserved {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(Gone),
            Err(_) => {
                let who = self
                    .connection
                    .as_ref()
                    .map(|handle| handle.0.peer.to_string())
                    .unwrap_or_else(|| "a reader".into());
                let reason = format!(
                    "feed reader {who} disconnected: it took nothing for {} s (--feed-stall-timeout)",
                    stall.as_secs()
                );
                eprintln!("toolcap-tui serve: {reason}");
                if let Some(handle) = &self.connection {
                    handle.0.kill(reason);
                }
                Err(Gone)
            }
        }
    }

    async fn fail(&self, err: std::io::Error) {
        let _ = self.records.send(Err(err)).await;
    }
}

struct ReaderCount(Arc<Feed>);

impl Drop for ReaderCount {
    fn drop(&mut self) {
        self.0.readers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Where the reader is: a segment and the committed offset it has consumed up to.
struct Cursor {
    segment: u32,
    offset: u64,
    file: Option<Arc<std::fs::File>>,
}

/// Sends every spool line from the start (minus `skip`), then waits for commits and sends
/// those, until the client goes away or the spool closes.
async fn follow(reader: Reader, skip: u64, framing: Framing) {
    reader.feed.readers.fetch_add(1, Ordering::Relaxed);
    let _count = ReaderCount(reader.feed.clone());
    let state = reader.feed.config.spool.clone();
    let mut progress = state.subscribe();
    let mut cursor: Option<Cursor> = None;
    let mut partial: Vec<u8> = Vec::new();
    let mut seen = 0u64;
    loop {
        let closed = progress.borrow_and_update().closed;
        let mut advanced = false;
        if cursor.is_none() {
            cursor = state.first_segment().map(|segment| Cursor {
                segment,
                offset: 0,
                file: None,
            });
        }
        if let Some(at) = cursor.as_mut() {
            match state.segment_extent(at.segment) {
                Some((len, _)) if at.offset < len => {
                    let Ok(room) = reader.room().await else {
                        return;
                    };
                    let chunk = match read_chunk(&state, at, len).await {
                        Ok(chunk) => chunk,
                        Err(err) => return reader.fail(err).await,
                    };
                    advanced = true;
                    partial.extend_from_slice(&chunk);
                    let mut start = 0;
                    let mut framed = Vec::new();
                    for end in memchr::memchr_iter(b'\n', &partial) {
                        let line = &partial[start..end];
                        start = end + 1;
                        seen += 1;
                        if seen <= skip {
                            continue;
                        }
                        frame_into(&mut framed, line, framing);
                    }
                    partial.drain(..start);
                    if partial.capacity() > KEEP_PARTIAL_BYTES && partial.len() < KEEP_PARTIAL_BYTES
                    {
                        partial.shrink_to(KEEP_PARTIAL_BYTES);
                    }
                    if !framed.is_empty() {
                        room.send(Ok(Bytes::from(framed)));
                    }
                }
                Some((_, Some(next))) => {
                    // Segments end on a line boundary; anything left is not a record.
                    partial.clear();
                    *at = Cursor {
                        segment: next,
                        offset: 0,
                        file: None,
                    };
                    advanced = true;
                }
                Some((_, None)) => {}
                None => {
                    let gone = std::io::Error::other(format!(
                        "spool segment {} disappeared",
                        segment_name(at.segment)
                    ));
                    return reader.fail(gone).await;
                }
            }
        }
        if advanced {
            continue;
        }
        if closed {
            return;
        }
        tokio::select! {
            changed = progress.changed() => if changed.is_err() { return },
            () = reader.records.closed() => return,
        }
    }
}

/// Reads the next committed bytes of the cursor's segment (at most [`READ_CHUNK`]) into a
/// fresh buffer: no per-reader read buffer outlives the read.
async fn read_chunk(state: &SpoolState, at: &mut Cursor, len: u64) -> std::io::Result<Vec<u8>> {
    let file = match &at.file {
        Some(file) => file.clone(),
        None => {
            let path = state.dir.join(segment_name(at.segment));
            let file =
                Arc::new(tokio::task::spawn_blocking(move || std::fs::File::open(path)).await??);
            at.file.insert(file).clone()
        }
    };
    let want = usize::try_from((len - at.offset).min(READ_CHUNK)).unwrap_or(0);
    let offset = at.offset;
    let chunk = tokio::task::spawn_blocking(move || {
        let mut chunk = vec![0u8; want];
        let mut filled = 0;
        while filled < want {
            match read_at(&file, &mut chunk[filled..], offset + filled as u64)? {
                0 => break,
                read => filled += read,
            }
        }
        chunk.truncate(filled);
        Ok::<_, std::io::Error>(chunk)
    })
    .await??;
    if chunk.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "spool segment {} is shorter than committed",
                segment_name(at.segment)
            ),
        ));
    }
    at.offset += chunk.len() as u64;
    Ok(chunk)
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

fn frame_into(framed: &mut Vec<u8>, line: &[u8], framing: Framing) {
    match framing {
        Framing::Ndjson => {
            framed.extend_from_slice(line);
            framed.push(b'\n');
        }
        Framing::Sse => {
            framed.extend_from_slice(b"data: ");
            framed.extend_from_slice(line);
            framed.extend_from_slice(b"\n\n");
        }
    }
}
