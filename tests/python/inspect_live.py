"""Runs gen_inspect_logs.py's geo task (variant A) with Inspect AI's own recorder into an `.eval`
log, one sample at a time, each sample written to the log as it finishes (log_buffer=1). The
fourth and the last sample's first model calls each wait for a line on FIFO, so until the test
writes one the log on disk is an eval in progress: `_journal/start.json` and the samples so
far (three, then seven), no header.json.

Usage: inspect_live.py LOG_DIR FIFO GENERATOR_DIR
Prints `waiting` each time a sample blocks and `done <log path>` at the end."""

import sys

sys.path.insert(0, sys.argv[3])

import gen_inspect_logs as geo  # noqa: E402
from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import get_model  # noqa: E402
from inspect_ai.solver import generate, system_message, use_tools  # noqa: E402
from inspect_ai.solver._task_state import sample_state  # noqa: E402

log_dir, fifo = sys.argv[1], sys.argv[2]
scripted = geo.scripted_model(geo.GEO_SCRIPTS["A"], "A")
held = {geo.GEO_SAMPLES[3][0], geo.GEO_SAMPLES[-1][0]}


def outputs(input, tools, tool_choice, config):  # noqa: A002 - mockllm's signature
    sample_id = sample_state().sample_id
    if sample_id in held:
        held.discard(sample_id)
        print("waiting", flush=True)
        with open(fifo) as f:
            f.readline()
    return scripted(input, tools, tool_choice, config)


task = Task(
    name="geo_tools",
    dataset=[
        Sample(id=i, input=q, target=t, metadata={"expected_tools": tools})
        for i, q, t, tools in geo.GEO_SAMPLES
    ],
    solver=[
        system_message(
            "You are a geography and arithmetic assistant. Always use the tools "
            "(country_capital, population, calculator) instead of answering from memory."
        ),
        use_tools(geo.country_capital(), geo.population(), geo.calculator()),
        generate(),
    ],
    scorer=[geo.includes(), geo.expected_tools()],
    model=get_model(geo.MODEL_NAME, custom_outputs=outputs),
)
logs = inspect_eval(
    task,
    log_format="eval",
    log_dir=log_dir,
    log_buffer=1,
    max_samples=1,
    fail_on_error=False,
    display="none",
)
print("done", logs[0].location, flush=True)
