//! Memory of live data (manual measurement, not run by CI): sends 100,000 spans of about 650
//! bytes, 500 per OTLP/HTTP protobuf request (what an SDK's batch processor sends), over
//! loopback to an embedded receiver feeding a Store, then prints the process's peak and final
//! RSS and the store's memory breakdown.
//!
//! Two ways in, each in its own process so the peak is its own:
//! - `spooled`: `--listen` as it is (the body kept in the live spool, payloads as ranges);
//! - `inline`: what `--listen` did before it, with the same receiver: the decoded (owned)
//!   request converted span by span, every payload held in memory.
//!
//! Then it times a few queries over the store (the evaluator alone, best of five): the live
//! shape is where the search index meets texts that occur once.
//!
//! A third, `send ADDR [FIRST]`, only sends the same requests (spans numbered from FIRST, 0 by
//! default) to a receiver already listening at ADDR: the TUI itself
//! (`toolcap-tui --listen=ADDR`), measured from outside (`scripts/live_tui.sh`).
//!
//! `cargo run --release --example live_memory -- spooled` (or `inline`, or `send ADDR`); env
//! `TOOLCAP_LIVE_SPANS` (default 100000).
//!
//! It also counts the heap blocks alive by size ([`blocks`]): the allocator's own words are paid
//! per block, so what the breakdown counts in bytes can hide what the count of blocks costs.

use std::sync::Arc;

use futures::future::BoxFuture;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;
use tokio::sync::mpsc;
use toolcap::formats::otlp::batch_from_request;
use toolcap::model::{Batch, Origin};
use toolcap::query::{Context, Query};
use toolcap::receiver::{self, ReceivedRequest, RequestSink, SinkError};
use toolcap::redact::Reveal;
use toolcap::sources::IngestEvent;
use toolcap::sources::listen::{ListenConfig, spawn_listen};
use toolcap::sources::live_spool::DEFAULT_LIVE_SPOOL_BYTES;
use toolcap::store::Store;

#[path = "../benches/support/otlp_http_client.rs"]
mod otlp_http_client;
use otlp_http_client::Connection;

mod blocks {
    //! The blocks alive by size, as the counting allocator saw them.
    use toolcap::system::CountingAllocator;

    /// glibc's block for a request of `size` bytes: 8 bytes more, rounded up to 16, 32 at least.
    fn with_allocator_words(size: usize) -> usize {
        ((size + 8).div_ceil(16) * 16).max(32)
    }

    /// Blocks alive, their bytes as asked and as the allocator holds them (blocks under 1 KiB),
    /// and the sizes with the most blocks.
    pub fn report() {
        const SIZES: usize = CountingAllocator::SIZES;
        let mut sizes = super::ALLOCATOR.blocks_alive();
        let alive: i64 = sizes.iter().map(|s| s.1).sum();
        let asked: i64 = sizes.iter().map(|s| s.2).sum();
        let small = sizes.iter().filter(|s| s.0 < SIZES);
        let small_asked: i64 = small.clone().map(|s| s.2).sum();
        let small_held: i64 = small
            .map(|&(size, alive, _)| alive * with_allocator_words(size) as i64)
            .sum();
        let mib = |bytes: i64| bytes as f64 / (1 << 20) as f64;
        println!(
            "  heap blocks alive {alive}: {:.1} MiB asked; those under 1 KiB {:.1} MiB asked, \
             {:.1} MiB with the allocator's words",
            mib(asked),
            mib(small_asked),
            mib(small_held)
        );
        sizes.sort_by_key(|s| -s.1);
        for (size, alive, _) in sizes.iter().take(8) {
            let size = if *size == SIZES {
                "1 KiB+".to_owned()
            } else {
                format!("{size} B")
            };
            println!("  {alive:>10} blocks of {size}");
        }
    }
}

#[global_allocator]
static ALLOCATOR: toolcap::system::CountingAllocator = toolcap::system::CountingAllocator::new();

const SPANS_PER_REQUEST: u64 = 500;
const SPANS_PER_TRACE: u64 = 10;

fn text(key: &str, value: String) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value)),
        }),
        ..Default::default()
    }
}

fn int(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(value)),
        }),
        ..Default::default()
    }
}

