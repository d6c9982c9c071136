"""Throughput of the local backend: N trivial jobs from first submit to all finished.

Run: ``uv run python benchmarks/local_jobs.py [--jobs 200] [--cpus N] [--poll 0.01]``.
Prints one row per submission mode: everything in one ``submit`` call, and one job per
call (as an engine that discovers tasks one by one would submit them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from _emit import Emitter, add_argument

from seqera_core.backends import JobHandle, JobSpec, JobState, LocalBackend

__all__ = ["main"]

Submitter = Callable[[LocalBackend, list[JobSpec]], list[JobHandle]]


def _batch(backend: LocalBackend, specs: list[JobSpec]) -> list[JobHandle]:
    return backend.submit(specs)


def _one_by_one(backend: LocalBackend, specs: list[JobSpec]) -> list[JobHandle]:
    return [handle for spec in specs for handle in backend.submit([spec])]


def _measure(jobs: int, cpus: float | None, poll: float, submit: Submitter) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as logs, LocalBackend(cpus=cpus, work_dir=logs) as backend:
        # Any: base.JobSpec's bare `converter=tuple` leaves mypy an unsolved TypeVar.
        command: Any = ("true",)
        specs = [JobSpec(f"true{i}", command) for i in range(jobs)]
        start = time.perf_counter()
        handles = submit(backend, specs)
        while True:
            statuses = backend.poll(handles)
            if all(status.state.finished for status in statuses):
                break
            time.sleep(poll)
        wall = time.perf_counter() - start
        ok = sum(status.state is JobState.SUCCEEDED for status in statuses)
        return {
            "cpus": f"{backend.capacity_cpus:g}",
            "succeeded": ok,
            "wall s": f"{wall:.2f}",
            "jobs/s": f"{jobs / wall:.0f}",
            "ms/job": f"{1000 * wall / jobs:.1f}",
            "spawn": backend.calls["spawn"],
            "reap": backend.calls["reap"],
            "kill": backend.calls["kill"],
            "sample": backend.calls["sample"],
            "polls": backend.calls["poll"],
        }


def main() -> None:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--cpus", type=float, default=None, help="default: this machine's")
    parser.add_argument("--poll", type=float, default=0.01, help="seconds between polls")
    add_argument(parser)
    args = parser.parse_args()
    emit = Emitter("local_jobs", args.results)
    rows = {
        "one submit": _measure(args.jobs, args.cpus, args.poll, _batch),
        "one per call": _measure(args.jobs, args.cpus, args.poll, _one_by_one),
    }
    for mode, row in rows.items():
        case = {"jobs": args.jobs, "mode": mode, "cpus": row["cpus"], "poll": args.poll}
        emit.figure("wall", float(str(row["wall s"])), "s", **case)
        emit.figure("throughput", float(str(row["jobs/s"])), "jobs/s", **case)
        emit.figure("succeeded", row["succeeded"], "jobs", **case)
        for calls in ("spawn", "reap", "kill", "sample", "polls"):
            emit.figure(f"{calls} calls", row[calls], "calls", **case)
    emit.close()
    columns = ["mode", *next(iter(rows.values()))]
    table = [[mode, *map(str, row.values())] for mode, row in rows.items()]
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(columns)]
    print(f"{args.jobs} x `true` through LocalBackend (python {sys.version.split()[0]})")
    for line in (columns, *table):
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))


if __name__ == "__main__":
    main()
