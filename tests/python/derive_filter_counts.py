"""Counts for tests/formats/dump_filter.rs, derived by reading the fixture files directly (not by
running toolcap-tui). Run from the repository root: python3 tests/python/derive_filter_counts.py

How the files become invocations (the product's documented mapping, see README "Formats"):
- OTLP JSON: one invocation per traceId; a span failed when status.code == 2; an invocation is
  `error` when its root (no parentSpanId) failed, `degraded` when another span failed.
- arksim simulation + evaluation: one invocation per (conversation, turn) that has an assistant
  message; its tool calls are the assistant's tool_calls; a tool call with `error` failed (the
  turn root itself never fails, so such a turn is `degraded`); the evaluator's verdict is the
  evaluation's turn: label = turn_behavior_failure (failed unless "no failure"), score =
  turn_score, reason = turn_behavior_failure_reason.
- A message log (anthropic, MCP) is one invocation; a tool result with is_error / isError or a
  JSON-RPC error fails that tool call (the run is `degraded`).
"""
import json
from collections import defaultdict

OTLP = "tests/fixtures/corpus/openarmature/otlp-json/payload-on.batch.jsonl"
SIM = "tests/fixtures/corpus/arksim/run-direct/simulation.json"
EVAL = "tests/fixtures/corpus/arksim/run-direct/evaluation.json"
ANTHROPIC = "tests/fixtures/logs/anthropic_is_error.json"
MCP = "tests/fixtures/logs/mcp_ids_and_errors.json"


def attr_value(v):
    (kind, val), = v.items()
    return val


