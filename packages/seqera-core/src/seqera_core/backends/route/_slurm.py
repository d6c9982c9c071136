"""What a Slurm partition can run and how busy it is, from one ``sinfo`` and one ``squeue``.

``sinfo -h -N -o '%N|%P|%c|%m|%t|%C|%l|%G'`` lists one line per node and partition:
the node, the partition (the default one with a trailing ``*``), its CPUs, its memory in
MB (MiB, ``man sinfo``), its compact state, its cores as ``allocated/idle/other/total``
(``%C``), the partition's time limit (``%l``: ``infinite`` or a ``--time`` value) and the
node's generic resources (``%G``: ``gpu:2``, ``gpu:a100:4(S:0)``, ``(null)``).

``squeue -h -t PD,R -o '%i|%P|%T|%C|%L|%l|%S'`` lists the jobs: id, partition, state,
CPUs, time left (``%L``, running jobs), time limit (``%l``) and for a pending job the
start the scheduler expects (``%S``, the time ``squeue --start`` shows; ``N/A`` while the
backfill scheduler has not placed it). Times are ``--time`` values (``man squeue``,
"%L": days-hours:minutes:seconds).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from datetime import datetime

from ...dialects.slurm import parse_time
from ...errors import ResourceError
from ...units import MIB
from ._policy import Limits, Load

__all__ = ["SINFO", "SQUEUE", "parse_limits", "parse_load"]

SINFO = ["sinfo", "-h", "-N", "-o", "%N|%P|%c|%m|%t|%C|%l|%G"]
SQUEUE = ["squeue", "-h", "-t", "PD,R", "-o", "%i|%P|%T|%C|%L|%l|%S"]

# states of a node that runs nothing new (sinfo's compact %t; a trailing * or ~ marks
# a node not responding or powered down)
_UNUSABLE = ("down", "drain", "fail", "maint", "inval", "futr", "boot", "plnd")
_GPU = re.compile(r"gpu(?::[^:,(]+)?:(\d+)")


def _seconds(text: str) -> int | None:
    try:
        return parse_time(text, "sinfo time")
    except ResourceError:
        return None  # INVALID, NOT_SET, N/A: nothing known


def _nodes(text: str, partition: str | None) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 8:
            continue
        name = fields[1]
        if partition is None and not name.endswith("*"):
            continue
        if partition is not None and name.rstrip("*") != partition:
            continue
        rows.append(fields)
    return rows


def parse_limits(text: str, partition: str | None) -> Limits | None:
    """The largest usable node of ``partition`` (None: the default partition) as
    :class:`Limits`, with every partition's name; None when sinfo lists none of it."""
    queues = tuple(dict.fromkeys(f.split("|")[1].strip().rstrip("*")
                                 for f in text.splitlines() if f.count("|") == 7))  # fmt: skip
    rows = _nodes(text, partition)
    usable = [r for r in rows if not r[4].lower().startswith(_UNUSABLE)] or rows
    if not usable:
        return None
    cpus = max(int(r[2]) for r in usable if r[2].isdigit())
    memory = max((int(r[3]) * MIB for r in usable if r[3].isdigit()), default=None)
    gpus = max((sum(int(n) for n in _GPU.findall(r[7])) for r in usable), default=0)
    return Limits(cpus, memory, _seconds(usable[0][6]), gpus, True, queues)


def parse_load(
    sinfo: str,
    squeue: str,
    partition: str | None,
    now: float,
    own: Mapping[str, float] | None = None,
    overhead: float = 0.0,
    pool: Collection[str] = (),
) -> Load:
    """How busy ``partition`` is: its idle cores on usable nodes, when running jobs end
    (``own`` jobs' expected seconds left by id, instead of their time left), the pending
    jobs in id order, and the latest start the scheduler expects for them.

    ``pool``: the ids of allocations that run the caller's own jobs (squashed ones): a
    running one's cores count as free, since the jobs sent there are what will use them
    (the caller queues those), and a pending one (``123_[0-3]`` for an array not
    started) counts for nothing."""
    rows = _nodes(sinfo, partition)
    names = {r[1].rstrip("*") for r in rows}
    free = 0.0
    for r in rows:
        if r[4].lower().startswith(_UNUSABLE):
            continue
        counts = r[5].split("/")
        if len(counts) == 4 and counts[1].isdigit():
            free += int(counts[1])
    releases: list[tuple[float, float]] = []
    queued: list[tuple[int, float, float]] = []
    not_before = 0.0
    arrays = {p.split("_")[0] for p in pool if "_" in p}
    for line in squeue.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 7 or fields[1] not in names or not fields[3].isdigit():
            continue
        job, _, state, cpus, left, limit, start = fields
        if job in pool or (job.endswith("]") and job.split("_")[0] in arrays):
            free += int(cpus) if state == "RUNNING" else 0
            continue
        if state == "RUNNING":
            seconds = (own or {}).get(job, _seconds(left))
            releases.append((float("inf") if seconds is None else seconds, float(cpus)))
        elif state == "PENDING":
            runtime = (own or {}).get(job, _seconds(limit))
            queued.append((_order(job), float(cpus), float(runtime or 3600)))
            expected = _epoch(start)
            if expected is not None:
                not_before = max(not_before, expected - now)
    ordered = tuple((cpus, runtime) for _, cpus, runtime in sorted(queued))
    return Load(free, releases, ordered, not_before, overhead)


def _order(job: str) -> int:
    digits = re.match(r"\d+", job)
    return int(digits.group()) if digits else 0


def _epoch(text: str) -> float | None:
    # %S is the controller's local time, as the submit host reads it (same clock here)
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None  # N/A: the backfill scheduler has not placed the job yet
