"""N trivial jobs through the Slurm backend (and the local one): wall time and native calls.

Run as root on a machine where the project's Slurm recipe works:
``uv run python benchmarks/slurm_jobs.py [--jobs 200] [--poll 1] [--cpus 32]``.
Without ``SLURM_CONF`` in the environment it starts a throw-away one-node cluster with
tests/integration/slurm/slurm-up.sh (advertising ``--cpus`` CPUs, on ports of its own) and
stops it at the end; with ``SLURM_CONF`` set it uses that cluster.

Wall time runs from the first submit to the poll that sees every job finished; "status
calls" are the ``squeue`` and ``sacct`` runs (Slurm) that polling took.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _emit import Emitter, add_argument

from seqera_core.backends import Backend, JobSpec, JobState, SlurmBackend

__all__ = ["main"]

SCRIPT = Path(__file__).parents[1] / "tests" / "integration" / "slurm" / "slurm-up.sh"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def _cluster(cpus: int) -> Iterator[dict[str, str]]:
    if os.environ.get("SLURM_CONF"):
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="slurm-bench-") as directory:
        env = {
            **os.environ,
            "SLURM_DIR": directory,
            "SLURM_CPUS": str(cpus),
            "SLURMCTLD_PORT": str(_free_port()),
            "SLURMD_PORT": str(_free_port()),
        }
        try:
            subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True)
            yield {"SLURM_CONF": f"{directory}/slurm.conf"}
        finally:
            subprocess.run(["bash", str(SCRIPT), "down"], env=env, check=False)


def _measure(backend: Backend, jobs: int, poll: float) -> dict[str, Any]:
    command: Any = ("true",)  # Any: base.JobSpec's bare converter=tuple confuses mypy
    specs = [JobSpec(f"true{i}", command) for i in range(jobs)]
    start = time.perf_counter()
    handles = backend.submit(specs)
    submitted = time.perf_counter() - start
    polls = 0
    while True:
        statuses = backend.poll(handles)
        polls += 1
        if all(status.state.finished for status in statuses):
            break
        time.sleep(poll)
    wall = time.perf_counter() - start
    calls = backend.calls
    return {
        "backend": backend.name,
        "succeeded": sum(status.state is JobState.SUCCEEDED for status in statuses),
        "submit s": f"{submitted:.1f}",
        "wall s": f"{wall:.1f}",
        "jobs/s": f"{jobs / wall:.1f}",
        "polls": polls,
        "submit calls": calls.get("sbatch", "-"),
        "status calls": calls["squeue"] + calls["sacct"] if "squeue" in calls else "-",
    }


def _table(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    lines = ["  ".join(c.rjust(widths[c]) for c in columns)]
    lines += ["  ".join(str(r[c]).rjust(widths[c]) for c in columns) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between polls")
    parser.add_argument("--cpus", type=int, default=32, help="CPUs the started cluster advertises")
    add_argument(parser)
    args = parser.parse_args(argv)
    emit = Emitter("slurm_jobs", args.results)
    rows = []
    with _cluster(args.cpus) as env, tempfile.TemporaryDirectory() as work:
        rows.append(_measure(SlurmBackend(work_dir=work, env=env), args.jobs, args.poll))
    try:
        from seqera_core.backends import LocalBackend
    except ImportError:
        print("(no local backend to compare with)", file=sys.stderr)
    else:
        with tempfile.TemporaryDirectory() as logs, LocalBackend(work_dir=logs) as local:
            rows.append(_measure(local, args.jobs, min(args.poll, 0.05)))
    print(_table(rows))
    for row in rows:
        case = {"backend": row["backend"], "jobs": args.jobs, "poll": args.poll, "cpus": args.cpus}
        emit.figure("wall", float(row["wall s"]), "s", **case)
        emit.figure("submit wall", float(row["submit s"]), "s", **case)
        emit.figure("throughput", float(row["jobs/s"]), "jobs/s", **case)
        emit.figure("succeeded", row["succeeded"], "jobs", **case)
        emit.figure("polls", row["polls"], "polls", **case)
        for name in ("submit calls", "status calls"):
            if row[name] != "-":
                emit.figure(name, row[name], "calls", **case)
    emit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
