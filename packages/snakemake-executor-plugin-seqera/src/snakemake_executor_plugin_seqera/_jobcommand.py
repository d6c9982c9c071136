"""What a Snakemake job becomes on a backend: its argv, its image, its one-line summary."""

from __future__ import annotations

import shlex
from importlib import metadata

from seqera_core.pipeline import Prepared
from seqera_core.units import format_bytes, format_seconds

__all__ = ["command", "describe", "snakemake_image"]


# Shell syntax that makes a job command more than one program's argv.
_SHELL = frozenset({"&&", "||", ";", "|", "&", ">", ">>", "<", "(", ")"})


def command(text: str, *, squashed: bool) -> tuple[str, ...]:
    """The job's argv: Snakemake's command line through a shell, or as the argv itself
    where a squashed allocation can start it as a fork (``python -m snakemake ...``)."""
    if squashed:
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = []
        if argv[1:3] == ["-m", "snakemake"] and not _SHELL & set(argv):
            return tuple(_one_job_scheduler(argv))
    return ("/bin/sh", "-c", text)


def _one_job_scheduler(argv: list[str]) -> list[str]:
    # A job process runs the one job (or group) it was handed, yet Snakemake's ILP
    # scheduler still starts a CBC solver process to choose it (snakemake/scheduling/
    # milp.py, select_jobs); the greedy one chooses the same in-process. Measured on a
    # forked squashed job: 0.051 s of CPU with ilp, 0.045 s with greedy.
    for n, arg in enumerate(argv[:-1]):
        if arg == "--scheduler" and argv[n + 1] == "ilp":
            return [*argv[: n + 1], "greedy", *argv[n + 2 :]]
    return argv


def snakemake_image() -> str:
    # The job runs this same Snakemake inside the container.
    try:
        return f"snakemake/snakemake:v{metadata.version('snakemake')}"
    except metadata.PackageNotFoundError:
        return "snakemake/snakemake:latest"


def describe(prepared: Prepared) -> str:
    request = prepared.request
    parts = [f"cpus={request.cpus:g}" if request.cpus else ""]
    if request.memory:
        parts.append(f"memory={format_bytes(request.memory)}")
    if request.time:
        parts.append(f"time={format_seconds(request.time)}")
    if request.queue:
        parts.append(f"queue={request.queue}")
    return " ".join(p for p in parts if p)
