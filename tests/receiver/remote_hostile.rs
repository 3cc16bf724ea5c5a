//! Remote sources that misbehave: a server that takes the connection and never answers, one
//! that drips its answer a byte at a time, one whose answer never ends, and a Jaeger search
//! naming far more traces than asked for. `dump` must end with exit 2 and the reason, never
//! hang and never buffer without bound. The time limits are shortened through the environment
//! (`TOOLCAP_REMOTE_IDLE_TIMEOUT`, `TOOLCAP_REMOTE_TIMEOUT`); no assertion is about time.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// How the test server answers each connection.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Reads the request, then says nothing.
    Silent,
    /// Answers 200 with a chunked body of one space every 100 ms, forever.
    Drip,
    /// Answers 200 with a chunked body of spaces that never ends, as fast as it is read.
    Endless,
}

/// Serves `behaviour` on 127.0.0.1; returns the address. The thread lives as long as the
/// test process.
fn hostile_server(behaviour: Behaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || answer(stream, behaviour));
        }
    });
    addr
}

fn read_head(stream: &mut TcpStream) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
}

fn answer(mut stream: TcpStream, behaviour: Behaviour) {
    read_head(&mut stream);
    let head =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    match behaviour {
        Behaviour::Silent => {
            // Hold the connection open until the client gives up.
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        }
        Behaviour::Drip => {
            if stream.write_all(head).is_err() {
                return;
            }
            // The server's own pace, not the test's synchronisation.
            while stream.write_all(b"1\r\n \r\n").is_ok() {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Behaviour::Endless => {
            if stream.write_all(head).is_err() {
                return;
            }
            let mut chunk = format!("{:x}\r\n", 1 << 20).into_bytes();
            chunk.extend(std::iter::repeat_n(b' ', 1 << 20));
            chunk.extend_from_slice(b"\r\n");
            while stream.write_all(&chunk).is_ok() {}
        }
    }
}

fn dump(source: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
    command
        .args(["dump", "--json", source])
        .env_remove("TOOLCAP_TOKEN")
        .env_remove("TOOLCAP_REMOTE_TIMEOUT")
        .env_remove("TOOLCAP_REMOTE_IDLE_TIMEOUT");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn exits_2_saying(output: &Output, reason: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    let said = format!("{stderr}{}", String::from_utf8_lossy(&output.stdout));
    assert!(said.contains(reason), "expected {reason:?} in: {said}");
}

#[test]
fn a_server_that_never_answers_ends_dump_with_exit_2_and_the_reason() {
    let addr = hostile_server(Behaviour::Silent);
    let quick = [("TOOLCAP_REMOTE_IDLE_TIMEOUT", "1")];
    for source in [
        format!("jaeger+http://{addr}?service=agent"),
        format!("phoenix+http://{addr}/agents"),
        format!("http://{addr}"),
    ] {
        let output = dump(&source, &quick);
        exits_2_saying(&output, "no data for 1 s");
        exits_2_saying(&output, &addr);
    }
}

#[test]
fn a_server_that_drips_its_answer_is_given_up_after_the_total_time() {
    let addr = hostile_server(Behaviour::Drip);
    let output = dump(
        &format!("jaeger+http://{addr}?service=agent"),
        &[
            ("TOOLCAP_REMOTE_IDLE_TIMEOUT", "30"),
            ("TOOLCAP_REMOTE_TIMEOUT", "2"),
        ],
    );
    exits_2_saying(&output, "gave up after 2 s");
}

#[test]
fn the_remote_timeout_flag_sets_the_total_time_over_the_environment() {
    let addr = hostile_server(Behaviour::Drip);
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--remote-timeout", "1.5"])
        .arg(format!("jaeger+http://{addr}?service=agent"))
        .env_remove("TOOLCAP_TOKEN")
        .env("TOOLCAP_REMOTE_TIMEOUT", "600")
        .env("TOOLCAP_REMOTE_IDLE_TIMEOUT", "30")
        .output()
        .unwrap();
    exits_2_saying(&output, "gave up after 1.5 s");
    for bad in ["0", "inf", "soon"] {
        let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
            .args([
                "dump",
                "--remote-timeout",
                bad,
                "jaeger+http://127.0.0.1:9?service=a",
            ])
            .output()
            .unwrap();
        exits_2_saying(&output, "expected a number of seconds above 0");
    }
}

#[test]
fn an_answer_that_never_ends_is_refused_past_64_mib() {
    let addr = hostile_server(Behaviour::Endless);
    let output = dump(&format!("phoenix+http://{addr}"), &[]);
    exits_2_saying(&output, "longer than 64 MiB");
}

#[test]
fn a_bad_timeout_setting_is_an_error_naming_it() {
    let output = dump(
        "jaeger+http://127.0.0.1:9?service=agent",
        &[("TOOLCAP_REMOTE_TIMEOUT", "soon")],
    );
    exits_2_saying(&output, "TOOLCAP_REMOTE_TIMEOUT");
}

/// A Jaeger search answer naming `named` traces, each of which answers with one span; counts
/// the trace reads.
fn generous_jaeger(runtime: &tokio::runtime::Runtime, named: usize) -> (String, Arc<AtomicUsize>) {
    use axum::extract::{Path, State};
    use axum::routing::get;
    let reads = Arc::new(AtomicUsize::new(0));
    let span = |id: &str| {
        json!({"traceId": id, "spanId": "0000000000000001", "name": "root",
               "startTimeUnixNano": "1768471200000000000", "endTimeUnixNano": "1768471200100000000"})
    };
    let ids: Vec<String> = (1..=named).map(|n| format!("{n:032x}")).collect();
    let spans: Vec<Value> = ids.iter().map(|id| span(id)).collect();
    let search =
        json!({"result": {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}}).to_string();
    let app = axum::Router::new()
        .route("/api/v3/traces", get(move || async move { search }))
        .route(
            "/api/v3/traces/{id}",
            get(
                move |State(reads): State<Arc<AtomicUsize>>, Path(id): Path<String>| async move {
                    reads.fetch_add(1, Ordering::SeqCst);
                    json!({"result": {"resourceSpans": [{"scopeSpans": [{"spans": [span(&id)]}]}]}})
                        .to_string()
                },
            ),
        )
        .with_state(reads.clone());
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    (addr, reads)
}

#[test]
fn jaeger_reads_at_most_limit_traces_whatever_the_search_names() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (addr, reads) = generous_jaeger(&runtime, 500);
    let output = dump(&format!("jaeger+http://{addr}?service=agent&limit=3"), &[]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["invocations"].as_array().unwrap().len(), 3);
    assert_eq!(reads.load(Ordering::SeqCst), 3);
}
