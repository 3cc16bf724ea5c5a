//! `serve`'s read API: `GET /api/v1/stream` replays the spool and then follows it live, as
//! NDJSON or SSE, one spool line (= one accepted request) per record; `GET /api/v1/health`.
//!
//! Readers only ever read committed bytes (synced, complete lines), so what they see is
//! exactly what a restart would find on disk. `?skip=N` skips the first N records, which is
//! how a reconnecting client resumes without duplicates.

use std::io::SeekFrom;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::mpsc;

use super::spool::{SpoolState, segment_name};

const READ_CHUNK: u64 = 1024 * 1024;

pub fn router(state: Arc<SpoolState>) -> Router {
    Router::new()
        .route("/api/v1/stream", get(stream))
        .route("/api/v1/health", get(health))
        .with_state(state)
}

async fn health(State(state): State<Arc<SpoolState>>) -> Response {
    let committed = state.committed();
    let body = serde_json::json!({
        "status": "ok",
        "requests": committed.requests,
        "spans": committed.spans,
        "segments": committed.segments.len(),
        "spool": state.dir.display().to_string(),
    });
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
    State(state): State<Arc<SpoolState>>,
    Query(params): Query<StreamParams>,
    headers: HeaderMap,
) -> Response {
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
    let (records, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(follow(state, params.skip, framing, records));
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

/// Where the reader is: a segment and the committed offset it has consumed up to.
struct Cursor {
    segment: u32,
    offset: u64,
    file: Option<tokio::fs::File>,
}

/// Sends every spool line from the start (minus `skip`), then waits for commits and sends
/// those, until the client goes away or the spool closes.
async fn follow(
    state: Arc<SpoolState>,
    skip: u64,
    framing: Framing,
    records: mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
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
                    let chunk = match read_chunk(&state, at, len).await {
                        Ok(chunk) => chunk,
                        Err(err) => {
                            let _ = records.send(Err(err)).await;
                            return;
                        }
                    };
                    advanced = true;
                    partial.extend_from_slice(&chunk);
                    let mut start = 0;
                    for end in memchr::memchr_iter(b'\n', &partial) {
                        let line = &partial[start..end];
                        start = end + 1;
                        seen += 1;
                        if seen <= skip {
                            continue;
                        }
                        if records.send(Ok(frame(line, framing))).await.is_err() {
                            return;
                        }
                    }
                    partial.drain(..start);
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
                    let _ = records.send(Err(gone)).await;
                    return;
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
            () = records.closed() => return,
        }
    }
}

async fn read_chunk(state: &SpoolState, at: &mut Cursor, len: u64) -> std::io::Result<Vec<u8>> {
    let file = match at.file.as_mut() {
        Some(file) => file,
        None => {
            let mut file = tokio::fs::File::open(state.dir.join(segment_name(at.segment))).await?;
            file.seek(SeekFrom::Start(at.offset)).await?;
            at.file.insert(file)
        }
    };
    let want = (len - at.offset).min(READ_CHUNK);
    let mut chunk = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    file.take(want).read_to_end(&mut chunk).await?;
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

fn frame(line: &[u8], framing: Framing) -> Bytes {
    let mut framed = Vec::with_capacity(line.len() + 8);
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
    Bytes::from(framed)
}
