//! `serve` against clients that misbehave: slow bodies, idle and half-sent connections, feed
//! readers that stop reading, and a disk that refuses writes. Every assertion is about an
//! outcome (a status code, a closed socket, a health field, a log line), never a duration;
//! the only clocks are upper bounds on how long to wait for an outcome before failing.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::{Serve, json_request, raw_http};

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn post_json(addr: &str, body: &serde_json::Value) -> u16 {
    raw_http(
        addr,
        "POST",
        "/v1/traces",
        &[JSON],
        body.to_string().as_bytes(),
    )
    .map(|response| response.status)
    .unwrap_or(0)
}

/// Polls `check` until it holds; fails (naming `what`) if it has not after a generous bound.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// This test process opens thousands of sockets.
pub(crate) fn raise_fd_limit() {
    let soft = toolcap::system::raise_open_file_limit().expect("the open-file limit");
    assert!(
        soft >= 4096,
        "these tests need 4096 open files, the limit is {soft}"
    );
}

/// Whether the server has closed `stream` (EOF or reset), without waiting.
fn closed_by_server(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    let mut reader = stream;
    let closed = match reader.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(err) if err.kind() == ErrorKind::WouldBlock => false,
        Err(_) => true,
    };
    stream.set_nonblocking(false).expect("blocking");
    closed
}

/// Sends a request head announcing a body, and one byte of it, then nothing more.
fn slow_body_client(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect slow client");
    stream
        .write_all(
            format!(
                "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Content-Length: 100000\r\n\r\n{{"
            )
            .as_bytes(),
        )
        .expect("send head");
    stream
}

fn starved_receiver_still_answers(max_connections: usize) {
    raise_fd_limit();
    let tmp = tempfile::tempdir().unwrap();
    let cap = max_connections.to_string();
    // Every client here shares one address: the per-peer share is the listener's cap.
    // Deadlines far beyond the test: fairness must not depend on them firing.
    let serve = Serve::start(
        &tmp.path().join("spool"),
        &[
            "--max-connections",
            &cap,
            "--max-connections-per-peer",
            &cap,
            "--idle-timeout",
            "3600",
            "--header-timeout",
            "3600",
            "--body-timeout",
            "3600",
        ],
    );
    let idle: Vec<TcpStream> = (0..2000)
        .map(|_| TcpStream::connect(&serve.http).expect("connect idle client"))
        .collect();
    let slow: Vec<TcpStream> = (0..8).map(|_| slow_body_client(&serve.http)).collect();

    let statuses: Vec<u16> = (1..=50u128)
        .map(|trace| post_json(&serve.http, &json_request(trace, 3)))
        .collect();
    assert!(
        statuses.iter().all(|status| *status == 200),
        "legitimate exports: {statuses:?}"
    );
    assert_eq!(serve.health()["spans"], 150);
    for (index, stream) in slow.iter().enumerate() {
        assert!(
            !closed_by_server(stream),
            "slow client {index} still holds its own connection, and only that"
        );
    }
    if max_connections < 2000 {
        // The cap was reached: the connections idle the longest made room, nobody mid-request.
        let must_close = 2000 + slow.len() - max_connections;
        wait_until("idle connections closed to make room", || {
            idle.iter()
                .filter(|stream| closed_by_server(stream))
                .count()
                >= must_close
        });
    } else {
        let closed = idle
            .iter()
            .filter(|stream| closed_by_server(stream))
            .count();
        assert_eq!(closed, 0, "below the cap, nobody is closed");
    }
}

#[test]
fn exports_get_200_while_8_slow_bodies_and_2000_idle_clients_are_connected() {
    starved_receiver_still_answers(4096);
}

#[test]
fn beyond_the_connection_cap_idle_clients_make_room_and_exports_get_200() {
    starved_receiver_still_answers(1024);
}

#[test]
fn a_body_below_the_minimum_rate_gets_a_retryable_503_and_the_connection_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &tmp.path().join("spool"),
        &["--body-timeout", "1", "--min-body-rate", "100000"],
    );
    let mut stream = slow_body_client(&serve.http);
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .expect("the server answers and closes");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    assert!(answer.contains("too slowly"), "{answer}");
    assert_eq!(post_json(&serve.http, &json_request(1, 2)), 200);
}

