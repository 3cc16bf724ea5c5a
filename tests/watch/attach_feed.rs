//! Attaching to a `serve` feed, against a small fake feed server that follows the contract:
//! `GET /api/v1/stream?skip=N` streams NDJSON (chunked), replaying from line N, then follows.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::routing::get;
use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use toolcap::formats::{Format, Input};
use toolcap::model::{Batch, Origin};
use toolcap::sources::SourceStatus;
use toolcap::sources::attach::{AttachOptions, spawn_attach_with};
use toolcap::sources::live_spool::Spooled;

use crate::support::{Recorder, TestLines, wait_for};

struct Feed {
    lines: Mutex<Vec<String>>,
    count: watch::Sender<usize>,
    /// Bumped to break every open stream, as a crashing receiver would.
    kill: watch::Sender<u64>,
    /// Send only the first half of this line, then break the connection.
    cut_at: Mutex<Option<usize>>,
    /// The `skip` of every request received.
    skips: Mutex<Vec<usize>>,
    /// Send every line as two body chunks, split mid-line.
    split: std::sync::atomic::AtomicBool,
}

impl Feed {
    fn new() -> Arc<Self> {
        Arc::new(Feed {
            lines: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
            kill: watch::channel(0).0,
            cut_at: Mutex::new(None),
            skips: Mutex::new(Vec::new()),
            split: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn push(&self, line: String) {
        let mut lines = self.lines.lock().expect("lock");
        lines.push(line);
        self.count.send_replace(lines.len());
    }

    fn line(&self, index: usize) -> Option<String> {
        self.lines.lock().expect("lock").get(index).cloned()
    }

    fn skips(&self) -> Vec<usize> {
        self.skips.lock().expect("lock").clone()
    }
}

#[derive(serde::Deserialize)]
struct Skip {
    skip: Option<usize>,
}

enum Next {
    Line(usize),
    /// The second half of a split line, then the line after it.
    Rest(Bytes, usize),
    Break,
    Done,
}

async fn stream(State(feed): State<Arc<Feed>>, Query(query): Query<Skip>) -> Body {
    let skip = query.skip.unwrap_or(0);
    feed.skips.lock().expect("lock").push(skip);
    let kill = feed.kill.subscribe();
    let count = feed.count.subscribe();
    let chunks = futures::stream::unfold(
        (feed, Next::Line(skip), kill, count),
        |(feed, next, mut kill, mut count)| async move {
            let index = match next {
                Next::Done => return None,
                Next::Break => {
                    let broken = std::io::Error::other("receiver went away");
                    return Some((Err(broken), (feed, Next::Done, kill, count)));
                }
                Next::Line(index) => index,
                Next::Rest(rest, next) => {
                    return Some((Ok(rest), (feed, Next::Line(next), kill, count)));
                }
            };
            loop {
                if kill.has_changed().unwrap_or(true) {
                    let broken = std::io::Error::other("receiver killed");
                    return Some((Err(broken), (feed, Next::Done, kill, count)));
                }
                count.borrow_and_update();
                if let Some(line) = feed.line(index) {
                    let cut = feed.cut_at.lock().expect("lock").take_if(|at| *at == index);
                    if cut.is_some() {
                        let half = line.as_bytes()[..line.len() / 2].to_vec();
                        return Some((Ok(Bytes::from(half)), (feed, Next::Break, kill, count)));
                    }
                    let frame = Bytes::from(format!("{line}\n"));
                    if feed.split.load(std::sync::atomic::Ordering::Relaxed) {
                        let rest = frame.slice(line.len() / 2..);
                        let first = frame.slice(..line.len() / 2);
                        let next = Next::Rest(rest, index + 1);
                        return Some((Ok(first), (feed, next, kill, count)));
                    }
                    return Some((Ok(frame), (feed, Next::Line(index + 1), kill, count)));
                }
                tokio::select! {
                    _ = count.changed() => {}
                    _ = kill.changed() => {
                        let broken = std::io::Error::other("receiver killed");
                        return Some((Err(broken), (feed, Next::Done, kill, count)));
                    }
                }
            }
        },
    );
    Body::from_stream(chunks)
}

async fn start_server(feed: Arc<Feed>, addr: SocketAddr) -> (JoinHandle<()>, SocketAddr) {
    let listener = TcpListener::bind(addr).await.expect("bind");
    let bound = listener.local_addr().expect("addr");
    let app = Router::new()
        .route("/api/v1/stream", get(stream))
        .with_state(feed);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (task, bound)
}

async fn stop_server(feed: &Feed, task: JoinHandle<()>) {
    feed.kill.send_modify(|generation| *generation += 1);
    task.abort();
    let _ = task.await;
}

fn parse_test_line(origin: Origin, line: &[u8], _spooled: Option<&Spooled>) -> Batch {
    TestLines.parse(&Input::new(&origin, line, None))
}

fn options() -> AttachOptions {
    AttachOptions {
        backoff_min: Duration::from_millis(20),
        backoff_max: Duration::from_millis(160),
        connect_timeout: Duration::from_secs(2),
        parse: parse_test_line,
        ..AttachOptions::default()
    }
}

fn test_line(i: usize) -> String {
    format!("{{\"t\":\"L{i}\",\"padding\":\"{}\"}}", "x".repeat(i * 7))
}

fn connected_flags(rec: &Recorder) -> Vec<bool> {
    rec.statuses
        .iter()
        .filter_map(|s| match s {
            SourceStatus::Attached { connected, .. } => Some(*connected),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reconnects_after_a_cut_line_and_a_restart_without_duplicates_or_gaps() {
    let feed = Feed::new();
    for i in 0..4 {
        feed.push(test_line(i));
    }
    let (server, addr) = start_server(feed.clone(), "127.0.0.1:0".parse().expect("addr")).await;
    let url = format!("http://{addr}");
    let key = PathBuf::from(&url);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let attach = spawn_attach_with(url.clone(), tx, options());
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "the replayed history", |r| {
        r.ids(&key).len() == 4
    })
    .await;
    assert_eq!(connected_flags(&rec), vec![true]);

    // Live lines; the first of them is cut in half by a broken connection.
    *feed.cut_at.lock().expect("lock") = Some(4);
    feed.push(test_line(4));
    feed.push(test_line(5));
    wait_for(&mut rx, &mut rec, "the live lines after the cut", |r| {
        r.ids(&key).len() == 6
    })
    .await;
    assert_eq!(feed.skips(), vec![0, 4]);

    // The receiver restarts; lines land while it is down.
    stop_server(&feed, server).await;
    let flags_before = connected_flags(&rec).len();
    wait_for(&mut rx, &mut rec, "the disconnected status", |r| {
        connected_flags(r)
            .get(flags_before..)
            .is_some_and(|f| f.contains(&false))
    })
    .await;
    for i in 6..10 {
        feed.push(test_line(i));
    }
    let (server, _) = start_server(feed.clone(), addr).await;
    wait_for(&mut rx, &mut rec, "every line after the restart", |r| {
        r.ids(&key).len() == 10
    })
    .await;

    let expected: Vec<String> = (0..10).map(|i| format!("L{i}")).collect();
    assert_eq!(rec.ids(&key), expected);
    assert_eq!(rec.delivered, 10);
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    assert_eq!(feed.skips(), vec![0, 4, 6]);
    let flags = connected_flags(&rec);
    assert_eq!(flags.first(), Some(&true));
    assert_eq!(flags.last(), Some(&true));
    let after_restart = &flags[flags_before..];
    let first_down = after_restart.iter().position(|c| !c).expect("a disconnect");
    assert!(after_restart[first_down..].contains(&true));

    drop(rx);
    tokio::time::timeout(Duration::from_secs(10), attach)
        .await
        .expect("attach ends once the app stops listening")
        .expect("attach task");
    stop_server(&feed, server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lines_split_across_body_chunks_are_joined() {
    let feed = Feed::new();
    feed.split.store(true, std::sync::atomic::Ordering::Relaxed);
    for i in 0..20 {
        feed.push(test_line(i));
    }
    let (server, addr) = start_server(feed.clone(), "127.0.0.1:0".parse().expect("addr")).await;
    let url = format!("http://{addr}");
    let key = PathBuf::from(&url);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let _attach = spawn_attach_with(url, tx, options());
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "twenty lines", |r| {
        r.ids(&key).len() == 20
    })
    .await;
    let expected: Vec<String> = (0..20).map(|i| format!("L{i}")).collect();
    assert_eq!(rec.ids(&key), expected);
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    assert_eq!(feed.skips(), vec![0]);
    stop_server(&feed, server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_answer_is_reported_once_and_retried_with_capped_backoff() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Not a serve: every path is 404.
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, Router::new()).await;
    });
    let url = format!("http://{addr}/");
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let _attach = spawn_attach_with(url, tx, options());
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "six retries", |r| r.statuses.len() >= 6).await;

    assert_eq!(rec.problems.len(), 1, "{:?}", rec.problems);
    assert!(
        rec.problems[0].message.contains("404"),
        "{}",
        rec.problems[0].message
    );
    let delays: Vec<Option<u64>> = rec
        .statuses
        .iter()
        .map(|s| match s {
            SourceStatus::Attached {
                connected: false,
                retry_in_ms,
                ..
            } => *retry_in_ms,
            other => panic!("unexpected status {other:?}"),
        })
        .collect();
    assert_eq!(
        &delays[..6],
        &[
            Some(20),
            Some(40),
            Some(80),
            Some(160),
            Some(160),
            Some(160)
        ]
    );
    server.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_scheme_is_refused_with_a_problem() {
    // https is attached like http (tests/remote_sources.rs); anything else is refused.
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let attach = spawn_attach_with("ftp://127.0.0.1:1".into(), tx, options());
    let mut rec = Recorder::default();
    wait_for(&mut rx, &mut rec, "a problem", |r| !r.problems.is_empty()).await;
    assert!(
        rec.problems[0]
            .message
            .contains("only http:// and https:// feeds")
    );
    attach.await.expect("task ends");
}

#[tokio::test(flavor = "multi_thread")]
async fn otlp_json_requests_from_the_feed_become_spans() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/corpus/otlp-python-sdk/otlp-json/traces.jsonl"
    ))
    .expect("fixture");
    let feed = Feed::new();
    for line in text.lines() {
        feed.push(line.to_owned());
    }
    let (server, addr) = start_server(feed.clone(), "127.0.0.1:0".parse().expect("addr")).await;
    let url = format!("http://{addr}");
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let _attach = toolcap::sources::attach::spawn_attach(url.clone(), tx);
    let mut rec = Recorder::default();
    // 5 requests holding 7 + 6 + 9 + 7 + 6 spans (counted with jq).
    wait_for(&mut rx, &mut rec, "35 spans", |r| r.total_spans() >= 35).await;
    assert_eq!(rec.total_spans(), 35);
    assert!(rec.problems.is_empty(), "{:?}", rec.problems);
    stop_server(&feed, server).await;
}
