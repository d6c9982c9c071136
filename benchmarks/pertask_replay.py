"""A weblog replay of Nextflow traces through a real sidecar, asking per task as the
``config --per-task`` closures do, against ``seqera-sidecar evaluate`` on the same split.

``uv run python benchmarks/pertask_replay.py TRACE.csv [TRACE.csv ...] [--seed N]
[--order weblog-first|retry-first]``: for each trace, the evaluation protocol's split
(:func:`seqera_sidecar.evaluate.split`: 30 % history, 70 % online, one seeded order) is
replayed twice:

- in process, as ``seqera-sidecar evaluate --predictor predictive`` does (a
  ``PredictiveResolver`` over an in-memory history), noting every allocation;
- over HTTP: a fresh ``seqera-sidecar serve`` (empty history, no seqera config) is sent
  the history as ``process_completed`` weblog events, then each online task asks
  ``POST /v1/resources/resolve`` with what the closure sends (process, attempt, declared
  cpus/memory/time, input bytes; on a retry the exit status and what the attempt before
  was given, in ``extra``), runs with the answer as evaluate would (a peak above the
  allocation is an exit 137), and is reported as a weblog event.

The history is sent to one sidecar, which is then restarted on it (a next run's sidecar;
``--no-restart`` keeps the first: its models are then first fitted when first asked,
after some online tasks, where evaluate fits them when it builds its resolver).
``--order retry-first`` (the default) asks for a retry before its failed attempt's event
is posted, as Nextflow does (``TaskPollingMonitor.finalizeTask`` submits the retry, then
notifies the weblog); ``weblog-first`` posts the event first. It prints, per trace, the
attempts compared, how many allocations differ, both GB-h wasted, and the requests made.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from seqera_core.history import TaskRecord, open_history
from seqera_core.resolvers import PredictiveResolver
from seqera_sidecar.evaluate import MAX_ATTEMPTS, split
from seqera_sidecar.trace import read_trace

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.seqera_sidecar.conftest import start_sidecar, stop_sidecar  # the tests' launcher

__all__ = ["main"]

_GBH = 1e9 * 3600
Allocation = tuple[str, int, int]  # task id, attempt, memory bytes


def _in_process(records: list[TaskRecord], seed: int) -> tuple[list[Allocation], float]:
    """evaluate()'s loop (predictive), noting each allocation."""
    import attrs

    from seqera_sidecar.evaluate import _request

    past, online = split(records, seed)
    history = open_history(":memory:")
    history.record(past)
    resolver = PredictiveResolver(history)
    given, wasted = [], 0.0
    for task in online:
        peak, seconds = task.peak_memory or 0, task.realtime or 0.0
        for attempt in range(1, MAX_ATTEMPTS + 1):
            answer = resolver.resolve(_request(task, attempt))
            allocation = (task.memory or peak) if answer is None else answer.memory
            given.append((task.task_id, attempt, allocation))
            ok = allocation >= peak
            wasted += (allocation - peak if ok else allocation) * seconds
            outcome = attrs.evolve(task, attempt=attempt, memory=allocation, succeeded=ok,
                                   out_of_memory=not ok)  # fmt: skip
            if not ok:
                outcome = attrs.evolve(outcome, peak_memory=None, realtime=None)
            history.record([outcome])
            if ok:
                break
    history.close()
    return given, wasted / _GBH


def _event(task: TaskRecord, attempt: int, memory: int, ok: bool) -> dict[str, Any]:
    """The weblog's process_completed event for one attempt (Nextflow's TraceRecord units)."""
    trace: dict[str, Any] = {"task_id": task.task_id, "process": task.process,
                             "status": "COMPLETED" if ok else "FAILED",
                             "exit": 0 if ok else 137, "attempt": attempt,
                             "memory": memory}  # fmt: skip
    if task.cpus is not None:
        trace["cpus"] = task.cpus
    if task.time:
        trace["time"] = task.time * 1000
    if task.input_bytes is not None:
        trace["rchar"] = task.input_bytes
    if task.cpu_percent is not None:
        trace["%cpu"] = task.cpu_percent
    if task.container:
        trace["container"] = task.container
    if ok:
        trace["peak_rss"] = task.peak_memory
        trace["realtime"] = round((task.realtime or 0) * 1000)  # whole ms, as traced
    return {"runName": "replay", "runId": task.run_id, "event": "process_completed",
            "utcTime": "2026-11-27T00:00:00Z", "trace": trace}  # fmt: skip


