"""Runs an Inspect AI eval of N samples with mockllm into LOG_DIR as an `.eval` log, the way a
user's eval writes it: Inspect's own recorder and default flushing (every 10 samples once N is
30 or more). The samples are the geo task's of tests/fixtures/inspect-ai/gen_inspect_logs.py,
repeated with new ids, so runs pass and fail as there.

With --system-kib K the system prompt is K KiB of instructions (a real agent's prompt is a few
KiB; the geo task's own is one line), so the samples have a realistic size: the log's payloads
then outweigh the TUI's fixed memory, as in a user's eval.

Usage: running_eval.py LOG_DIR N [--system-kib K]  (with the test venv's python)"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests/fixtures/inspect-ai"))

import gen_inspect_logs as geo  # noqa: E402
from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import get_model  # noqa: E402
from inspect_ai.solver import generate, system_message, use_tools  # noqa: E402

log_dir, count = sys.argv[1], int(sys.argv[2])
system_kib = int(sys.argv[sys.argv.index("--system-kib") + 1]) if "--system-kib" in sys.argv else 0
prompt = "You are a geography and arithmetic assistant. Always use the tools."
# Numbered rules in plain words, none repeated, up to the size asked for.
rule_words = ["check", "the", "country", "before", "answering", "and", "cite", "which", "tool",
              "gave", "each", "figure", "round", "populations", "to", "one", "decimal", "place"]
rule = 0
while len(prompt) < system_kib * 1024:
    rule += 1
    words = [rule_words[(rule * 7 + i * 3) % len(rule_words)] for i in range(12 + rule % 9)]
    prompt += f"\n{rule}. " + " ".join(words).capitalize() + "."
samples, scripts = [], {}
for n in range(count):
    sid, question, target, tools = geo.GEO_SAMPLES[n % len(geo.GEO_SAMPLES)]
    new_id = f"{sid}-{n // len(geo.GEO_SAMPLES)}"
    scripts[new_id] = geo.GEO_SCRIPTS["A"][sid]
    samples.append(Sample(id=new_id, input=question, target=target, metadata={"expected_tools": tools}))

task = Task(
    name="geo_tools",
    dataset=samples,
    solver=[
        system_message(prompt),
        use_tools(geo.country_capital(), geo.population(), geo.calculator()),
        generate(),
    ],
    scorer=[geo.includes(), geo.expected_tools()],
    model=get_model(geo.MODEL_NAME, custom_outputs=geo.scripted_model(scripts, "A")),
)
logs = inspect_eval(task, log_format="eval", log_dir=log_dir, fail_on_error=False, display="none")
print(logs[0].location)
