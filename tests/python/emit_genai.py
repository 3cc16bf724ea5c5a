"""Emit GenAI agent traces with the real OpenTelemetry Python SDK and its OTLP exporters.

Used by tests/receiver/receiver_python.rs against a spawned `toolcap-tui serve`. Every span the
SDK ends is recorded (trace id, span id, mode) in --ids-out; the exit code is non-zero when any
export did not report SUCCESS, so the Rust test can tell "not sent" from "lost".

Modes: http (protobuf), http-gzip (protobuf, Content-Encoding: gzip), grpc (gzip).
--bench prints spans/s for the http mode instead of the GenAI mix.
"""

import argparse
import json
import sys
import time

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode

PROVIDERS = [
    ("openai", "gpt-4o", "text-embedding-3-small"),
    ("anthropic", "claude-sonnet-4-5", None),
    ("aws.bedrock", "anthropic.claude-3-5-haiku", "amazon.titan-embed-text-v2"),
]
TOOLS = ["web_search", "read_file", "run_sql", "get_weather"]


class RecordingProcessor(SpanProcessor):
    """Remembers every ended span's ids, before export, so losses are detectable."""

    def __init__(self, mode, sink):
        self.mode = mode
        self.sink = sink

    def on_end(self, span):
        ctx = span.get_span_context()
        self.sink.append(
            {"mode": self.mode, "trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}
        )


class CheckedExporter(SpanExporter):
    """Delegates to the OTLP exporter and counts results that were not SUCCESS."""

    def __init__(self, inner):
        self.inner = inner
        self.failures = 0
        self.exports = 0
        self.seconds = 0.0

    def export(self, spans):
        started = time.perf_counter()
        result = self.inner.export(spans)
        self.seconds += time.perf_counter() - started
        self.exports += 1
        if result != SpanExportResult.SUCCESS:
            self.failures += 1
        return result

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis=30000):
        return self.inner.force_flush(timeout_millis)


def make_exporter(mode, args):
    headers = {"authorization": f"Bearer {args.token}"} if args.token else None
    if mode in ("http", "http-gzip"):
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        compression = Compression.Gzip if mode == "http-gzip" else Compression.NoCompression
        return OTLPSpanExporter(
            endpoint=args.http_endpoint, compression=compression, headers=headers, timeout=30
        )
    if mode == "grpc":
        from grpc import Compression as GrpcCompression
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        return GrpcSpanExporter(
            endpoint=args.grpc_endpoint,
            insecure=True,
            compression=GrpcCompression.Gzip,
            headers=headers,
            timeout=30,
        )
    raise SystemExit(f"unknown mode {mode}")


def emit_trace(tracer, index):
    provider, model, embedding_model = PROVIDERS[index % len(PROVIDERS)]
    tool = TOOLS[index % len(TOOLS)]
    with tracer.start_as_current_span(
        "invoke_agent research-assistant",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "research-assistant",
            "gen_ai.provider.name": provider,
            "gen_ai.conversation.id": f"conv-{index}",
        },
    ):
        if embedding_model:
            with tracer.start_as_current_span(
                f"embeddings {embedding_model}",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": provider,
                    "gen_ai.request.model": embedding_model,
                    "gen_ai.usage.input_tokens": 12 + index % 7,
                },
            ):
                pass
        with tracer.start_as_current_span(
            "retrieval",
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": "kb-main",
                "gen_ai.retrieval.query.text": f"question number {index}: what changed in Q3?",
                "gen_ai.request.top_k": 3,
            },
        ):
            pass
        for turn, finish in enumerate(["tool_calls", "stop"]):
            with tracer.start_as_current_span(
                f"chat {model}",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": provider,
                    "gen_ai.request.model": model,
                    "gen_ai.response.model": model,
                    "gen_ai.response.finish_reasons": [finish],
                    "gen_ai.usage.input_tokens": 300 + 40 * turn + index % 11,
                    "gen_ai.usage.output_tokens": 25 + index % 5,
                    "gen_ai.request.temperature": 0.2,
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": f"Frage {index} – ü"}]}]
                    ),
                },
            ):
                pass
        with tracer.start_as_current_span(
            f"execute_tool {tool}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": f"call_{index}_ok",
                "gen_ai.tool.call.arguments": json.dumps({"q": index}),
            },
        ) as span:
            span.set_status(Status(StatusCode.OK))
        with tracer.start_as_current_span(
            f"execute_tool {tool}",
            record_exception=False,
            set_status_on_exception=False,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": f"call_{index}_err",
                "error.type": "TimeoutError",
            },
        ) as span:
            span.record_exception(TimeoutError(f"tool {tool} timed out after 30 s"))
            span.set_status(Status(StatusCode.ERROR, f"tool {tool} timed out"))


def run_mode(mode, traces, args, recorded):
    exporter = CheckedExporter(make_exporter(mode, args))
    provider = TracerProvider(
        resource=Resource.create({"service.name": "toolcap-receiver-test", "test.mode": mode})
    )
    provider.add_span_processor(RecordingProcessor(mode, recorded))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=1 << 16, max_export_batch_size=args.batch)
    )
    tracer = provider.get_tracer("toolcap.tests.emit_genai", "0.1.0")
    started = time.perf_counter()
    for index in range(traces):
        emit_trace(tracer, index)
    flushed = provider.force_flush(timeout_millis=120_000)
    elapsed = time.perf_counter() - started
    provider.shutdown()
    return exporter, flushed, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http-endpoint", help="http://127.0.0.1:PORT/v1/traces")
    parser.add_argument("--grpc-endpoint", help="127.0.0.1:PORT")
    parser.add_argument("--modes", default="http,http-gzip,grpc")
    parser.add_argument("--traces-per-mode", type=int, default=80)
    parser.add_argument("--batch", type=int, default=512, help="spans per export request")
    parser.add_argument("--token")
    parser.add_argument("--ids-out", required=True, help="JSON lines: mode, trace_id, span_id")
    args = parser.parse_args()

    recorded = []
    failed = False
    for mode in args.modes.split(","):
        exporter, flushed, elapsed = run_mode(mode, args.traces_per_mode, args, recorded)
        spans = sum(1 for r in recorded if r["mode"] == mode)
        print(
            f"{mode}: {args.traces_per_mode} traces, {spans} spans, {exporter.exports} exports, "
            f"{exporter.failures} failed, flushed={flushed}, {elapsed:.2f} s, {spans / elapsed:.0f} spans/s "
            f"(exporting {exporter.seconds:.2f} s: {spans / max(exporter.seconds, 1e-9):.0f} spans/s)",
            flush=True,
        )
        failed |= exporter.failures > 0 or not flushed
    with open(args.ids_out, "w", encoding="utf-8") as out:
        for record in recorded:
            out.write(json.dumps(record) + "\n")
    if failed:
        print("some exports failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
