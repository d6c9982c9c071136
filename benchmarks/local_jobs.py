"""Throughput of the local backend: N trivial jobs from first submit to all finished.

Run: ``uv run python benchmarks/local_jobs.py [--jobs 200] [--cpus N] [--poll 0.01]``.
Prints one row per submission mode: everything in one ``submit`` call, and one job per
call (as an engine that discovers tasks one by one would submit them).

``--forks ROUNDS``: instead, what re-adoption (``state``) costs the fork server. N
``python -m JOB`` jobs of a module that imports what an engine would (``seqera_core``'s
session, attrs, yaml) run four ways: new processes or forks of a server that preloaded
the module, each with and without a ``state`` directory (processes with state: each in
its ``sh`` wrapper; forks with state: the server and the job write the records). The
four run in turn, ROUNDS times, each after its server is ready; printed: the median
(min, max) wall per job and the jobs' CPU seconds per job (their own rusage, as polled).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
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


# What an engine's job imports before it does anything (Snakemake's is heavier still).
_JOB = """
import attrs, yaml
import seqera_core.session


def warm():
    pass
"""
_MODES = {  # mode -> (forked, state)
    "process": (False, False),
    "process + state": (False, True),
    "fork": (True, False),
    "fork + state": (True, True),
}


def _fork_round(mode: str, jobs: int, cpus: float | None, root: Path) -> tuple[float, float, int]:
    forked, with_state = _MODES[mode]
    work = Path(tempfile.mkdtemp(dir=root))
    backend = LocalBackend(cpus=cpus, work_dir=work / "logs",
                           state=work / "state" if with_state else None,
                           preload=["seqera_bench_job:warm"] if forked else ())  # fmt: skip
    with backend:
        # Any: base.JobSpec's bare `converter=tuple` leaves mypy an unsolved TypeVar.
        command: Any = (sys.executable, "-m", "seqera_bench_job")
        first = backend.submit([JobSpec("warm-up", command)])  # waits for the preload
        while not backend.poll(first)[0].state.finished:
            backend.wait(first, 0.5)
        specs = [JobSpec(f"job{i}", command) for i in range(jobs)]
        start = time.perf_counter()
        handles = backend.submit(specs)
        while not all((statuses := backend.poll(handles))[i].state.finished
                      for i in range(jobs)):  # fmt: skip
            backend.wait(handles, 0.05)
        wall = time.perf_counter() - start
        failed = [s for s in statuses if s.state is not JobState.SUCCEEDED]
        if failed:
            sys.exit(f"{mode}: {failed[0]}")
        cpu = sum(s.cpu_seconds or 0.0 for s in statuses)
        return wall, cpu, backend.calls["fork"] - (1 if forked else 0)


def _forks(args: argparse.Namespace) -> None:
    figures: dict[str, dict[str, list[float]]] = {mode: {} for mode in _MODES}
    # the same four modes in turn each round: a drift of the machine's load moves them all
    with tempfile.TemporaryDirectory(prefix="seqera-bench-") as tmp:
        root = Path(tmp)
        (root / "seqera_bench_job.py").write_text(_JOB)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [tmp, os.environ.get(
            "PYTHONPATH")]))  # fmt: skip
        for _ in range(args.forks):
            for mode in _MODES:
                wall, cpu, forks = _fork_round(mode, args.jobs, args.cpus, root)
                figures[mode].setdefault("ms/job", []).append(1000 * wall / args.jobs)
                figures[mode].setdefault("cpu ms/job", []).append(1000 * cpu / args.jobs)
                figures[mode].setdefault("forks", []).append(forks)
    emit = Emitter("local_jobs", args.results)
    print(f"{args.jobs} x `python -m JOB` through LocalBackend, {args.forks} rounds, "
          f"load {os.getloadavg()[0]:.1f} (python {sys.version.split()[0]})")  # fmt: skip
    print(f"{'mode':>16}  {'ms/job median (min-max)':>26}  {'cpu ms/job median':>18}  forks")
    for mode, values in figures.items():
        walls, cpus = values["ms/job"], values["cpu ms/job"]
        case = {"jobs": args.jobs, "mode": mode, "rounds": args.forks}
        emit.figure("ms per job", round(statistics.median(walls), 2), "ms", **case)
        emit.figure("job cpu ms per job", round(statistics.median(cpus), 2), "ms", **case)
        spread = f"{statistics.median(walls):.1f} ({min(walls):.1f}-{max(walls):.1f})"
        print(f"{mode:>16}  {spread:>26}  {statistics.median(cpus):>18.1f}  "
              f"{int(statistics.median(values['forks']))}")  # fmt: skip
    emit.close()


def main() -> None:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--cpus", type=float, default=None, help="default: this machine's")
    parser.add_argument("--poll", type=float, default=0.01, help="seconds between polls")
    parser.add_argument("--forks", type=int, default=0, metavar="ROUNDS",
                        help="measure the fork server with and without state instead")  # fmt: skip
    add_argument(parser)
    args = parser.parse_args()
    if args.forks:
        _forks(args)
        return
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
