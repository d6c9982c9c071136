"""Self-sizing tools: the command references its memory, or its peaks follow allocations."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from seqera_core.sizing._guard import (
    Observed,
    read_source,
    references_memory,
    tracked_at,
    tracks_allocation,
)

GB = 10**9


@pytest.mark.parametrize(
    "text",
    [
        "picard -Xmx{resources.mem_mb}M MarkDuplicates I={input}",  # Snakemake
        "sort -S {resources.mem_mib}M {input}",
        "java -Xmx${task.memory.toGiga()}g -jar gatk.jar",  # Nextflow
        "$(runtime.ram)",  # CWL
        "${ return Math.floor(runtime['ram'] * 0.8) }",
        "spades.py --memory $((SLURM_MEM_PER_NODE / 1024))",
        "java -XX:MaxRAMPercentage=80 -jar tool.jar",
        # Snakemake run: blocks and script:s (Python, R, Bash)
        "shell('bwa index -m {resources.mem_mb}')",
        "subprocess.run(['sort', '-S', f'{snakemake.resources.mem_mb}M', path])",
        'sort(x, mem = snakemake@resources[["mem_mb"]])',
        "sort -S ${snakemake_resources[mem_mb]}M in.txt",
        "heap = resources.get('mem_mb', 1000)",
    ],
)
def test_commands_that_hand_the_allocation_to_the_tool(text: str) -> None:
    assert references_memory(text)


@pytest.mark.parametrize(
    "text", ["java -Xmx4g -jar tool.jar", "sort -S 2G", "echo {resources.runtime}", "", None]
)
def test_commands_that_do_not(text: str | None) -> None:
    assert not references_memory(text)


def test_a_script_is_read_when_it_can_be(tmp_path: Path) -> None:
    script = tmp_path / "sort.R"
    script.write_text('x <- sort(y, mem = snakemake@resources[["mem_mb"]])\n')
    assert references_memory(read_source(script))
    assert read_source(tmp_path / "missing.py") is None
    assert read_source(tmp_path) is None  # a directory
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (2 << 20) + b"snakemake.resources.mem_mb")
    assert not references_memory(read_source(big))  # past the first MiB: not a rule's script


def test_nested_descriptions_and_functions_that_take_resources() -> None:
    bindings = [{"position": [0, 1], "valueFrom": "-Xmx$(runtime.ram)m"}, {"datum": "x"}]
    assert references_memory([], {"arguments": bindings})
    assert references_memory([lambda wildcards, resources: resources.mem_mb // 2])
    assert not references_memory([lambda wildcards: 1, {"a": [b"bytes", 3]}])


def _eager() -> list[tuple[int, float, float]]:
    # nf-core/eager's MarkDuplicates (a JVM given -Xmx from task.memory): first attempts
    # at its declared 17.2 GB used 14-16 GB
    return [(int((5 + i / 10) * GB), (14 + i / 20) * GB, 17.2 * GB) for i in range(30)]


def test_peaks_that_follow_doubled_allocations_more_than_once_are_found() -> None:
    # retried at 2x and 3x its 17.2 GB, it used 32 and 45 GB where runs of the same
    # input size used 15: at 17.2 GB, what it ran at, it keeps
    retried = [(6 * GB, 32.1 * GB, 34.4 * GB), (int(6.4 * GB), 32.8 * GB, 34.4 * GB),
               (int(7.2 * GB), 45.4 * GB, 51.5 * GB)]  # fmt: skip
    assert tracked_at(_eager() + retried) == 17.2 * GB
    assert tracked_at(_eager() + retried[:2]) == 17.2 * GB
    assert not tracks_allocation(_eager() + retried[:1])  # a single run is never enough
    assert not tracks_allocation(_eager())


def test_the_largest_allocation_it_tracked_at_not_its_declared_size() -> None:
    # Sized down by a right-sizer to 8 GB, a JVM used 7.6; runs given 12.5 (of the same
    # inputs) used 11.9: it keeps 8 GB, not the 17.2 it declares.
    small = [(int((5 + i / 10) * GB), 7.6 * GB, 8.0 * GB) for i in range(20)]
    large = [(int((5 + i / 10) * GB), 11.9 * GB, 12.5 * GB) for i in range(3)]
    assert tracked_at(small + large) == 8.0 * GB


def test_a_tightly_sized_outlier_is_not_a_self_sizing_tool() -> None:
    # Issue 31's pipeline C: ~330 tasks sized tightly near 0.2 GB, then one of an
    # ordinary input peaked 1.5 x its neighbours, using 94 % of 1.5 x the allocation.
    rng = random.Random(3)
    runs = [(int(rng.uniform(1, 1.2) * GB), p, p * 1.05)
            for p in (rng.uniform(0.19, 0.2) * GB for _ in range(330))]  # fmt: skip
    outlier = (int(1.1 * GB), 0.31 * GB, 0.33 * GB)
    assert not tracks_allocation([*runs, outlier])
    # a second such outlier is, at the largest allocation the others ran at, until the
    # runs given as much since use what the others did: then the flag is taken back
    second = (int(1.05 * GB), 0.312 * GB, 0.33 * GB)
    assert tracked_at([*runs, outlier, second]) == max(g for _, _, g in runs)
    later = [(int(rng.uniform(1, 1.2) * GB), rng.uniform(0.19, 0.2) * GB, 0.33 * GB)
             for _ in range(3)]  # fmt: skip
    assert not tracks_allocation([*runs, outlier, second, *later])


def test_retries_are_evidence_only_where_asked() -> None:
    # A retry was killed first: it needed more than its neighbours whatever the tool
    # does, so by default only first attempts count (issue 31: a replay never flags)
    retried = [Observed(int(6 * GB), 32.1 * GB, 34.4 * GB, False),
               Observed(int(6.4 * GB), 32.8 * GB, 34.4 * GB, False)]  # fmt: skip
    runs = [Observed(*run) for run in _eager()] + retried
    assert not tracks_allocation(runs)
    assert tracks_allocation(runs, retries=True)
    # the same runs as first attempts given twice as much are evidence
    assert tracks_allocation([*runs[:-2], *(r._replace(first=True) for r in retried)])


def test_peaks_out_of_proportion_with_the_allocations_are_not() -> None:
    # given twice as much, used three and a half times as much: not the allocation
    half = [(int(5 * GB), 5.0 * GB, 10.0 * GB)] * 10
    assert not tracks_allocation(half + [(int(5.5 * GB), 17.5 * GB, 20.0 * GB)] * 3)
    most = [(int(5 * GB), 9.0 * GB, 10.0 * GB)] * 10
    assert tracked_at(most + [(int(5.5 * GB), 18.0 * GB, 20.0 * GB)] * 2) == 10.0 * GB


def test_a_retried_run_with_few_neighbours_is_compared_with_its_nearest() -> None:
    # A dozen runs of history (eager's MarkDuplicates, seed 4 of the 12/28 sample): two
    # retried runs next to each other, each compared with the nearest runs given half
    # as much, whatever else is near
    runs = [(int(x * GB), p * GB, 17.2 * GB) for x, p in
            [(2.39, 13.4), (2.41, 12.4), (2.70, 13.3), (3.16, 13.7), (4.70, 15.7), (7.02, 14.8),
             (10.1, 11.5), (10.7, 11.3), (10.8, 11.4), (18.3, 15.5)]]  # fmt: skip
    retried = [(int(6.39 * GB), 32.1 * GB, 34.4 * GB), (int(6.71 * GB), 33.4 * GB, 34.4 * GB)]
    assert tracked_at(runs + retried) == 17.2 * GB
    # a retry that used little of its doubled allocation is an ordinary one
    assert not tracks_allocation([*runs, retried[0], (int(6.71 * GB), 18.0 * GB, 34.4 * GB)])


def test_use_that_grows_with_a_sparse_input_is_not_taken_for_tracking() -> None:
    # Sized to their input by the right-sizer itself, a dozen runs far apart in input:
    # the largest got 1.9 x the allocation of its nearest and used 1.8 x as much, which
    # its 1.9 x larger input explains.
    runs = [(int(x * GB), 0.9 * x * GB, x * GB) for x in (1, 1.9, 3.6, 6.8, 13, 24.7)]
    assert not tracks_allocation(runs)
    # however fast it grows (iwd's transectAnalysis: 0.27 GB at 0.13 GB of input, 1.75
    # at 0.26): no larger input used less
    steep = [(int(x * GB), x**3 * GB, 1.1 * x**3 * GB) for x in (1, 2.0, 2.6, 3.4)]
    assert not tracks_allocation(steep)


def test_ordinary_retries_and_right_sized_runs_are_not() -> None:
    # A tool that needed a bit more than its first allocation: retried at 2x, used little
    # of it; and runs sized to their input use most of what they get, as they should.
    usual = _eager()
    retried = [(int(6 * GB), 18.5 * GB, 34.4 * GB)] * 4
    assert not tracks_allocation(usual + retried)
    # nor one that needed half as much again as its neighbours: 24 GB of the 34.4 its
    # retry got (a JVM grows into nearly all of it: eager's MarkDuplicates 93-97 %)
    assert not tracks_allocation([*usual, *[(int(6 * GB), 24.0 * GB, 34.4 * GB)] * 2])
    sized = [(int(x * GB), 0.9 * x * GB, x * GB) for x in range(1, 40)]
    assert not tracks_allocation(sized)