/// Span `index` of the whole run: traces of ten, an agent root, then chat and tool spans
/// alternating, each with its message or tool payloads.
fn span(index: u64) -> Span {
    let trace = index / SPANS_PER_TRACE;
    let within = index % SPANS_PER_TRACE;
    let mut trace_id = vec![0u8; 8];
    trace_id.extend_from_slice(&(trace + 1).to_be_bytes());
    let start = 1_768_471_200_000_000_000 + index * 1_000_000;
    let mut span = Span {
        trace_id,
        span_id: (index + 1).to_be_bytes().to_vec(),
        parent_span_id: if within == 0 {
            Vec::new()
        } else {
            (trace * SPANS_PER_TRACE + 1).to_be_bytes().to_vec()
        },
        kind: 1,
        start_time_unix_nano: start,
        end_time_unix_nano: start + 800_000,
        status: Some(Status::default()),
        ..Default::default()
    };
    match within {
        0 => {
            span.name = "invoke_agent research-assistant".into();
            span.attributes = vec![
                text("gen_ai.operation.name", "invoke_agent".into()),
                text("gen_ai.agent.name", "research-assistant".into()),
                text("gen_ai.conversation.id", format!("conv-{trace}")),
                text(
                    "gen_ai.input.messages",
                    format!(
                        r#"[{{"role":"user","parts":[{{"type":"text","content":"Question {trace}: which of our regional offices changed their supplier contracts in the third quarter, and what did that do to delivery times? Please cite the documents you used, and say which figures you could not verify."}}]}}]"#
                    ),
                ),
            ];
        }
        within if within % 2 == 1 => {
            span.name = "chat gpt-4o".into();
            span.attributes = vec![
                text("gen_ai.operation.name", "chat".into()),
                text("gen_ai.provider.name", "openai".into()),
                text("gen_ai.request.model", "gpt-4o".into()),
                int("gen_ai.usage.input_tokens", 300 + (index % 97) as i64),
                int("gen_ai.usage.output_tokens", 25 + (index % 13) as i64),
                text(
                    "gen_ai.output.messages",
                    format!(
                        r#"[{{"role":"assistant","parts":[{{"type":"tool_call","id":"call_{index}","name":"search_documents","arguments":{{"query":"supplier contracts Q3 regional offices","top_k":5}}}},{{"type":"text","content":"I will look up the supplier contracts first, then compare delivery times before and after the change, office by office."}}],"finish_reason":"tool_calls"}}]"#
                    ),
                ),
            ];
        }
        _ => {
            span.name = "execute_tool search_documents".into();
            span.attributes = vec![
                text("gen_ai.operation.name", "execute_tool".into()),
                text("gen_ai.tool.name", "search_documents".into()),
                text("gen_ai.tool.call.id", format!("call_{}", index - 1)),
                text(
                    "gen_ai.tool.call.arguments",
                    r#"{"query":"supplier contracts Q3 regional offices","top_k":5,"filters":{"kind":["contract","report"],"after":"2025-07-01"}}"#.into(),
                ),
                text(
                    "gen_ai.tool.call.result",
                    format!(
                        r#"{{"documents":[{{"id":"doc-{index}-1","title":"Supplier review Q3","score":0.91}},{{"id":"doc-{index}-2","title":"Regional delivery report","score":0.84}},{{"id":"doc-{index}-3","title":"Contract amendments","score":0.77}},{{"id":"doc-{index}-4","title":"Logistics board minutes, September","score":0.71}}],"truncated":false}}"#
                    ),
                ),
            ];
        }
    }
    span
}

fn request(first: u64, count: u64) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "live-memory".into())],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: (first..first + count).map(span).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// Sends `total` spans to `addr`, numbered from `first`, a request of 500 at a time over one
/// keep-alive connection; the bytes sent. As an SDK's batch processor does, the next request
/// is made ready while the last one is answered, so the pace is the receiver's.
fn send_all(addr: &str, first: u64, total: u64) -> u64 {
    let (bodies, ready) = std::sync::mpsc::sync_channel::<(u64, Vec<u8>)>(1);
    let encoder = std::thread::spawn(move || {
        let end = first + total;
        let mut first = first;
        while first < end {
            let count = SPANS_PER_REQUEST.min(end - first);
            if bodies
                .send((first, request(first, count).encode_to_vec()))
                .is_err()
            {
                return;
            }
            first += count;
        }
    });
    let mut connection = Connection::open(addr).expect("connect");
    let mut sent_bytes = 0u64;
    for (first, body) in ready {
        sent_bytes += body.len() as u64;
        let status = connection.post(&body, "").expect("an answer");
        assert_eq!(status, 200, "request at span {first} refused");
    }
    encoder.join().expect("encoder");
    sent_bytes
}

/// The sink `--listen` had before the live spool: the decoded (owned) request, converted inline.
struct InlineSink {
    sender: mpsc::Sender<ExportTraceServiceRequest>,
}

impl RequestSink for InlineSink {
    fn take(&self, received: ReceivedRequest<'_>) -> Result<receiver::Delivery, SinkError> {
        let place = self.sender.try_reserve().map_err(|_| SinkError::Full)?;
        place.send(received.checked.to_owned_request());
        Ok(receiver::delivered())
    }
}

/// Queries over the texts of the live shape: words of the unique message texts (common, rare,
/// absent), a field, a fuzzy word.
const QUERIES: [&str; 6] = [
    "\"Supplier Review\"",
    "\"doc-4242-3\"",
    "\"non-fatal\"",
    "tool:search",
    "srchdoc",
    "\"conv-77\"",
];

