"""How wide a squashed allocation is: its jobs' summed cores, capped by the largest node
of its queue (cores, and memory at the jobs' memory per core), never below its largest
job; the largest node from ``sinfo`` output (the first line recorded on this project's
one-node Slurm 22.05, the others as ``sinfo -N`` prints a node per partition)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.backends.batch._slurm_nodes import parse_sinfo_nodes, sinfo_argv
from seqera_core.backends.squash._plan import Shape, allocation_size, pack
from seqera_core.squash import Node, SquashPolicy
from seqera_core.units import MIB

RECORDED = (Path(__file__).parents[1] / "data" / "sinfo-nodes.txt").read_text()
SEVERAL = RECORDED + "big|64|515000|mix\nbig|32|257000|idle\nbig|128|1030000|down*\n"
POLICY = SquashPolicy("squash")


def shapes(n: int, cpus: float = 1, memory: int = 300 * MIB, time: int = 300) -> list[Shape]:
    return [Shape(cpus, memory, time, float(time)) for _ in range(n)]


def test_the_default_partition_is_the_one_marked_with_a_star() -> None:
    assert parse_sinfo_nodes(RECORDED, None) == Node(8, 24105 * MIB)
    assert parse_sinfo_nodes(SEVERAL, None) == Node(8, 24105 * MIB)
    assert parse_sinfo_nodes(SEVERAL, "debug") == Node(8, 24105 * MIB)


def test_a_down_node_does_not_count_while_another_is_up() -> None:
    assert parse_sinfo_nodes(SEVERAL, "big") == Node(64, 515000 * MIB)
    assert parse_sinfo_nodes("big|128|1000|down*\n", "big") == Node(128, 1000 * MIB)


def test_an_unknown_partition_or_odd_output_gives_no_node() -> None:
    assert parse_sinfo_nodes(SEVERAL, "nope") is None
    assert parse_sinfo_nodes("", None) is None
    assert parse_sinfo_nodes("debug*|8+|n/a|idle\nnot a line\n", None) is None
    assert parse_sinfo_nodes("debug*|8|n/a|idle\n", None) == Node(8, None)
    assert sinfo_argv("big")[-2:] == ["-p", "big"] and "-p" not in sinfo_argv(None)


def test_without_a_node_an_allocation_has_its_largest_jobs_cores() -> None:
    cpus, memory, _ = allocation_size(POLICY, shapes(200))
    assert (cpus, memory) == (1, 300 * MIB)


def test_with_a_node_an_allocation_is_as_wide_as_its_jobs_can_use() -> None:
    node = Node(8, 24105 * MIB)
    assert allocation_size(POLICY, shapes(200), node)[:2] == (8, 8 * 300 * MIB)
    assert allocation_size(POLICY, shapes(3), node)[0] == 3  # no more than they can use
    assert allocation_size(POLICY, shapes(3, cpus=0.5), node)[0] == 2  # 1.5 cores, rounded up
    # the time limit covers the summed work spread over the cores, plus the margin
    assert allocation_size(POLICY, shapes(16), node)[2] == 660  # 16 x 300 s / 8 + 60 s


def test_the_nodes_memory_caps_the_cores() -> None:
    node = Node(8, 1024 * MIB)  # holds three jobs of 300 MiB
    assert allocation_size(POLICY, shapes(200), node)[:2] == (3, 900 * MIB)
    # never fewer cores than the largest job asks for, even on a smaller node
    assert allocation_size(POLICY, shapes(2, cpus=4, memory=4096 * MIB), node)[0] == 4


def test_squash_cpus_overrides_the_rule() -> None:
    four = SquashPolicy("squash", cpus=4)
    assert allocation_size(four, shapes(200), Node(8, None))[0] == 4
    assert allocation_size(four, shapes(1), Node(8, None))[0] == 4


@pytest.mark.parametrize(("node", "allocations"), [(None, 19), (Node(8, None), 3)])
def test_wider_allocations_mean_fewer_of_them(node: Node | None, allocations: int) -> None:
    # 200 jobs of 300 s in allocations of at most 3540 s of work per core and 100 jobs:
    # eleven per one-core allocation (19), or their work over eight cores (3)
    assert len(pack(POLICY, shapes(200), node)) == allocations
