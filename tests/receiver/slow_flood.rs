//! A slow-body flood against `serve`: hundreds of clients from a few loopback addresses each
//! announce a large body and send it a byte a second, reconnecting whenever they are closed,
//! more of them than the connection cap. A legitimate exporter from another address must still
//! have every request acknowledged (one sharing the flood's address is counted and reported). The receiver's own deadlines
//! are set far beyond the test, so what lets the exporter in is how connections are shared,
//! not a timer firing. No assertion is about time.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::support::{Serve, json_request};

/// Attackers per source address: 300 share an address with the exporter.
const ATTACKERS: [(&str, usize); 4] = [
    ("127.0.0.1", 300),
    ("127.0.0.2", 40),
    ("127.0.0.3", 40),
    ("127.0.0.4", 40),
];

/// One attacker: connects from `source`, sends a request head announcing 100,000 bytes, then a
/// byte a second; reconnects whenever the server closes or answers. Counts its first head in
/// `started` (and wakes the test), until `stop`.
async fn attacker(
    server: SocketAddr,
    source: IpAddr,
    started: Arc<(AtomicUsize, tokio::sync::Notify)>,
    mut stop: watch::Receiver<bool>,
) {
    let head = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: {server}\r\nContent-Type: application/json\r\n\
         Content-Length: 100000\r\n\r\n{{"
    );
    let mut counted = false;
    while !*stop.borrow() {
        let Ok(socket) = tokio::net::TcpSocket::new_v4() else {
            return;
        };
        if socket.bind(SocketAddr::new(source, 0)).is_err() {
            return;
        }
        let Ok(mut stream) = socket.connect(server).await else {
            continue;
        };
        if stream.write_all(head.as_bytes()).await.is_err() {
            continue;
        }
        if !counted {
            counted = true;
            started.0.fetch_add(1, Ordering::SeqCst);
            started.1.notify_one();
        }
        let mut drip = tokio::time::interval(Duration::from_secs(1));
        let mut answer = [0u8; 512];
        loop {
            tokio::select! {
                _ = drip.tick() => {
                    if stream.write_all(b" ").await.is_err() {
                        break;
                    }
                }
                // Any answer (a refusal, a timeout) or a close: start again.
                _ = stream.read(&mut answer) => break,
                _ = stop.changed() => return,
            }
        }
    }
}

/// Posts one OTLP/JSON request from `source`; the status, or 0 when the connection failed.
fn post_from(server: SocketAddr, source: IpAddr, body: &[u8]) -> u16 {
    let attempt = || -> std::io::Result<u16> {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        socket.bind(&SocketAddr::new(source, 0).into())?;
        socket.connect(&server.into())?;
        let mut stream: TcpStream = socket.into();
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let head = format!(
            "POST /v1/traces HTTP/1.1\r\nHost: {server}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let status = std::str::from_utf8(answer.get(9..12).unwrap_or_default())
            .ok()
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        Ok(status)
    };
    attempt().unwrap_or(0)
}

#[test]
fn a_slow_body_flood_beyond_the_connection_cap_does_not_starve_an_exporter() {
    crate::receiver_limits::raise_fd_limit();
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &tmp.path().join("spool"),
        &[
            "--max-connections",
            "256",
            "--max-connections-per-peer",
            "64",
            "--idle-timeout",
            "3600",
            "--header-timeout",
            "3600",
            "--body-timeout",
            "3600",
        ],
    );
    let server: SocketAddr = serve.http.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (stop, stopped) = watch::channel(false);
    let started = Arc::new((AtomicUsize::new(0), tokio::sync::Notify::new()));
    let total: usize = ATTACKERS.iter().map(|(_, count)| count).sum();
    for (source, count) in ATTACKERS {
        let source: IpAddr = source.parse().unwrap();
        for _ in 0..count {
            runtime.spawn(attacker(server, source, started.clone(), stopped.clone()));
        }
    }
    // Every attacker has sent a head at least once: the cap is full of bodies in progress.
    runtime.block_on(async {
        loop {
            let notified = started.1.notified();
            if started.0.load(Ordering::SeqCst) >= total {
                break;
            }
            notified.await;
        }
    });

    // An exporter on an address of its own must have every request acknowledged: the flood's
    // connections make room for it. One that shares the flood's address competes with 300
    // reconnecting flooders for its address's share, so its requests are counted, not required.
    let own: IpAddr = "127.0.0.9".parse().unwrap();
    let shared: IpAddr = "127.0.0.1".parse().unwrap();
    let mut retried = 0;
    let mut shared_acknowledged = 0;
    let mut acknowledged = 0;
    for trace in 1..=40u128 {
        let body = json_request(trace, 3).to_string();
        let source = if trace % 2 == 0 { own } else { shared };
        // An exporter retries a refused or broken request.
        let mut statuses = Vec::new();
        for _ in 0..20 {
            let status = post_from(server, source, body.as_bytes());
            statuses.push(status);
            if status == 200 {
                break;
            }
        }
        retried += statuses.len() - 1;
        let ok = statuses.last() == Some(&200);
        acknowledged += usize::from(ok);
        if source == shared {
            shared_acknowledged += usize::from(ok);
        } else {
            assert!(
                ok,
                "export {trace} from {source} during the flood: {statuses:?}"
            );
        }
    }
    let _ = stop.send(true);
    drop(runtime);
    eprintln!(
        "40 exports during a flood of {total} slow bodies: {retried} retries; \
         {shared_acknowledged}/20 acknowledged from the flood's own address"
    );
    // Every acknowledged request is in the spool, three spans each.
    assert_eq!(serve.health()["spans"], 3 * acknowledged as u64);
}