def _question(task: TaskRecord, attempt: int, before: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"process": task.process, "attempt": attempt}
    if task.cpus is not None:
        body["cpus"] = task.cpus
    if task.memory:
        body["memory_bytes"] = task.memory
    if task.time:
        body["time_seconds"] = task.time
    if task.input_bytes is not None:
        body["input_bytes"] = task.input_bytes
    if task.container:
        body["container_image"] = task.container
    if before is not None:
        body["extra"] = {"nextflow.exit_status": "137",
                         "nextflow.previous_memory_bytes": str(before)}  # fmt: skip
    return body


def _over_http(
    records: list[TaskRecord], seed: int, order: str, home: Path, restart: bool = True
) -> tuple[list[Allocation], float, int]:
    past, online = split(records, seed)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEQERA_")}
    environ["HOME"] = str(home)  # no user seqera config
    process, served = start_sidecar(home / "history.db", None, cwd=home, environ=environ)
    given, wasted, requests = [], 0.0, 0
    try:
        with httpx.Client(base_url=served.url, timeout=60) as client:
            for start in range(0, len(past), 500):
                batch = past[start : start + 500]
                events = [_event(t, t.attempt, t.memory or 0, True) for t in batch]
                assert client.post("/v1/weblog", json=events).status_code == 202
                requests += 1
        if restart:  # the next run's sidecar starts on that history, as evaluate's resolver
            stop_sidecar(process)
            process, served = start_sidecar(home / "history.db", None, cwd=home, environ=environ)
        with httpx.Client(base_url=served.url, timeout=60) as client:
            for task in online:
                peak, seconds = task.peak_memory or 0, task.realtime or 0.0
                failed: dict[str, Any] | None = None
                before = None
                for attempt in range(1, MAX_ATTEMPTS + 1):
                    answer = client.post("/v1/resources/resolve",
                                         json=_question(task, attempt, before))  # fmt: skip
                    requests += 1
                    if failed is not None:  # retry-first: the failure reaches it now
                        assert client.post("/v1/weblog", json=failed).status_code == 202
                        requests += 1
                    allocation = (task.memory or peak) if answer.status_code == 204 else (
                        answer.json()["memory_bytes"])  # fmt: skip
                    given.append((task.task_id, attempt, allocation))
                    ok = allocation >= peak
                    wasted += (allocation - peak if ok else allocation) * seconds
                    event = _event(task, attempt, allocation, ok)
                    if ok or order == "weblog-first":
                        assert client.post("/v1/weblog", json=event).status_code == 202
                        requests += 1
                        failed = None
                    else:
                        failed = event
                    if ok:
                        break
                    before = allocation
    finally:
        stop_sidecar(process)
    return given, wasted / _GBH, requests


def main(argv: list[str] | None = None) -> int:
    """Replay each trace both ways and print how they compare."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--order", choices=("retry-first", "weblog-first"), default="retry-first")
    parser.add_argument("--no-restart", dest="restart", action="store_false",
                        help="send the history to the sidecar that then answers the online "
                        "tasks (default: restart it on that history first, as a next run "
                        "would find it and as evaluate builds its resolver)")  # fmt: skip
    args = parser.parse_args(argv)
    print("| trace | attempts | differing | evaluate GB-h wasted | sidecar GB-h wasted | "
          "requests | wall s |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for path in args.traces:
        records = read_trace(path)
        reference, evaluated = _in_process(records, args.seed)
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as home:
            replayed, served, requests = _over_http(records, args.seed, args.order, Path(home),
                                                    args.restart)  # fmt: skip
        wall = time.monotonic() - started
        differing = sum(a != b for a, b in zip(reference, replayed, strict=False))
        differing += abs(len(reference) - len(replayed))
        print(f"| {Path(path).name} | {len(reference)} | {differing} | {evaluated:.2f} | "
              f"{served:.2f} | {requests} | {wall:.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
