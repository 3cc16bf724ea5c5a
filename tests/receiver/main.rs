//! Receiving traces: the OTLP/HTTP and OTLP/gRPC receiver's answers, `serve` as a process and
//! under misbehaving clients, `--listen`, remote sources (a `serve` feed, Jaeger), the
//! Collector's file exporter, and the real OpenTelemetry Python SDK as the client.
//!
//! One test binary for the family, so the library is linked once for all of it.

mod jaeger_source;
mod listen_embedded;
mod live_spool_ranges;
mod otlp_collector_files;
#[path = "../common/protobuf_bytes.rs"]
mod protobuf_bytes;
mod receiver_http;
mod receiver_limits;
mod receiver_log_masking;
mod receiver_odd_ids;
mod receiver_python;
mod receiver_serve;
mod remote_hostile;
mod remote_sources;
mod remote_tokens;
mod slow_flood;
mod support;
