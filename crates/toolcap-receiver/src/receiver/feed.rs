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

async fn health(State(feed): State<Arc<Feed>>, request: Request) -> Response {
    // Health names the spool's directory and how much it holds: the feed's token guards it.
    if let Some(refused) = refused(&feed, &request) {
        return refused;
    }
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

/// A 401 when `request` does not carry the feed's token.
fn refused(feed: &Feed, request: &Request) -> Option<Response> {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if super::bearer_matches(Some(&feed.config.token), authorization) {
        return None;
    }
    let body = serde_json::json!({
        "error": "the feed needs `Authorization: Bearer TOKEN`; serve printed where the token \
                  is (DIR/serve.token unless --token/--token-file was given)"
    });
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    Some(response)
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
    if let Some(refused) = refused(&feed, &request) {
        return refused;
    }
    let headers = request.headers();
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
                tracing::warn!("{reason}");
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
    let mut framer = Framer::new(framing, skip);
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
                    let framed = framer.frame(&chunk);
                    if !framed.is_empty() {
                        room.send(Ok(Bytes::from(framed)));
                    }
                }
                Some((_, Some(next))) => {
                    // Segments end on a line boundary; a line cut short is ended here so it
                    // cannot run into the next segment's first line.
                    let framed = framer.end_line();
                    if !framed.is_empty() {
                        let Ok(room) = reader.room().await else {
                            return;
                        };
                        room.send(Ok(Bytes::from(framed)));
                    }
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

/// Turns spool bytes into the reader's framing as they come, without collecting whole lines:
/// a stalled reader then holds at most one chunk, however long a spool line is (an SDK batch
/// of 500 spans is one line of ~0.5 MB).
struct Framer {
    framing: Framing,
    skip: u64,
    lines_begun: u64,
    mid_line: bool,
}

impl Framer {
    fn new(framing: Framing, skip: u64) -> Self {
        Framer {
            framing,
            skip,
            lines_begun: 0,
            mid_line: false,
        }
    }

    fn skipping(&self) -> bool {
        self.lines_begun <= self.skip
    }

    fn line_end(&self) -> &'static [u8] {
        match self.framing {
            Framing::Ndjson => b"\n",
            Framing::Sse => b"\n\n",
        }
    }

    fn frame(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut framed = Vec::with_capacity(chunk.len() + 64);
        let mut rest = chunk;
        while !rest.is_empty() {
            if !self.mid_line {
                self.mid_line = true;
                self.lines_begun += 1;
                if !self.skipping() && self.framing == Framing::Sse {
                    framed.extend_from_slice(b"data: ");
                }
            }
            let (piece, ended) = match memchr::memchr(b'\n', rest) {
                Some(at) => (&rest[..at], Some(at + 1)),
                None => (rest, None),
            };
            if !self.skipping() {
                framed.extend_from_slice(piece);
            }
            match ended {
                Some(next) => {
                    if !self.skipping() {
                        framed.extend_from_slice(self.line_end());
                    }
                    self.mid_line = false;
                    rest = &rest[next..];
                }
                None => rest = &[],
            }
        }
        framed
    }

    /// Ends a line the spool left unfinished (nothing if the last line was complete).
    fn end_line(&mut self) -> Vec<u8> {
        if !std::mem::take(&mut self.mid_line) || self.skipping() {
            return Vec::new();
        }
        self.line_end().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_frame_as_whole_lines() {
        let spool = b"one\ntwo two\nthree\n";
        for framing in [Framing::Ndjson, Framing::Sse] {
            let whole = Framer::new(framing, 1).frame(spool);
            for cut in 0..spool.len() {
                let mut framer = Framer::new(framing, 1);
                let mut framed = framer.frame(&spool[..cut]);
                framed.extend(framer.frame(&spool[cut..]));
                assert_eq!(framed, whole, "cut at {cut}");
            }
            let expected: &[u8] = match framing {
                Framing::Ndjson => b"two two\nthree\n",
                Framing::Sse => b"data: two two\n\ndata: three\n\n",
            };
            assert_eq!(whole, expected);
        }
    }

    #[test]
    fn an_unfinished_line_is_ended_before_the_next_segment() {
        let mut framer = Framer::new(Framing::Ndjson, 0);
        assert_eq!(framer.frame(b"cut"), b"cut");
        assert_eq!(framer.end_line(), b"\n");
        assert_eq!(framer.end_line(), b"");
        assert_eq!(framer.frame(b"next\n"), b"next\n");
    }
}
