//! Legitimate exports during a slow-body flood (manual measurement, not run by CI).
//!
//! Starts the OTLP/HTTP receiver with its default limits (what `serve` and `--listen` use) in
//! this process, then 1,100 clients that each announce a 100,000-byte body and send it a byte a
//! second, reconnecting as soon as they are answered or closed, spread over a few loopback
//! addresses. Two exporters then post real OTLP/JSON requests for the measured time, one from
//! an address of its own and one from an address the flood also uses; each retries as an OTLP
//! exporter does (after `Retry-After` on 503/429, at once on a broken connection). It prints,
//! per exporter, how many requests were acknowledged on the first try and in the end, and the
//! receiver's eviction counters.
//!
//! `cargo run --release --example slow_flood`; env `TOOLCAP_FLOOD_CLIENTS` (default 1100),
//! `TOOLCAP_FLOOD_ADDRS` (flood addresses 127.0.0.1.., default 5), `TOOLCAP_FLOOD_SECS`
//! (default 30), `TOOLCAP_FLOOD_BODY_TIMEOUT` (the receiver's body grace in seconds, default
//! its own: a long one stands for bodies that keep just above the minimum rate, which the
//! rate rule never cuts).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use toolcap::receiver::{self, Delivery, ReceivedRequest, ReceiverConfig, SinkError};

/// Takes every request and keeps nothing: the measurement is about getting in.
struct Discard;

impl receiver::RequestSink for Discard {
    fn take(&self, _received: ReceivedRequest<'_>) -> Result<Delivery, SinkError> {
        Ok(receiver::delivered())
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn raise_fd_limit() {
    toolcap::system::raise_open_file_limit();
}

/// One flooding client; counts its first head in `started`.
async fn attacker(
    server: SocketAddr,
    source: IpAddr,
    started: Arc<AtomicUsize>,
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
            started.fetch_add(1, Ordering::SeqCst);
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
                _ = stream.read(&mut answer) => break,
                _ = stop.changed() => return,
            }
        }
    }
}

/// One POST from `source`: the status (0: the connection broke) and `Retry-After` seconds.
fn post(server: SocketAddr, source: IpAddr, body: &[u8]) -> (u16, Option<u64>) {
    let attempt = || -> std::io::Result<(u16, Option<u64>)> {
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
        let text = String::from_utf8_lossy(&answer);
        let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        let retry_after = text
            .lines()
            .find_map(|line| {
                line.to_ascii_lowercase()
                    .strip_prefix("retry-after:")
                    .map(str::to_owned)
            })
            .and_then(|value| value.trim().parse().ok());
        Ok((status, retry_after))
    };
    attempt().unwrap_or((0, None))
}

fn request_body(index: usize) -> Vec<u8> {
    let trace = format!("{index:032x}");
    let spans: Vec<serde_json::Value> = (1..=3)
        .map(|n| {
            serde_json::json!({"traceId": trace, "spanId": format!("{n:016x}"), "name": "execute_tool lookup",
                "kind": 1, "startTimeUnixNano": "1768471200000000000", "endTimeUnixNano": "1768471200100000000",
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]})
        })
        .collect();
    serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
        .to_string()
        .into_bytes()
}

#[derive(Default, Debug)]
struct Tally {
    requests: usize,
    first_try: usize,
    acknowledged: usize,
    attempts: usize,
    latencies_ms: Vec<f64>,
}

/// Posts a request every 100 ms from `source` until `until`, retrying each as an exporter does
/// (at most 5 tries).
fn exporter(server: SocketAddr, source: IpAddr, until: Instant, first: usize) -> Tally {
    let mut tally = Tally::default();
    let mut index = first;
    while Instant::now() < until {
        index += 1;
        tally.requests += 1;
        let body = request_body(index);
        let started = Instant::now();
        for attempt in 1..=5 {
            tally.attempts += 1;
            let (status, retry_after) = post(server, source, &body);
            if status == 200 {
                tally.acknowledged += 1;
                tally.first_try += usize::from(attempt == 1);
                tally
                    .latencies_ms
                    .push(started.elapsed().as_secs_f64() * 1e3);
                break;
            }
            if let Some(seconds) = retry_after {
                std::thread::sleep(Duration::from_secs(seconds));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    tally
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    raise_fd_limit();
    let clients = env_number("TOOLCAP_FLOOD_CLIENTS", 1100);
    let addresses = env_number("TOOLCAP_FLOOD_ADDRS", 5).clamp(1, 200);
    let seconds = env_number("TOOLCAP_FLOOD_SECS", 30) as u64;

    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut config = ReceiverConfig {
        http: Some("127.0.0.1:0".into()),
        grpc: None,
        ..ReceiverConfig::default()
    };
    if let Ok(Ok(seconds)) = std::env::var("TOOLCAP_FLOOD_BODY_TIMEOUT").map(|s| s.parse()) {
        config.limits.body_timeout = Duration::from_secs(seconds);
    }
    let handle = server_runtime
        .block_on(receiver::start(config.clone(), Arc::new(Discard), None))
        .expect("start the receiver");
    let server = handle.http_addr.expect("http address");

    let flood_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (stop, stopped) = watch::channel(false);
    let started = Arc::new(AtomicUsize::new(0));
    for client in 0..clients {
        let source = IpAddr::from([127, 0, 0, 1 + (client % addresses) as u8]);
        flood_runtime.spawn(attacker(server, source, started.clone(), stopped.clone()));
    }
    while started.load(Ordering::SeqCst) < clients {
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "flood: {clients} slow clients over {addresses} address(es), receiver limits {:?}",
        config.limits
    );

    let until = Instant::now() + Duration::from_secs(seconds);
    let own: IpAddr = [127, 0, 0, 250].into();
    let shared: IpAddr = [127, 0, 0, 1].into();
    let own_thread = std::thread::spawn(move || exporter(server, own, until, 0));
    let shared_thread = std::thread::spawn(move || exporter(server, shared, until, 1_000_000));
    let results = [
        ("its own address", own_thread.join().expect("exporter")),
        (
            "the flood's address",
            shared_thread.join().expect("exporter"),
        ),
    ];
    let _ = stop.send(true);
    for (name, mut tally) in results {
        tally.latencies_ms.sort_by(f64::total_cmp);
        println!(
            "exporter from {name}: {} requests, {} acknowledged on the first try ({:.1}%), {} in the end ({:.1}%), {:.2} tries each; latency p50 {:.1} ms, p99 {:.1} ms",
            tally.requests,
            tally.first_try,
            100.0 * tally.first_try as f64 / tally.requests.max(1) as f64,
            tally.acknowledged,
            100.0 * tally.acknowledged as f64 / tally.requests.max(1) as f64,
            tally.attempts as f64 / tally.requests.max(1) as f64,
            percentile(&tally.latencies_ms, 0.5),
            percentile(&tally.latencies_ms, 0.99),
        );
    }
    let stats = &handle.http_stats;
    println!(
        "receiver: {} connections closed to make room, {} refused, {} timed out",
        stats.evicted.load(Ordering::Relaxed),
        stats.refused.load(Ordering::Relaxed),
        stats.timed_out.load(Ordering::Relaxed)
    );
    drop(flood_runtime);
    server_runtime.block_on(handle.shutdown());
}