#[test]
fn idle_and_half_sent_connections_are_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &tmp.path().join("spool"),
        &["--idle-timeout", "1", "--header-timeout", "1"],
    );
    let read_to_close = |mut stream: TcpStream| -> Vec<u8> {
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let mut rest = Vec::new();
        match stream.read_to_end(&mut rest) {
            Ok(_) => rest,
            Err(err) if err.kind() == ErrorKind::ConnectionReset => rest,
            Err(err) => panic!("the server did not close the connection: {err}"),
        }
    };
    // Connected, never a byte.
    let silent = TcpStream::connect(&serve.http).unwrap();
    assert!(read_to_close(silent).is_empty());
    // Half a request head.
    let mut partial = TcpStream::connect(&serve.http).unwrap();
    partial
        .write_all(b"POST /v1/traces HTTP/1.1\r\nHost")
        .unwrap();
    assert!(read_to_close(partial).is_empty());
    // Kept alive after a complete request, then idle.
    let mut kept = TcpStream::connect(&serve.http).unwrap();
    let body = json_request(7, 1).to_string();
    kept.write_all(
        format!(
            "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let answer = String::from_utf8_lossy(&read_to_close(kept)).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(serve.health()["requests"], 1);
}

/// A feed request on a socket with a tiny receive buffer that is then never read.
fn stalled_reader(serve: &Serve) -> TcpStream {
    let addr: SocketAddr = serve.http.parse().unwrap();
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&addr.into()).expect("connect feed reader");
    let mut stream: TcpStream = socket.into();
    stream
        .write_all(
            format!(
                "GET /api/v1/stream HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\n\r\n",
                serve.feed_authorization
            )
            .as_bytes(),
        )
        .unwrap();
    stream
}

/// About `requests` × 10 KB of spool, so a reader that does not read fills every buffer.
fn fill_spool(serve: &Serve, requests: u128) {
    for trace in 1..=requests {
        assert_eq!(post_json(&serve.http, &json_request(trace, 30)), 200);
    }
}

#[test]
fn a_thousand_stalled_feed_readers_cost_under_100_mb() {
    raise_fd_limit();
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&tmp.path().join("spool"), &["--feed-stall-timeout", "3600"]);
    // Spool lines of ~100 KB (an SDK batch is one line), longer than what the feed reads at a
    // time, so a reader holding whole lines would show here.
    for trace in 1..=60 {
        assert_eq!(post_json(&serve.http, &json_request(trace, 300)), 200);
    }
    // Readers connect a hundred at a time, each hundred counted by the server before the next:
    // a thousand at once can overflow the listen queue while the server is busy, and a
    // connection dropped there is retried by the kernel only after seconds, if at all.
    let mut readers: Vec<TcpStream> = Vec::with_capacity(1000);
    for wave in 1..=10 {
        readers.extend((0..100).map(|_| stalled_reader(&serve)));
        wait_until("a hundred more feed readers", || {
            serve.health()["feed_readers"] == wave * 100
        });
    }
    // Polled with a generous bound; what the server last said is the failure's message.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let health = serve.health();
        if health["feed_readers_stalled"] == 1000 {
            assert_eq!(health["feed_readers"], 1000, "{health}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "gave up waiting for 1000 stalled feed readers: {health}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    let (rss, peak) = (serve.rss_kib(), serve.peak_rss_kib());
    eprintln!("1000 stalled feed readers: serve RSS {rss} KiB, peak {peak} KiB");
    // It was ~3.7 MB per reader, unbounded in total; the bound is 100 MB.
    assert!(peak < 100_000_000 / 1024, "peak RSS {peak} KiB");
    drop(readers);
    wait_until("readers gone", || serve.health()["feed_readers"] == 0);
}

#[test]
fn a_stalled_feed_reader_is_disconnected_with_a_logged_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let mut serve = Serve::start_with(
        &tmp.path().join("spool"),
        &["--feed-stall-timeout", "1"],
        |command| {
            command.stderr(Stdio::piped());
        },
    );
    fill_spool(&serve, 300);
    let (lines, logged) = mpsc::channel();
    let stderr = serve.child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut reader = stalled_reader(&serve);
    let reason = loop {
        let line = logged
            .recv_timeout(Duration::from_secs(120))
            .expect("serve logs why it dropped the reader");
        if line.contains("feed reader") {
            break line;
        }
    };
    assert!(reason.contains("disconnected"), "{reason}");
    assert!(reason.contains("--feed-stall-timeout"), "{reason}");
    // What was queued still arrives, then the connection ends instead of hanging.
    reader
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut received = Vec::new();
    let ended = match reader.read_to_end(&mut received) {
        Ok(_) => true,
        Err(err) => err.kind() == ErrorKind::ConnectionReset,
    };
    assert!(ended, "the stalled reader's connection was closed");
    let total: u64 = crate::support::spool_lines(&serve.dir)
        .iter()
        .map(|line| line.len() as u64 + 1)
        .sum();
    assert!((received.len() as u64) < total, "it did not get everything");
    wait_until("reader gone", || serve.health()["feed_readers"] == 0);
}
