"""What a report cannot show, why, and what would show it: one plain sentence each.

A figure that is not measured is said in words, never drawn as 0. Each backend measures
what it can (``DESIGN.md``, "where each backend's usage comes from"); when one did not,
the sentence names what would:

- Slurm: run time, peak memory (MaxRSS) and CPU (TotalCPU) come from ``sacct`` only when
  slurmdbd keeps accounting (``AccountingStorageType=accounting_storage/slurmdbd``,
  ``man slurm.conf``); with accounting but no MaxRSS the job gatherer is off or sampled
  too rarely (``JobAcctGatherType``, ``JobAcctGatherFrequency``).
- PBS Pro and Torque: ``qstat`` forgets a job's ``resources_used`` once it ends.
- ECS: the usage wrapper (``report_usage``) logs the container's cgroup figures.
- a row written before the history kept the backend or CPU time (an older seqera).

The requests themselves (cpus, memory, time limit) are always known and always shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ..history import TaskRecord

__all__ = ["missing"]

_SLURM_OFF = (
    "Slurm accounting (slurmdbd) is off for {n}: enable it "
    "(AccountingStorageType=accounting_storage/slurmdbd in slurm.conf) to see their {what}"
)
_SLURM_GATHER = (
    "Slurm accounting recorded no {what} for {n}: set JobAcctGatherType=jobacct_gather/cgroup "
    "(or linux) and JobAcctGatherFrequency=task=1 in slurm.conf, so short jobs are sampled"
)
_QSTAT = "{backend}'s qstat forgets what a job used once it ends: no {what} for {n}"
_ECS = (
    "the {backend} usage line was not found for {n}: keep report_usage on (the default) and the "
    "awslogs driver, to see their {what}"
)
_OLDER = "no {what} was recorded for {n} (by an older seqera, or an engine that did not say)"
_OTHER = "the {backend} backend did not report {what} for {n}"


def _attempts(count: int, successful: bool = False) -> str:
    kind = "successful attempt" if successful else "attempt"
    return f"{count} {kind}" + ("" if count == 1 else "s")


def _list(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _unmeasured(records: Sequence[TaskRecord]) -> tuple[list[str], int, bool]:
    """What the attempts lack (run time for any; peak and CPU for successful ones), how
    many lack something, and whether those were all successful ones."""
    # a job cancelled before it started has no run time to measure
    untimed = [r for r in records if r.realtime is None and r.cause != "cancelled"]
    done = [r for r in records if r.succeeded]
    no_peak = [r for r in done if r.peak_memory is None]
    no_cpu = [r for r in done if r.cpu_time is None and r.cpu_percent is None]
    what = [name for name, rows in (("run time", untimed), ("peak memory", no_peak),
                                    ("CPU time", no_cpu)) if rows]  # fmt: skip
    lacking = {id(r) for rows in (untimed, no_peak, no_cpu) for r in rows}
    return what, len(lacking), not untimed


def missing(records: Sequence[TaskRecord]) -> tuple[str, ...]:
    """One sentence per backend whose attempts lack a figure: what, how many, and why."""
    by_backend: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in records:
        by_backend[record.backend].append(record)
    sentences = []
    for backend, rows in sorted(by_backend.items()):
        what, count, only_done = _unmeasured(rows)
        if not what:
            continue
        words = {"what": _list(what), "n": _attempts(count, only_done), "backend": backend}
        if backend == "slurm":
            timed = any(r.realtime is not None for r in rows)
            template = _SLURM_GATHER if timed else _SLURM_OFF
        elif backend in ("pbs", "torque"):
            words["backend"] = "PBS Pro" if backend == "pbs" else "Torque"
            template = _QSTAT
        elif backend in ("ecs", "batch"):
            words["backend"] = "ECS" if backend == "ecs" else "AWS Batch"
            template = _ECS
        elif not backend:
            template = _OLDER
        else:
            template = _OTHER
        text = template.format(**words)
        sentences.append(text[0].upper() + text[1:] + ".")
    return tuple(sentences)
