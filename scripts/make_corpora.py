#!/usr/bin/env python3
"""Builds the two ~100 MB OTLP/JSONL corpora used to compare load speed and memory with jq.

Every OTLP/JSON request in the fixture corpus (tests/fixtures/corpus) is a template. The
templates are repeated with fresh trace and span ids (parent ids follow their span) until the
output reaches the target size. Within one pass over the templates, the requests of one fixture
file share one id map: an SDK exports a trace over several requests (the simple processor
sends each span as it ends), and its spans must keep one trace id and find their parents, as
they do in the fixtures. Files do not share a map (some fixtures repeat another's ids). Written two ways:

  per-request.jsonl  one request per line (the Python SDK's simple processor, one export per run)
  batched.jsonl      ~80 requests merged into one request per line, 400-500 spans per line
                     (the SDK's batch processor, the Collector's file exporter, `serve`'s spool)

Usage: scripts/make_corpora.py OUT_DIR [--mb 100] [--seed 1]
Generated files are never committed; put them outside the repository.
"""

import argparse
import json
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "corpus"
# Spec OTLP/JSON fixtures: one request per line (pretty documents and canonical-JSON
# negatives are left out; they are not what exporters write to JSONL).
TEMPLATE_GLOBS = [
    "otlp-python-sdk/otlp-json/traces.jsonl",
    "otel-genai/*.otlp.jsonl",
    "openarmature/otlp-json/*.jsonl",
]
SPANS_PER_BATCHED_LINE = 450
HEX_ID = re.compile(r'"(traceId|spanId|parentSpanId)":"([0-9a-fA-F]*)"')


def templates():
    found = []
    for pattern in TEMPLATE_GLOBS:
        for path in sorted(FIXTURES.glob(pattern)):
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                request = json.loads(line)
                spans = sum(
                    len(ss.get("spans", []))
                    for rs in request.get("resourceSpans", [])
                    for ss in rs.get("scopeSpans", [])
                )
                if spans == 0:
                    continue
                inner = json.dumps(
                    request["resourceSpans"], separators=(",", ":"), ensure_ascii=False
                )[1:-1]
                found.append((path, inner, spans))
    if not found:
        raise SystemExit(f"no OTLP/JSON templates under {FIXTURES}")
    return found


def with_fresh_ids(inner, rng, fresh):
    def replace(match):
        key, old = match.group(1), match.group(2)
        if not old:
            return match.group(0)
        width = 32 if key == "traceId" else 16
        new = fresh.get((width, old))
        if new is None:
            new = f"{rng.getrandbits(width * 4):0{width}x}"
            fresh[(width, old)] = new
        return f'"{key}":"{new}"'

    return HEX_ID.sub(replace, inner)


def write_corpora(out_dir, target_bytes, seed):
    out_dir.mkdir(parents=True, exist_ok=True)
    pool = templates()
    rng = random.Random(seed)
    per_request = out_dir / "per-request.jsonl"
    batched = out_dir / "batched.jsonl"
    totals = {"requests": 0, "spans": 0, "batched_lines": 0}
    with per_request.open("w", encoding="utf-8") as one, batched.open(
        "w", encoding="utf-8"
    ) as many:
        written = 0
        pending, pending_spans = [], 0
        while written < target_bytes:
            ids_by_file = {}
            for path, inner, spans in pool:
                fresh = with_fresh_ids(inner, rng, ids_by_file.setdefault(path, {}))
                line = '{"resourceSpans":[' + fresh + "]}\n"
                one.write(line)
                written += len(line.encode("utf-8"))
                totals["requests"] += 1
                totals["spans"] += spans
                pending.append(fresh)
                pending_spans += spans
                if pending_spans >= SPANS_PER_BATCHED_LINE:
                    many.write('{"resourceSpans":[' + ",".join(pending) + "]}\n")
                    totals["batched_lines"] += 1
                    pending, pending_spans = [], 0
                if written >= target_bytes:
                    break
        if pending:
            many.write('{"resourceSpans":[' + ",".join(pending) + "]}\n")
            totals["batched_lines"] += 1
    print(
        f"{per_request}: {per_request.stat().st_size} bytes, {totals['requests']} lines\n"
        f"{batched}: {batched.stat().st_size} bytes, {totals['batched_lines']} lines "
        f"(~{totals['requests'] // max(totals['batched_lines'], 1)} requests, "
        f"~{totals['spans'] // max(totals['batched_lines'], 1)} spans per line)\n"
        f"spans: {totals['spans']}, templates: {len(pool)}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--mb", type=float, default=100.0, help="size of each corpus in MB")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    write_corpora(args.out_dir, int(args.mb * 1_000_000), args.seed)


if __name__ == "__main__":
    main()
