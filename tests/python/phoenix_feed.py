"""Feeds a running Phoenix for tests/tui/phoenix_source.rs: two agent runs through the
OpenTelemetry Python SDK (OTLP/HTTP), the second with a failed tool, then an LLM annotation
"incorrect" on the second run's root span through Phoenix's own client. Prints what it sent,
as JSON, on stdout.

usage: phoenix_feed.py PORT PROJECT
"""

import json
import sys
import time
import urllib.error
import urllib.request

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace import Status, StatusCode
from phoenix.client import Client

port, project = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"
provider = TracerProvider(
    resource=Resource.create({"service.name": "phoenix-test", "openinference.project.name": project})
)
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
tracer = provider.get_tracer("phoenix-feed")

sent = []


def record(span, kind, failed):
    ctx = span.get_span_context()
    sent.append({
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "name": span.name,
        "kind": kind,
        "status": "error" if failed else "unset",
    })


roots = []
for run in range(2):
    with tracer.start_as_current_span("agent run", attributes={"openinference.span.kind": "AGENT"}) as root:
        with tracer.start_as_current_span(
            "llm call", attributes={"openinference.span.kind": "LLM", "llm.model_name": "gpt-test"}
        ) as llm:
            record(llm, "llm", False)
        with tracer.start_as_current_span(
            "lookup", attributes={"openinference.span.kind": "TOOL", "tool.name": "lookup"}
        ) as tool:
            if run == 1:
                tool.set_status(Status(StatusCode.ERROR, "not found"))
            record(tool, "tool", run == 1)
        record(root, "agent", False)
        roots.append(format(root.get_span_context().span_id, "016x"))
if not provider.force_flush(30_000):
    sys.exit("spans were not exported")
provider.shutdown()

# Phoenix acknowledges before it stores: wait until every span is listed, so the annotation
# has its span and the test reads a complete project.
deadline = time.monotonic() + 120
while True:
    url = f"{base}/v1/projects/{project}/spans/otlpv1?limit=100"
    try:
        with urllib.request.urlopen(url) as answer:
            stored = len(json.load(answer)["data"])
    except urllib.error.HTTPError:
        stored = 0  # the project appears with its first stored span
    if stored >= len(sent):
        break
    if time.monotonic() > deadline:
        sys.exit(f"Phoenix stored {stored} of {len(sent)} spans")
    time.sleep(0.2)

client = Client(base_url=base)
client.spans.add_span_annotation(
    span_id=roots[1],
    annotation_name="correctness",
    annotator_kind="LLM",
    label="incorrect",
    score=0.0,
    explanation="called lookup for the wrong city",
    sync=True,
)
json.dump({"spans": sent, "annotated_root": roots[1]}, sys.stdout)
