"""Finding the first waiting job that fits an instance's room, without a scan.

:func:`pack` is the fill step of the CAVATICA loop (see :mod:`seqera_core.planner`): the
waiting jobs an empty instance takes, first fit in queue order. Jobs are held in segment
trees of their smallest vCPU, memory and GPU demands, one tree per group (hint and vCPU
band), so a search skips every subtree where no job can fit.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["Cursor", "Group", "MinTree", "pack"]

_INF = math.inf


class MinTree:
    """Waiting jobs of one hint group in queue order, with each subtree's smallest vCPU,
    memory and GPU demand: finds the first job that fits a given room without a scan."""

    def __init__(self, demands: Sequence[tuple[int, int, int]]) -> None:
        size = 1
        while size < len(demands):
            size *= 2
        self.size = size
        cpus: list[float] = [_INF] * (2 * size)
        memory: list[float] = [_INF] * (2 * size)
        gpus: list[float] = [_INF] * (2 * size)
        for n, (c, m, g) in enumerate(demands):
            cpus[size + n], memory[size + n], gpus[size + n] = c, m, g
        for x in range(size - 1, 0, -1):
            left, right = 2 * x, 2 * x + 1
            cpus[x] = cpus[left] if cpus[left] < cpus[right] else cpus[right]
            memory[x] = memory[left] if memory[left] < memory[right] else memory[right]
            gpus[x] = gpus[left] if gpus[left] < gpus[right] else gpus[right]
        self.cpus, self.memory, self.gpus = cpus, memory, gpus

    def remove(self, n: int) -> None:
        """Take the job at position ``n`` out; ancestors are updated while their minima
        change."""
        cpus, memory, gpus = self.cpus, self.memory, self.gpus
        x = self.size + n
        cpus[x] = memory[x] = gpus[x] = _INF
        x //= 2
        while x:
            left, right = 2 * x, 2 * x + 1
            # conditional expressions: min() would double the cost of planning
            c = cpus[left] if cpus[left] < cpus[right] else cpus[right]
            m = memory[left] if memory[left] < memory[right] else memory[right]
            g = gpus[left] if gpus[left] < gpus[right] else gpus[right]
            if c == cpus[x] and m == memory[x] and g == gpus[x]:
                return
            cpus[x], memory[x], gpus[x] = c, m, g
            x //= 2

    def _leftmost(self, node: int, room_cpus: int, room_memory: int, room_gpus: int) -> int:
        size, cpus, memory, gpus = self.size, self.cpus, self.memory, self.gpus
        stack = [node]
        while stack:
            x = stack.pop()
            # down the leftmost child that may hold a fit; the right one waits its turn
            while x < size:
                left, right = 2 * x, 2 * x + 1
                right_ok = (
                    cpus[right] <= room_cpus
                    and memory[right] <= room_memory
                    and gpus[right] <= room_gpus
                )
                if (
                    cpus[left] <= room_cpus
                    and memory[left] <= room_memory
                    and gpus[left] <= room_gpus
                ):
                    if right_ok:
                        stack.append(right)
                    x = left
                elif right_ok:
                    x = right
                else:
                    break
            else:
                return x - size
        return -1

    def first(self, start: int, room_cpus: int, room_memory: int, room_gpus: int) -> int:
        """The first position >= ``start`` whose job fits the room, or -1."""
        size = self.size
        cpus, memory, gpus = self.cpus, self.memory, self.gpus
        if start >= size or cpus[1] > room_cpus or memory[1] > room_memory or gpus[1] > room_gpus:
            return -1  # no waiting job of the group is that small
        # the canonical nodes covering [start, size), left to right, each searched depth
        # first for its leftmost job that fits
        x, end = start + size, 2 * size
        while x < end:
            if x & 1:
                if cpus[x] <= room_cpus and memory[x] <= room_memory and gpus[x] <= room_gpus:
                    found = self._leftmost(x, room_cpus, room_memory, room_gpus)
                    if found >= 0:
                        return found
                x += 1
            x //= 2
            end //= 2
        return -1


class Cursor:
    """A group of waiting jobs while one instance fills: its first fit found so far."""

    __slots__ = ("local", "positions", "tree")

    def __init__(self, positions: list[int], tree: MinTree) -> None:
        self.positions, self.tree, self.local = positions, tree, -1


Group = tuple[str | None, int, list[int], MinTree]


def pack(
    groups: Sequence[Group],
    demands: Sequence[tuple[int, int, int]],
    placed: Sequence[bool],
    head: int,
    type_name: str,
    room: tuple[int, int, int],
    home: tuple[int, MinTree],
) -> list[tuple[int, int, MinTree]]:
    """The waiting jobs an empty instance of this type and room takes, first fit in queue
    order from ``head`` (the first waiting job, at index ``home[0]`` of tree ``home[1]``,
    which the room must hold); nothing is changed (taken jobs fall behind the search
    start)."""
    # the head job is first in queue order and fits: no search needed for it
    taken: list[tuple[int, int, MinTree]] = [(head, home[0], home[1])]
    need = demands[head]
    cpus, memory, gpus = room[0] - need[0], room[1] - need[1], room[2] - need[2]
    start = head + 1
    # Each group's first fit only moves right while the room shrinks: remember it,
    # and drop a group for this instance once it has none.
    alive = [
        Cursor(positions, tree)
        for hint, least, positions, tree in groups
        if hint in (None, type_name) and least <= cpus
    ]
    while cpus > 0 and memory > 0 and alive:
        best = -1
        chosen: Cursor | None = None
        for entry in list(alive):
            positions, tree, local = entry.positions, entry.tree, entry.local
            if local >= 0:
                need = demands[positions[local]]
                if placed[positions[local]] or not (
                    need[0] <= cpus and need[1] <= memory and need[2] <= gpus
                ):
                    local = -1
            if local < 0:
                first = bisect_left(positions, start)
                if first == len(positions):
                    alive.remove(entry)
                    continue
                if 0 <= best < positions[first]:
                    continue  # its earliest job comes after the best so far
                local = tree.first(first, cpus, memory, gpus)
                if local < 0:
                    alive.remove(entry)
                    continue
                entry.local = local
            if best < 0 or positions[local] < best:
                best, chosen = positions[local], entry
        if chosen is None:
            break
        taken.append((best, chosen.local, chosen.tree))
        chosen.local = -1
        need_cpus, need_memory, need_gpus = demands[best]
        cpus, memory, gpus = cpus - need_cpus, memory - need_memory, gpus - need_gpus
        start = best + 1
    return taken