/// Each query redacted (best of five) and revealed (once: a revealed search reads every
/// span's payloads from the spool, and the index cannot narrow it).
fn time_queries(store: &Store) {
    let runs = store.newest_first();
    for text in QUERIES {
        let query = Query::parse(text).expect("a valid query");
        let time = |reveal: Reveal, rounds: usize| {
            let ctx = Context {
                reveal,
                ..Context::default()
            };
            let mut best = std::time::Duration::MAX;
            let mut matched = 0;
            for _ in 0..rounds {
                let started = std::time::Instant::now();
                matched = runs
                    .iter()
                    .filter(|inv| query.matches(inv, &ctx).is_some())
                    .count();
                best = best.min(started.elapsed());
            }
            (best.as_secs_f64() * 1e3, matched)
        };
        let (redacted_ms, redacted) = time(Reveal::Redacted, 5);
        let (revealed_ms, revealed) = time(Reveal::Revealed, 1);
        println!(
            "  query {text:<20} redacted {redacted_ms:>8.2} ms, {redacted:>6} runs; \
             revealed {revealed_ms:>8.2} ms, {revealed:>6} runs"
        );
    }
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with(field))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "spooled".into());
    let total: u64 = std::env::var("TOOLCAP_LIVE_SPANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    if mode == "send" {
        let addr = std::env::args().nth(2).expect("send ADDR [FIRST]");
        // Spans numbered from FIRST: a second send adds new runs after the first's.
        let first: u64 = std::env::args()
            .nth(3)
            .map_or(0, |first| first.parse().expect("FIRST is a span number"));
        let sent = tokio::task::spawn_blocking(move || send_all(&addr, first, total))
            .await
            .expect("sender");
        println!("sent {total} spans, {:.1} MiB as protobuf", mib(sent));
        return;
    }
    let (batches_tx, mut batches) = mpsc::channel::<Batch>(256);
    let mut spool_dir = None;
    let (addr, stop): (String, Box<dyn FnOnce() -> BoxFuture<'static, ()>>) = match mode.as_str() {
        "spooled" => {
            let (tx, mut rx) = mpsc::channel(256);
            let handle = spawn_listen(
                ListenConfig {
                    http: "127.0.0.1:0".into(),
                    grpc: None,
                    token: None,
                    spool_bytes: DEFAULT_LIVE_SPOOL_BYTES,
                    spool_parent: None,
                },
                tx,
            )
            .await
            .expect("listen");
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    if let IngestEvent::Batch(batch) = event
                        && batches_tx.send(batch).await.is_err()
                    {
                        break;
                    }
                }
            });
            let addr = handle.receiver.http_addr.expect("http").to_string();
            spool_dir = handle.spool_dir.clone();
            (addr, Box::new(move || Box::pin(handle.shutdown())))
        }
        "inline" => {
            let (sender, mut requests) = mpsc::channel(256);
            let handle = receiver::start(
                receiver::ReceiverConfig {
                    http: Some("127.0.0.1:0".into()),
                    grpc: None,
                    ..Default::default()
                },
                Arc::new(InlineSink { sender }),
                None,
            )
            .await
            .expect("receiver");
            let origin = Origin::endpoint("otlp://inline");
            tokio::spawn(async move {
                while let Some(request) = requests.recv().await {
                    let batch = batch_from_request(&request, &origin, "otlp-protobuf", None);
                    if batches_tx.send(batch).await.is_err() {
                        break;
                    }
                }
            });
            let addr = handle.http_addr.expect("http").to_string();
            (addr, Box::new(move || Box::pin(handle.shutdown())))
        }
        other => panic!("unknown mode {other}: spooled or inline"),
    };

    let rss_before = status_kib("VmRSS:");
    let sender = tokio::task::spawn_blocking(move || send_all(&addr, 0, total));
    let mut store = Store::new();
    while store.stats().spans_seen < total {
        let batch = batches.recv().await.expect("ingest ended early");
        store.ingest(batch);
    }
    let sent_bytes = sender.await.expect("sender");
    // Read before the breakdown: counting shared allocations once takes a set of their
    // addresses, megabytes the store itself never holds.
    let (rss_after, rss_peak) = (status_kib("VmRSS:"), status_kib("VmHWM:"));
    let heap = toolcap::system::allocator_bytes();
    let breakdown = store.memory_breakdown();
    println!(
        "{mode}: {total} spans, {:.1} MiB sent as protobuf ({:.0} bytes per span)",
        mib(sent_bytes),
        sent_bytes as f64 / total as f64
    );
    println!(
        "  RSS {:.1} MiB before, {:.1} MiB after, peak {:.1} MiB; the store counts {:.1} MiB",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        rss_peak as f64 / 1024.0,
        mib(breakdown.total())
    );
    if let Some((in_use, held)) = heap {
        println!(
            "  heap in use {:.1} MiB, held from the system {:.1} MiB",
            mib(in_use),
            mib(held)
        );
    }
    if let Some(dir) = &spool_dir {
        let on_disk: u64 = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok()?.metadata().ok())
                    .map(|meta| meta.len())
                    .sum()
            })
            .unwrap_or(0);
        println!("  live spool: {:.1} MiB on disk", mib(on_disk));
    }
    for (name, bytes) in &breakdown.rows {
        println!("  {:>8.1} MiB  {name}", mib(*bytes));
    }
    blocks::report();
    time_queries(&store);
    stop().await;
}
