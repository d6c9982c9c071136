"""PBS Pro and Torque native forms (PBS Pro Reference Guide, ``pbs_resources``; Torque ``qsub``).

PBS sizes are an integer with an optional suffix b, kb, mb, gb, tb, pb (or w
for words of 8 bytes), case-insensitive, binary multiples, default bytes.
``walltime`` is ``[[hours:]minutes:]seconds[.milliseconds]``; hours may exceed 24.
"""

from __future__ import annotations

import math
import re

from ..errors import ResourceError
from ..models import ResourceRequest, Submission
from ..units import MIB, ceil_div

__all__ = [
    "format_size",
    "format_walltime",
    "parse_size",
    "parse_walltime",
    "pro_submission",
    "torque_submission",
]

_SIZE = re.compile(r"(\d+)(?:([kmgtp]?)([bw]))?", re.ASCII | re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_WALLTIME = re.compile(r"(?:(?:(\d+):)?(\d+):)?(\d+)(?:\.(\d+))?", re.ASCII)
_RESOURCE = re.compile(r"[A-Za-z][A-Za-z0-9_]*", re.ASCII)
SIZE_FORMS = "an integer with an optional suffix b, kb, mb, gb, tb or pb (binary), e.g. 4096mb"
WALLTIME_FORMS = "[[hours:]minutes:]seconds, e.g. 01:30:00 or 5400"


def format_size(size: int) -> str:
    """A PBS size covering ``size`` bytes, in whole mb (MiB) rounded up."""
    return f"{ceil_div(size, MIB)}mb"


def parse_size(value: str, field: str = "mem") -> int:
    """Bytes of a PBS size value."""
    match = _SIZE.fullmatch(value.strip())
    if match is None:
        raise ResourceError(field, value, SIZE_FORMS)
    number, prefix, kind = match.groups()
    word = 8 if (kind or "b").lower() == "w" else 1
    power = _POWERS[(prefix or "").lower()]
    return int(number) * word << (10 * power)


def format_walltime(seconds: int) -> str:
    """``HH:MM:SS`` for whole seconds (hours unbounded)."""
    hours, rest = divmod(seconds, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def parse_walltime(value: str, field: str = "walltime") -> int:
    """Whole seconds of a walltime, fractions rounded up."""
    match = _WALLTIME.fullmatch(value.strip())
    if match is None:
        raise ResourceError(field, value, WALLTIME_FORMS)
    hours, minutes, seconds, fraction = match.groups()
    total = int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds)
    return total + (1 if fraction and int(fraction) else 0)


def _pass_through(request: ResourceRequest, notes: list[str]) -> list[str]:
    args = []
    for key, value in sorted(request.extra.items()):
        if not key.startswith("pbs."):
            continue
        name = key.removeprefix("pbs.")
        if name == "project":
            args += ["-P", value]
        elif _RESOURCE.fullmatch(name) and "," not in value and ":" not in value:
            args += ["-l", f"{name}={value}"]
        else:
            raise ResourceError(key, value, "pbs.<resource>=<value> without ',' or ':'")
    return args


def _layout(request: ResourceRequest) -> tuple[int, int]:
    """(chunks or nodes, tasks in each): ``nodes`` of ``tasks_per_node`` (or the tasks
    spread evenly); tasks alone are that many one-rank chunks, placed where they fit."""
    if request.nodes is not None:
        return request.nodes, request.node_tasks
    if request.tasks_per_node is not None:
        return -(-(request.tasks or request.tasks_per_node) // request.tasks_per_node), (
            request.tasks_per_node
        )
    return request.tasks or 1, 1


def _chunk_memory(request: ResourceRequest, chunks: int, ncpus: int) -> int | None:
    if request.memory_per_cpu is not None:
        return request.memory_per_cpu * ncpus
    if request.memory is None:
        return None
    # memory is per node; ranks placed freely get an equal share of it each
    return (
        request.memory if request.nodes or request.tasks_per_node else -(-request.memory // chunks)
    )


def pro_submission(request: ResourceRequest) -> Submission:
    """``qsub`` options for PBS Pro: one ``select`` statement (``N:ncpus=C:mpiprocs=T:mem=M``,
    PBS Pro Reference Guide "select") plus ``walltime``."""
    notes: list[str] = []
    native: dict[str, object] = {}
    chunks, per_chunk = _layout(request)
    chunk = [str(chunks)]
    ncpus = math.ceil(request.cpus or 1) * per_chunk
    if request.cpus is not None or request.multi_task:
        native["ncpus"] = ncpus
        chunk.append(f"ncpus={ncpus}")
    if request.multi_task:
        native["mpiprocs"] = per_chunk
        chunk.append(f"mpiprocs={per_chunk}")
    memory = _chunk_memory(request, chunks, ncpus)
    if memory is not None:
        native["mem"] = format_size(memory)
        chunk.append(f"mem={native['mem']}")
    if request.accelerator is not None:
        native["ngpus"] = request.accelerator.count
        chunk.append(f"ngpus={request.accelerator.count}")
        if request.accelerator.type:
            notes.append(
                f"PBS Pro has no standard GPU type resource: '{request.accelerator.type}' "
                "needs a site resource, e.g. extra pbs.<resource>"
            )
    if request.disk is not None:
        notes.append("PBS Pro has no standard disk resource; disk is not requested")
    args = ["-l", "select=" + ":".join(chunk)]
    if request.time is not None:
        native["walltime"] = format_walltime(request.time)
        args += ["-l", f"walltime={native['walltime']}"]
    if request.queue:
        args += ["-q", request.queue]
    if request.account:
        args += ["-A", request.account]
    args += _pass_through(request, notes)
    return Submission("pbs", tuple(args), native, tuple(notes))


def torque_submission(request: ResourceRequest) -> Submission:
    """``qsub`` options for Torque: ``-l nodes=1:ppn=N[:gpus=G],mem=..,walltime=..``."""
    notes: list[str] = []
    native: dict[str, object] = {}
    nodes = request.nodes or 1
    if request.nodes is None and request.tasks_per_node is not None and request.tasks:
        nodes = -(-request.tasks // request.tasks_per_node)
    # ppn: processors on each node, every task's cores (Torque qsub, "nodes")
    ppn = math.ceil(request.cpus or 1) * (
        request.tasks_per_node or -(-(request.tasks or 1) // nodes)
    )
    node = f"nodes={nodes}"
    if request.cpus is not None or request.multi_task:
        native["nodes"], native["ppn"] = nodes, ppn
        node += f":ppn={ppn}"
    if request.accelerator is not None:
        native["gpus"] = request.accelerator.count
        node += f":gpus={request.accelerator.count}"
    parts = [node]
    memory = request.memory if request.memory_per_cpu is None else request.memory_per_cpu * ppn
    if memory is not None:
        native["mem"] = format_size(memory)
        parts.append(f"mem={native['mem']}")
    if request.time is not None:
        native["walltime"] = format_walltime(request.time)
        parts.append(f"walltime={native['walltime']}")
    if request.disk is not None:
        notes.append("Torque has no per-job disk resource; disk is not requested")
    args = ["-l", ",".join(parts)]
    if request.queue:
        args += ["-q", request.queue]
    if request.account:
        args += ["-A", request.account]
    args += _pass_through(request, notes)
    return Submission("torque", tuple(args), native, tuple(notes))
