"""A platform definition written from what a Slurm cluster says of itself, as
snakemake-executor-plugin-slurm's ``generate-slurm-partition-config`` does for its
partition file: ``scontrol show partition -o`` for each partition's limits (``MaxTime``,
``MaxMemPerNode``, ``MaxCPUsPerNode``, ``Default``, ``State``) and ``sinfo -h -N -o
'%P|%c|%m|%G|%f'`` for its nodes (CPUs, memory in MB that Slurm means as MiB, generic
resources such as ``gpu:a100:4``, features).

A queue's limits are one job's on one node: the largest node's CPUs and memory, capped
by the partition's own per-node limits, the most GPUs a node has, and ``MaxTime``. GPU
types and node features are written as comments: a reader checks them, the platform
loader has no key for them yet. A partition that is not ``UP`` gets ``auto: false``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..dialects.slurm import parse_time
from ..units import MIB

__all__ = ["SCONTROL", "SINFO", "platform_yaml"]

SCONTROL = ["scontrol", "show", "partition", "-o"]
SINFO = ["sinfo", "-h", "-N", "-o", "%P|%c|%m|%G|%f"]
# gpu[:type]:count[(S:0-1)] in sinfo's %G
_GPU = re.compile(r"gpu(?::([^:(,]+))?:(\d+)")


def _partitions(text: str) -> dict[str, dict[str, str]]:
    found = {}
    for line in text.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        if "PartitionName" in fields:
            found[fields["PartitionName"]] = fields
    return found


def _nodes(text: str) -> dict[str, list[tuple[int, int | None, int, set[str], set[str]]]]:
    """Per partition, each node's (CPUs, memory bytes, GPUs, GPU types, features)."""
    nodes: dict[str, list[tuple[int, int | None, int, set[str], set[str]]]] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 5 or not parts[1].isdigit():
            continue
        name, cpus, memory, gres, features = parts
        gpus = [(m[1], int(m[2])) for m in _GPU.finditer(gres)]
        kinds = {kind for kind, _ in gpus if kind}
        named = {f for f in features.split(",") if f and f != "(null)"}
        mem = int(memory) * MIB if memory.isdigit() else None
        nodes.setdefault(name.rstrip("*"), []).append(
            (int(cpus), mem, sum(n for _, n in gpus), kinds, named)
        )
    return nodes


def _limit(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _walltime(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _queue(
    name: str, info: Mapping[str, str], nodes: list[tuple[int, int | None, int, set[str], set[str]]]
) -> list[str]:
    lines = [f"  {name}:"]
    cpus = max((n[0] for n in nodes), default=None)
    if (per_node := _limit(info.get("MaxCPUsPerNode"))) is not None and cpus is not None:
        cpus = min(cpus, per_node)
    memory = max((n[1] for n in nodes if n[1] is not None), default=None)
    if (cap := _limit(info.get("MaxMemPerNode"))) is not None:
        memory = min(memory, cap * MIB) if memory is not None else cap * MIB
    if cpus is not None:
        lines.append(f"    max_cpus: {cpus}")
    if memory is not None:
        lines.append(f"    max_memory: {-(-memory // MIB)} MiB")
    limit = info.get("MaxTime", "UNLIMITED")
    seconds = parse_time(limit, f"{name} MaxTime") if limit else None
    if seconds is not None:
        lines.append(f"    max_walltime: {_walltime(seconds)}")
    lines.append(f"    max_gpus: {max((n[2] for n in nodes), default=0)}")
    if info.get("State", "UP") != "UP":
        lines.append(f"    auto: false  # State={info['State']}")
    kinds = sorted(set().union(*(n[3] for n in nodes))) if nodes else []
    features = sorted(set().union(*(n[4] for n in nodes))) if nodes else []
    if kinds:
        lines.append(f"    # GPU types: {', '.join(kinds)}")
    if features:
        lines.append(f"    # node features (constraint): {', '.join(features)}")
    return lines


def platform_yaml(name: str, scontrol: str, sinfo: str) -> str:
    """The platform YAML for the outputs of :data:`SCONTROL` and :data:`SINFO`."""
    partitions = _partitions(scontrol)
    nodes = _nodes(sinfo)
    default = next((p for p, info in partitions.items() if info.get("Default") == "YES"), None)
    lines = [
        "# Written by `seqera platform generate --from slurm` from scontrol and sinfo;",
        "# review it: cost rates and which partitions suit which jobs are not in Slurm.",
        f"name: {name}",
        "scheduler: slurm",
    ]
    if default:
        lines.append(f"default_queue: {default}")
    lines.append("queues:")
    for partition, info in partitions.items():
        lines += _queue(partition, info, nodes.get(partition, []))
    return "\n".join(lines) + "\n"
