"""What Inspect AI itself reads from its logs, as JSON on stdout: for every log given, every
sample's id, epoch, error, scorer values and tool calls (error type, failed, timing), read with
inspect_ai.log.read_eval_log. The tests hold toolcap-tui's `dump --json` against it."""

import json
import sys
from datetime import datetime, timedelta, timezone

from inspect_ai.log import read_eval_log

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment):
    """Microseconds since the epoch, exactly (no float rounding)."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return (moment - EPOCH) // _MICROSECOND


def sample_truth(sample):
    tools = []
    for event in sample.events:
        if event.event != "tool":
            continue
        tools.append(
            {
                "id": event.id,
                "function": event.function,
                "error_type": event.error.type if event.error else None,
                "failed": bool(event.failed),
                "start_us": micros(event.timestamp),
                "end_us": micros(event.completed),
            }
        )
    models = [e for e in sample.events if e.event == "model"]
    return {
        "id": str(sample.id),
        "epoch": sample.epoch,
        "error": sample.error.message if sample.error else None,
        "scores": {name: score.value for name, score in (sample.scores or {}).items()},
        "tools": tools,
        "model_calls": len(models),
        "input_tokens": sum(m.output.usage.input_tokens for m in models if m.output.usage),
        "started_us": micros(sample.started_at),
        "completed_us": micros(sample.completed_at),
        "limit": sample.limit.type if sample.limit else None,
        "limit_reason": sample.limit.reason if sample.limit else None,
        "target": sample.target,
        "input": sample.input if isinstance(sample.input, str) else None,
        "completion": sample.output.completion if sample.output else "",
    }


def main():
    out = []
    for path in sys.argv[1:]:
        log = read_eval_log(path)
        out.append(
            {
                "file": path,
                "status": log.status,
                "task": log.eval.task,
                "samples": [sample_truth(s) for s in log.samples or []],
            }
        )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
