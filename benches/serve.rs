//! Load generator for `toolcap-tui serve` (not run in CI): N concurrent OTLP clients send
//! 500-span requests for a fixed time, then serve is killed with SIGKILL and the spool is
//! checked: every acknowledged request must be there. Prints spans/s and the server's peak RSS.
//!
//! The wire is one of `protobuf` (keep-alive OTLP/HTTP, the default), `gzip` (the same with
//! each body compressed by the client, as SDKs do with compression on) and `grpc` (OTLP/gRPC
//! through tonic's client, one connection per client).
//!
//! `cargo bench --bench serve` (env: TOOLCAP_BENCH_SECS=10, TOOLCAP_BENCH_CLIENTS=4,
//! TOOLCAP_BENCH_SPANS=500, TOOLCAP_BENCH_WIRE=protobuf).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;

#[path = "support/otlp_http_client.rs"]
mod otlp_http_client;
use otlp_http_client::Connection;

const TEMPLATE_TRACE: [u8; 16] = *b"TRACE-ID-PATTERN";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn attr(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn template(spans: u64) -> ExportTraceServiceRequest {
    let spans = (0..spans)
        .map(|index| Span {
            trace_id: TEMPLATE_TRACE.to_vec(),
            span_id: (index + 1).to_be_bytes().to_vec(),
            parent_span_id: if index == 0 {
                vec![]
            } else {
                1u64.to_be_bytes().to_vec()
            },
            name: "chat gpt-4o".into(),
            kind: 3,
            start_time_unix_nano: 1_768_471_200_000_000_000 + index,
            end_time_unix_nano: 1_768_471_200_500_000_000 + index,
            attributes: vec![
                attr(
                    "gen_ai.operation.name",
                    any_value::Value::StringValue("chat".into()),
                ),
                attr(
                    "gen_ai.provider.name",
                    any_value::Value::StringValue("openai".into()),
                ),
                attr(
                    "gen_ai.request.model",
                    any_value::Value::StringValue("gpt-4o".into()),
                ),
                attr("gen_ai.usage.input_tokens", any_value::Value::IntValue(412)),
                attr("gen_ai.usage.output_tokens", any_value::Value::IntValue(37)),
                attr(
                    "gen_ai.request.temperature",
                    any_value::Value::DoubleValue(0.2),
                ),
                attr(
                    "server.address",
                    any_value::Value::StringValue("api.openai.com".into()),
                ),
            ],
            status: Some(Status::default()),
            ..Default::default()
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![attr(
                    "service.name",
                    any_value::Value::StringValue("bench".into()),
                )],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn with_trace(template: &[u8], offsets: &[usize], trace: u128) -> Vec<u8> {
    let mut body = template.to_vec();
    let id = trace.to_be_bytes();
    for &offset in offsets {
        body[offset..offset + 16].copy_from_slice(&id);
    }
    body
}

/// How the clients send.
#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Protobuf,
    Gzip,
    Grpc,
}

fn wire() -> Wire {
    match std::env::var("TOOLCAP_BENCH_WIRE").as_deref() {
        Err(_) | Ok("protobuf") => Wire::Protobuf,
        Ok("gzip") => Wire::Gzip,
        Ok("grpc") => Wire::Grpc,
        Ok(other) => panic!("TOOLCAP_BENCH_WIRE={other}: protobuf, gzip or grpc"),
    }
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(body).expect("gzip");
    encoder.finish().expect("gzip")
}

fn main() {
    let seconds = env_or("TOOLCAP_BENCH_SECS", 10);
    let clients = env_or("TOOLCAP_BENCH_CLIENTS", 4);
    let spans = env_or("TOOLCAP_BENCH_SPANS", 500);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--out",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let (mut addr, mut grpc_addr) = (String::new(), String::new());
    while addr.is_empty() || grpc_addr.is_empty() {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).expect("read") > 0,
            "serve exited"
        );
        if let Some(a) = line.trim().strip_prefix("http ") {
            addr = a.to_string();
        } else if let Some(a) = line.trim().strip_prefix("grpc ") {
            grpc_addr = a.to_string();
        }
    }

    let wire = wire();
    let request = Arc::new(template(spans));
    let template = Arc::new(request.encode_to_vec());
    let offsets: Arc<Vec<usize>> =
        Arc::new(memchr::memmem::find_iter(&template, &TEMPLATE_TRACE).collect());
    assert_eq!(offsets.len() as u64, spans);
    let acknowledged = Arc::new(Mutex::new(Vec::<u128>::new()));
    let refused = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..u128::from(clients))
        .map(|client| {
            let (addr, grpc_addr) = (addr.clone(), grpc_addr.clone());
            let (request, template, offsets) = (request.clone(), template.clone(), offsets.clone());
            let (acknowledged, refused, stop) =
                (acknowledged.clone(), refused.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut sequence = 0u128;
                let mut next_trace = || {
                    sequence += 1;
                    (client << 64) | sequence
                };
                let answered = |trace: u128, accepted: bool| match accepted {
                    true => acknowledged.lock().unwrap().push(trace),
                    false => *refused.lock().unwrap() += 1,
                };
                if wire == Wire::Grpc {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    runtime.block_on(async {
                        let mut grpc = TraceServiceClient::connect(format!("http://{grpc_addr}"))
                            .await
                            .expect("connect gRPC");
                        while !stop.load(Ordering::Relaxed) {
                            let trace = next_trace();
                            let mut request = (*request).clone();
                            for span in &mut request.resource_spans[0].scope_spans[0].spans {
                                span.trace_id = trace.to_be_bytes().to_vec();
                            }
                            match grpc.export(request).await {
                                Ok(_) => answered(trace, true),
                                Err(status) if status.code() == tonic::Code::Unavailable => {
                                    answered(trace, false)
                                }
                                Err(status) => panic!("client {client}: {status}"),
                            }
                        }
                    });
                    return;
                }
                let mut connection = Connection::open(&addr).expect("connect");
                while !stop.load(Ordering::Relaxed) {
                    let trace = next_trace();
                    let body = with_trace(&template, &offsets, trace);
                    let sent = match wire {
                        Wire::Gzip => connection.post(&gzip(&body), "Content-Encoding: gzip\r\n"),
                        _ => connection.post(&body, ""),
                    };
                    match sent {
                        Ok(200) => answered(trace, true),
                        Ok(_) => answered(trace, false),
                        Err(err) => panic!("client {client}: {err}"),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("client");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let peak = status
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM: ?")
        .to_string();
    child.kill().expect("SIGKILL serve");
    child.wait().expect("wait");

    let acknowledged = acknowledged.lock().unwrap().clone();
    let mut stored: HashSet<String> = HashSet::new();
    let mut stored_spans = 0u64;
    let mut segments: Vec<_> = std::fs::read_dir(dir.path())
        .expect("spool")
        .map(|e| e.expect("entry").path())
        .filter(|path| {
            // Only the spool's segments: `serve` also keeps its token and lock file there.
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("spool-") && name.ends_with(".otlp.jsonl")
        })
        .collect();
    segments.sort();
    for segment in segments {
        let text = std::fs::read_to_string(&segment).expect("segment");
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).expect("spool line");
            let spans = &value["resourceSpans"][0]["scopeSpans"][0]["spans"];
            stored_spans += spans.as_array().map_or(0, |s| s.len() as u64);
            stored.insert(spans[0]["traceId"].as_str().unwrap_or("").to_string());
        }
    }
    let lost = acknowledged
        .iter()
        .filter(|trace| !stored.contains(&hex::encode(trace.to_be_bytes())))
        .count();
    let acked_spans = acknowledged.len() as u64 * spans;
    println!(
        "serve, {}: {clients} clients x {spans}-span requests for {elapsed:.1} s: {} acknowledged \
         ({:.0} spans/s), {} refused (503 or UNAVAILABLE), {lost} acknowledged requests lost after kill -9, \
         {stored_spans} spans in the spool, server {peak}",
        match wire {
            Wire::Protobuf => "protobuf",
            Wire::Gzip => "gzip",
            Wire::Grpc => "gRPC",
        },
        acknowledged.len(),
        acked_spans as f64 / elapsed,
        refused.lock().unwrap(),
    );
    assert_eq!(lost, 0, "acknowledged requests lost");
}
