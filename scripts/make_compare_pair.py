#!/usr/bin/env python3
"""Writes two OTLP/JSON-lines runs of the same 10,000 cases for timing `compare`:
OUT_DIR/run-1.otlp.jsonl and run-2.otlp.jsonl, one trace per case (a root and four tool spans),
each root carrying `dataset.example.id`, fresh trace ids per run, about 10% of roots failing in
run 1 and 12% in run 2 (seeded, so the classes are the same every time). With REPEATS above 1,
each example runs REPEATS times in a row (its repeats, which make some examples flaky).

    python3 scripts/make_compare_pair.py OUT_DIR [CASES] [REPEATS]
    target/release/toolcap-tui compare --json --key attr:dataset.example.id \\
        OUT_DIR/run-1.otlp.jsonl OUT_DIR/run-2.otlp.jsonl > /dev/null
"""
import json
import os
import random
import sys


def attr(key, value):
    return {"key": key, "value": {"stringValue": value}}


def main():
    out = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    os.makedirs(out, exist_ok=True)
    random.seed(7)
    start = 1_764_496_800_000_000_000
    for run, failing in ((1, 0.10), (2, 0.12)):
        with open(os.path.join(out, f"run-{run}.otlp.jsonl"), "w") as f:
            for n in range(cases):
                trace = f"{run:02x}{n:030x}"
                t = start + n * 1000
                spans = [{
                    "traceId": trace, "spanId": f"{1:016x}", "name": "invoke_agent",
                    "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 500),
                    "attributes": [attr("dataset.example.id", f"ex-{n // repeats}")],
                    "status": {"code": 2 if random.random() < failing else 1},
                }]
                for k in range(4):
                    spans.append({
                        "traceId": trace, "spanId": f"{k + 2:016x}", "parentSpanId": f"{1:016x}",
                        "name": f"execute_tool t{k}",
                        "startTimeUnixNano": str(t + k), "endTimeUnixNano": str(t + k + 10),
                        "attributes": [attr("gen_ai.operation.name", "execute_tool"),
                                       attr("gen_ai.tool.name", f"t{k}")],
                        "status": {"code": 1},
                    })
                request = {"resourceSpans": [{
                    "resource": {"attributes": [attr("service.name", "agent")]},
                    "scopeSpans": [{"spans": spans}],
                }]}
                f.write(json.dumps(request) + "\n")


if __name__ == "__main__":
    main()
