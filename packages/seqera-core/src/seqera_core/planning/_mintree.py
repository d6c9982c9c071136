"""Finding the first waiting job that fits an instance's room, without a scan.

:func:`pack` is the fill step of the CAVATICA loop (see :mod:`seqera_core.planning._planner`): the
waiting jobs an empty instance takes, first fit in queue order. Jobs are held in segment
trees of their smallest vCPU, memory and GPU demands, one tree per group (hint and vCPU
band), so a search skips every subtree where no job can fit.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from heapq import heapify, heappop, heapreplace

__all__ = ["Group", "MinTree", "Packer"]

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
        self.any_gpus = any(d[2] for d in demands)
        # a room with this many vCPUs holds every job's vCPUs: then only memory decides
        self.most_cpus = max((d[0] for d in demands), default=0)

    def remove(self, n: int) -> None:
        """Take the job at position ``n`` out; ancestors are updated while their minima
        change."""
        cpus, memory, gpus = self.cpus, self.memory, self.gpus
        x = self.size + n
        cpus[x] = memory[x] = gpus[x] = _INF
        x //= 2
        if not self.any_gpus:
            # no job needs a GPU: the GPU minima never decide a search (an emptied
            # subtree has inf vCPUs and memory), so only those two are kept up to date
            while x:
                left = 2 * x
                c, c2 = cpus[left], cpus[left + 1]
                m, m2 = memory[left], memory[left + 1]
                if c2 < c:
                    c = c2
                if m2 < m:
                    m = m2
                if c == cpus[x] and m == memory[x]:
                    return
                cpus[x], memory[x] = c, m
                x //= 2
            return
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
        if not self.any_gpus:
            # no job of the tree needs a GPU: two comparisons a node instead of three;
            # depth first without a stack: the way back up is in the node numbers
            x = node  # its minima fit the room
            while True:
                # down the leftmost child that may hold a fit; the right one is tried
                # only if the left one holds none
                while x < size:
                    x *= 2
                    if cpus[x] > room_cpus or memory[x] > room_memory:
                        x += 1
                        if cpus[x] > room_cpus or memory[x] > room_memory:
                            break
                else:
                    return x - size
                # x holds no fit: up to the first left child on the way, to its right
                # sibling if that may hold one; back at ``node``, its subtree holds none
                while True:
                    while x & 1:
                        x >>= 1
                        if x == node:
                            return -1
                    if x == node:
                        return -1
                    x += 1
                    if cpus[x] <= room_cpus and memory[x] <= room_memory:
                        break
        stack = [node]
        while stack:
            x = stack.pop()
            if cpus[x] > room_cpus or memory[x] > room_memory or gpus[x] > room_gpus:
                continue
            while x < size:
                x *= 2
                if cpus[x] <= room_cpus and memory[x] <= room_memory and gpus[x] <= room_gpus:
                    stack.append(x + 1)
                else:
                    x += 1
                    if cpus[x] > room_cpus or memory[x] > room_memory or gpus[x] > room_gpus:
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
        if room_cpus >= self.most_cpus and not self.any_gpus:
            # every job has vCPUs and GPUs enough: the first with memory enough, and a
            # subtree whose least memory fits surely holds one, so no step is undone
            x = start + size
            while memory[x] > room_memory:
                while x & 1:  # a right child: its parent's range ends here too
                    x >>= 1
                if not x:
                    return -1
                x += 1  # the subtree just right of the ranges searched so far
            while x < size:
                x *= 2
                if memory[x] > room_memory:
                    x += 1
            return x - size
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


Group = tuple[str | None, int, list[int], MinTree]


class Packer:
    """The fill step over groups of waiting jobs (hint, least vCPUs, queue positions,
    tree): which jobs an empty instance takes, first fit in queue order.

    A heap holds each group's next candidate, keyed by queue position: the smallest is
    the first fit overall when it still fits the shrinking room, else its group searches
    again from there. A group enters the heap with its first waiting position as a lower
    bound and is searched only when that bound comes to the top, so groups whose jobs
    all come after the fill ends are never searched.
    """

    def __init__(
        self,
        groups: Sequence[Group],
        demands: Sequence[tuple[int, int, int]],
        placed: Sequence[bool],
    ) -> None:
        self.groups, self.demands, self.placed = groups, demands, placed
        # each group's first local index that may still wait (only moves forward)
        self.first_waiting = [0] * len(groups)
        self.eligible: dict[str, tuple[list[int], list[int]]] = {}

    def _eligible(self, type_name: str) -> tuple[list[int], list[int]]:
        found = self.eligible.get(type_name)
        if found is None:
            members = sorted(
                (least, g)
                for g, (hint, least, _, _) in enumerate(self.groups)
                if hint is None or hint == type_name
            )
            found = ([least for least, _ in members], [g for _, g in members])
            self.eligible[type_name] = found
        return found

    def pack(
        self, head: int, type_name: str, room: tuple[int, int, int], home: tuple[int, MinTree]
    ) -> list[tuple[int, int, MinTree]]:
        """The waiting jobs an empty instance of this type and room takes, first fit in
        queue order from ``head`` (the first waiting job, at index ``home[0]`` of tree
        ``home[1]``, which the room must hold); nothing is changed."""
        taken: list[tuple[int, int, MinTree]] = [(head, home[0], home[1])]
        demands, placed, groups = self.demands, self.placed, self.groups
        need = demands[head]
        cpus, memory, gpus = room[0] - need[0], room[1] - need[1], room[2] - need[2]
        if cpus <= 0 or memory <= 0:
            return taken
        leasts, members = self._eligible(type_name)
        first_waiting = self.first_waiting
        heap: list[tuple[int, int, int]] = []
        for g in members[: bisect_right(leasts, cpus)]:
            _, _, positions, tree = groups[g]
            if tree.memory[1] > memory or tree.cpus[1] > cpus:
                continue  # no job of the group (the first one's included) fits the room
            n, end = first_waiting[g], len(positions)
            while n < end and (placed[positions[n]] or positions[n] <= head):
                n += 1
            first_waiting[g] = n
            if n < end:
                # (queue position, -1 - local index: a lower bound not yet searched, group)
                heap.append((positions[n], -1 - n, g))
        heapify(heap)
        while heap:
            position, local, g = heap[0]
            positions, tree = groups[g][2], groups[g][3]
            if local >= 0:
                d = demands[position]
                if d[0] <= cpus and d[1] <= memory and d[2] <= gpus:
                    taken.append((position, local, tree))
                    cpus, memory, gpus = cpus - d[0], memory - d[1], gpus - d[2]
                    if cpus <= 0 or memory <= 0:
                        break
                    # its group's next job: a bound, searched when it comes to the top
                    if local + 1 < len(positions):
                        heapreplace(heap, (positions[local + 1], -2 - local, g))
                    else:
                        heappop(heap)
                    continue
                local += 1  # it no longer fits: search on after it
            else:
                local = -1 - local
            found = tree.first(local, cpus, memory, gpus)
            if found < 0:
                heappop(heap)
            else:
                heapreplace(heap, (positions[found], found, g))
        return taken
