"""The largest node of a Slurm partition, from one ``sinfo``: how wide a squashed
allocation may be (``_squash_plan.allocation_size``).

``sinfo -h -N -p PARTITION -o '%P|%c|%m|%t'`` lists one line per node and partition:
the partition (the default one carries a trailing ``*``), the node's CPUs, its memory
in megabytes (Slurm's MB are MiB, ``man sinfo`` and ``RealMemory`` in ``man
slurm.conf``) and its state (``%t``, compact: ``idle``, ``mix``, ``alloc``, ``down*``,
``drain``...). Nodes that are down, drained or failing are left out while others exist.
"""

from __future__ import annotations

from ...squash import Node
from ...units import MIB

__all__ = ["parse_sinfo_nodes", "sinfo_argv"]

_UNUSABLE = ("down", "drain", "fail", "maint", "inval", "futr", "boot")


def sinfo_argv(partition: str | None) -> list[str]:
    """The ``sinfo`` call listing the nodes of ``partition`` (all partitions when None)."""
    argv = ["sinfo", "-h", "-N", "-o", "%P|%c|%m|%t"]
    return [*argv, "-p", partition] if partition else argv


def parse_sinfo_nodes(text: str, partition: str | None) -> Node | None:
    """The node with the most CPUs in ``partition`` (None: the default partition) from
    :func:`sinfo_argv`'s output; None when no line is about that partition."""
    nodes: list[tuple[Node, bool]] = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 4:
            continue
        name, cpus, memory, state = fields
        default = name.endswith("*")
        if (partition is None and not default) or (partition and name.rstrip("*") != partition):
            continue
        try:
            node = Node(int(cpus), int(memory) * MIB if memory.isdigit() else None)
        except ValueError:
            continue
        nodes.append((node, not state.lower().startswith(_UNUSABLE)))
    usable = [n for n, ok in nodes if ok] or [n for n, _ in nodes]
    if not usable:
        return None
    return max(usable, key=lambda n: (n.cpus, n.memory or 0))
