"""``seqera plan``'s output, written fast enough for 100,000 jobs.

``json.dumps(..., indent=2)`` falls back to the pure-Python encoder on Python 3.11 (the
C encoder only runs without ``indent``; see ``json.encoder.JSONEncoder.iterencode``), and
``Instance.used_cpus`` sums the jobs again on every call; for tens of thousands of
instances the output then cost more than the plan. :func:`dump_json` writes the same
bytes as ``json.dumps(plan_document(plan), indent=2, sort_keys=True)`` (a test checks
it) by writing each instance from a template with its leaves encoded by the JSON
module's own scalar encoders; :func:`text` is the table ``seqera plan`` prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring_ascii
from typing import Any

from ..planning import Instance, Plan, millicores
from ..units import format_bytes

__all__ = ["dump_json", "json_chunks", "share", "text", "usage"]


def share(used: float, total: float) -> float:
    """``used / total``, 0 for a dimension the type does not have."""
    return used / total if total else 0.0


def usage(instance: Instance, rounded: dict[float, int] | None = None) -> tuple[float, int, int]:
    """vCPUs (each job's rounded up to a thousandth), memory and GPUs the jobs take; the
    same values as ``Instance.used_cpus``, ``used_memory`` and ``used_gpus``, in one pass.
    ``rounded`` remembers each vCPU value's thousandths between calls."""
    rounded = {} if rounded is None else rounded
    cpus = memory = gpus = 0
    for j in instance.jobs:
        milli = rounded.get(j.cpus)
        if milli is None:
            milli = rounded[j.cpus] = millicores(j.cpus)
        cpus += milli
        memory += j.memory
        gpus += j.gpus
    return cpus / 1000, memory, gpus


def _scalar(value: Any) -> str:
    # the encoders json.dumps uses for leaves (allow_nan=True, ensure_ascii=True)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


_INSTANCE = (
    "    {{\n"
    '      "capacity": {capacity},\n'
    '      "hourly_price": {price},\n'
    '      "id": {id},\n'
    '      "jobs": [\n'
    "        {jobs}\n"
    "      ],\n"
    '      "type": {type},\n'
    '      "used": {{\n'
    '        "cpus": {cpus},\n'
    '        "gpus": {gpus},\n'
    '        "memory_bytes": {memory}\n'
    "      }},\n"
    '      "utilisation": {{\n'
    '        "cpus": {cpus_share},\n'
    '        "gpus": {gpus_share},\n'
    '        "memory": {memory_share}\n'
    "      }}\n"
    "    }}"
)


# the fields of _INSTANCE that differ from instance to instance, in the template's order
_PER_INSTANCE = (
    "id",
    "jobs",
    "cpus",
    "gpus",
    "memory",
    "cpus_share",
    "gpus_share",
    "memory_share",
)


def _indented(value: Any, level: int) -> str:
    text = json.dumps(value, indent=2, sort_keys=True)
    return text.replace("\n", "\n" + " " * level)


def dump_json(plan: Plan, document: Callable[[Plan, bool], dict[str, Any]]) -> str:
    """``json.dumps(document(plan), indent=2, sort_keys=True)``, written instance by
    instance; ``document(plan, False)`` is the plan's document without its instances."""
    return "".join(json_chunks(plan, document))


def json_chunks(plan: Plan, document: Callable[[Plan, bool], dict[str, Any]]) -> Iterator[str]:
    """:func:`dump_json`'s text in pieces, one per instance, so that it can be written
    without holding the whole document in memory."""
    head = document(plan, False)
    if head["instances"]:
        raise ValueError("document(plan, False) must leave the instances out")
    rounded: dict[float, int] = {}
    fixed: dict[str, str] = {}  # per type: its instances' template
    leaves: dict[tuple[str, int, float], tuple[str, str]] = {}
    text = json.dumps(head, indent=2, sort_keys=True)
    if not plan.instances:
        yield text
        return
    # "instances": [] occurs once: inside a JSON string its quotes would be escaped
    before, after = text.split('"instances": []', 1)
    yield before + '"instances": [\n'
    separator = ""
    for i in plan.instances:
        t = i.type
        template = fixed.get(t.name)
        if template is None:
            # the type's own leaves filled in once; %s where each instance's go (a % in
            # the type's leaves doubled, so that only those are placeholders)
            capacity = {"cpus": t.vcpus, "memory_bytes": t.memory, "gpus": t.gpus}
            template = fixed[t.name] = _INSTANCE.format(
                capacity=_indented(capacity, 6).replace("%", "%%"),
                price=_scalar(t.price).replace("%", "%%"),
                type=encode_basestring_ascii(t.name).replace("%", "%%"),
                **dict.fromkeys(_PER_INSTANCE, "%s"),
            )
        cpus, memory, gpus = usage(i, rounded)
        # each used amount and its share encoded once per type, however many
        # instances of the type use as much
        cpu_leaves = leaves.get((t.name, 0, cpus))
        if cpu_leaves is None:
            cpu_leaves = leaves[(t.name, 0, cpus)] = (
                _scalar(cpus),
                _scalar(share(cpus, t.vcpus)),
            )
        memory_leaves = leaves.get((t.name, 1, memory))
        if memory_leaves is None:
            memory_leaves = leaves[(t.name, 1, memory)] = (
                _scalar(memory),
                _scalar(share(memory, t.memory)),
            )
        gpu_leaves = leaves.get((t.name, 2, gpus))
        if gpu_leaves is None:
            gpu_leaves = leaves[(t.name, 2, gpus)] = (
                _scalar(gpus),
                _scalar(share(gpus, t.gpus) if t.gpus else None),
            )
        yield separator + template % (
            int.__repr__(i.id),
            ",\n        ".join([encode_basestring_ascii(j.name) for j in i.jobs]),
            cpu_leaves[0],
            gpu_leaves[0],
            memory_leaves[0],
            cpu_leaves[1],
            gpu_leaves[1],
            memory_leaves[1],
        )
        separator = ",\n"
    yield "\n  ]" + after


def text(plan: Plan) -> str:
    """The plan as a table: one row per instance, then the cost and the bound."""
    c = plan.catalogue
    dated = f" ({c.date})" if c.date else ""
    rows = [("#", "type", "$/hour", "cpus", "memory", "gpus", "jobs")]
    rounded: dict[float, int] = {}
    fixed: dict[str, tuple[str, str, str]] = {}  # per type: price, vCPUs, memory
    # the usage cells of a type, shared by its instances that use as much
    cpu_cells: dict[tuple[str, float], str] = {}
    memory_cells: dict[tuple[str, int], str] = {}
    sizes: dict[int, str] = {}
    jobs = 0
    for i in plan.instances:
        t = i.type
        shared = fixed.get(t.name)
        if shared is None:
            shared = fixed[t.name] = (f"{t.price:.4f}", f"{t.vcpus:g}", format_bytes(t.memory))
        cpus, memory, gpus = usage(i, rounded)
        jobs += len(i.jobs)
        cpus_cell = cpu_cells.get((t.name, cpus))
        if cpus_cell is None:
            cpus_cell = cpu_cells[(t.name, cpus)] = (
                f"{cpus:g}/{shared[1]} {share(cpus, t.vcpus):.0%}"
            )
        memory_cell = memory_cells.get((t.name, memory))
        if memory_cell is None:
            size = sizes.get(memory)
            if size is None:
                size = sizes[memory] = format_bytes(memory)
            memory_cell = memory_cells[(t.name, memory)] = (
                f"{size}/{shared[2]} {share(memory, t.memory):.0%}"
            )
        rows.append(
            (
                str(i.id),
                t.name,
                shared[0],
                cpus_cell,
                memory_cell,
                f"{gpus}/{t.gpus}" if t.gpus else "-",
                ", ".join([j.name for j in i.jobs]),
            )
        )
    # every cell but the last padded to its column's width, in one format per row
    line = "  ".join(f"{{:<{max(len(row[n]) for row in rows)}}}" for n in range(len(rows[0]) - 1))
    lines = [f"catalogue: {c.source}{dated}"]
    lines += [line.format(*row[:-1]) + "  " + row[-1] for row in rows]
    bound = plan.lower_bound()
    cost = plan.hourly_cost
    lines.append(f"{len(plan.instances)} instances for {jobs} jobs: {cost:.4f} per hour")
    if bound.hourly:
        lines.append(
            f"lower bound: {bound.hourly:.4f} per hour ({bound.dimension}); "
            f"the plan costs {cost / bound.hourly:.3f} x the bound"
        )
    return "\n".join(lines)
