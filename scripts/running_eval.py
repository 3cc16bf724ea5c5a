"""Runs an Inspect AI eval of N samples with mockllm into LOG_DIR as an `.eval` log, the way a
user's eval writes it: Inspect's own recorder and default flushing (every 10 samples once N is
30 or more). The samples are the geo task's of tests/fixtures/inspect-ai/gen_inspect_logs.py,
repeated with new ids, so runs pass and fail as there.

Usage: running_eval.py LOG_DIR N  (with the test venv's python)"""

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
        system_message("You are a geography and arithmetic assistant. Always use the tools."),
        use_tools(geo.country_capital(), geo.population(), geo.calculator()),
        generate(),
    ],
    scorer=[geo.includes(), geo.expected_tools()],
    model=get_model(geo.MODEL_NAME, custom_outputs=geo.scripted_model(scripts, "A")),
)
logs = inspect_eval(task, log_format="eval", log_dir=log_dir, fail_on_error=False, display="none")
print(logs[0].location)