traces = defaultdict(list)
for line in open(OTLP):
    for rs in json.loads(line)["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                sp["attrs"] = {a["key"]: attr_value(a["value"]) for a in sp.get("attributes", [])}
                traces[sp["traceId"]].append(sp)

sim = json.load(open(SIM))
ev = json.load(open(EVAL))
scores = {}
for c in ev["conversations"]:
    for t in c["turn_scores"]:
        scores[(c["conversation_id"], t["turn_id"])] = t
turns = {}  # (conversation, turn) -> dict
for c in sim["conversations"]:
    for m in c["conversation_history"]:
        if m["role"] != "assistant":
            continue
        key = (c["conversation_id"], m["turn_id"])
        turn = turns.setdefault(key, {"scenario": c["scenario_id"], "calls": [], "texts": []})
        turn["calls"].extend(m.get("tool_calls") or [])
    for m in c["conversation_history"]:
        key = (c["conversation_id"], m["turn_id"])
        if key in turns:
            turns[key]["texts"].append(m.get("content") or "")

anthropic = json.load(open(ANTHROPIC))
mcp = json.load(open(MCP))

total = len(traces) + len(turns) + 2
print("all", total)


def otlp_failed(sp):
    return sp.get("status", {}).get("code") == 2


def otlp_root(spans):
    return next(sp for sp in spans if not sp.get("parentSpanId"))


def count(name, n):
    print(f"{name:45} {n}")


# error text: OTLP status messages, arksim tool-call errors
count('"quote service timed out"', sum(
    any("quote service timed out" in sp.get("status", {}).get("message", "").lower() for sp in s)
    for s in traces.values()))
count('"(non-fatal)"', sum(
    any("(non-fatal)" in (c.get("error") or "").lower() for c in t["calls"]) for t in turns.values()))
# status facets
count("is:error", sum(otlp_failed(otlp_root(s)) for s in traces.values()))
deg_otlp = sum(any(otlp_failed(sp) for sp in s) and not otlp_failed(otlp_root(s)) for s in traces.values())
deg_arksim = sum(any(c.get("error") for c in t["calls"]) for t in turns.values())
deg_anthropic = any(b.get("is_error") for m in anthropic if isinstance(m["content"], list) for b in m["content"])
deg_mcp = any("error" in r and r["error"] for r in mcp) or any(r.get("result", {}) and r["result"].get("isError") for r in mcp)
count("is:degraded", deg_otlp + deg_arksim + deg_anthropic + deg_mcp)
failed_label = lambda t: t.get("turn_behavior_failure", "").strip().lower() not in ("", "no failure", "skipped_good_performance")
count("is:eval-failed", sum(failed_label(scores[k]) for k in turns if k in scores))
count("score<3", sum(scores[k]["turn_score"] < 3 for k in turns if k in scores))
count('"disobey user request"', sum(
    "disobey user request" in (scores[k].get("turn_behavior_failure") or "") for k in turns if k in scores))
# fields
count("tool:get_stock_price", sum(any(sp["attrs"].get("openarmature.tool.name") == "get_stock_price" for sp in s) for s in traces.values()))
count("tool:lookup_order", sum(any(c["name"] == "lookup_order" for c in t["calls"]) for t in turns.values()))
count("model:mock-gpt", sum(any("mock-gpt" in str(sp["attrs"].get("gen_ai.request.model", "")) for sp in s) for s in traces.values()))
count("provider:vllm", sum(any(sp["attrs"].get("gen_ai.system") == "vllm" for sp in s) for s in traces.values()))
count("model:claude (anthropic log has model claude-sonnet-4-5)", int(any("claude" in m.get("model", "") for m in anthropic)))
count("name:ask_bad_model", sum(any(sp["name"] == "ask_bad_model" for sp in s) for s in traces.values()))
count("attr:openarmature.error.category=node_exception", sum(any(sp["attrs"].get("openarmature.error.category") == "node_exception" for sp in s) for s in traces.values()))
count("attr:openarmature.llm.retry_reason", sum(any("openarmature.llm.retry_reason" in sp["attrs"] for sp in s) for s in traces.values()))
count("id:84e5", sum(t.startswith("84e5") for t in traces))
count("id:call_weather", sum(any(sp["attrs"].get("openarmature.tool.call.id", "").startswith("call_weather") for sp in s) for s in traces.values()))
count("conv:8f9099c6", sum(k[0].startswith("8f9099c6") for k in turns))
count("format:mcp", 1)
tool_counts = [sum(any(sp["attrs"].get("openarmature.tool.name") is not None for _ in [0]) for sp in s) for s in traces.values()]
tool_counts += [len(t["calls"]) for t in turns.values()]
tool_counts += [sum(1 for m in anthropic if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use")]
tool_counts += [sum(1 for r in mcp if r.get("method") == "tools/call")]
count("tools>1", sum(n > 1 for n in tool_counts))
count("spans>5 format:otlp", sum(len(s) > 5 for s in traces.values()))
tok = lambda s: sum(int(sp["attrs"].get("gen_ai.usage.input_tokens", 0)) + int(sp["attrs"].get("gen_ai.usage.output_tokens", 0)) for sp in s)
count("tokens>=500 (anthropic log: 120+40)", sum(tok(s) >= 500 for s in traces.values()) + (160 >= 500))
dur = lambda s: (max(int(sp["endTimeUnixNano"]) for sp in s) - min(int(sp["startTimeUnixNano"]) for sp in s)) / 1e6
count("dur>50ms format:otlp", sum(dur(s) > 50 for s in traces.values()))
# operators
count("tool:get_stock_price -is:error", sum(
    any(sp["attrs"].get("openarmature.tool.name") == "get_stock_price" for sp in s) and not otlp_failed(otlp_root(s))
    for s in traces.values()))
count("provider:vllm | model:claude", 1 + 1)
count("(format:mcp OR format:anthropic) is:degraded", int(deg_mcp) + int(deg_anthropic))
# text only in tool arguments: "select 1" is the MCP slow_query argument and nowhere else
whole = "".join(open(p).read() for p in (OTLP, SIM, EVAL, ANTHROPIC))
assert "select 1" not in whole.lower()
count('"select 1" (redacted)', 0)
count('"select 1" --reveal', sum("select 1" in json.dumps(r.get("params", {}).get("arguments")) for r in mcp if r.get("method") == "tools/call"))
# arksim argument values (not in any error message)
count('"ORD-9999" (redacted)', 0)
count('"ORD-9999" --reveal', sum("ORD-9999" in json.dumps(t["calls"]) + " ".join(t["texts"]) for t in turns.values()))
