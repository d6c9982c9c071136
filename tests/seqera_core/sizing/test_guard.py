"""Self-sizing tools: the command references its memory, or its peaks follow allocations."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.sizing._guard import read_source, references_memory, tracks_allocation

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


def test_peaks_that_follow_a_doubled_allocation_are_found() -> None:
    # nf-core/eager's MarkDuplicates (a JVM given -Xmx from task.memory): retried at 2x
    # and 3x its 17.2 GB, it used 32 and 45 GB where first attempts of the same input
    # size used 15.
    usual = [(int((5 + i / 10) * GB), (14 + i / 20) * GB, 17.2 * GB) for i in range(30)]
    retried = [(6 * GB, 32.1 * GB, 34.4 * GB), (6.4 * GB, 32.8 * GB, 34.4 * GB),
               (7.2 * GB, 45.4 * GB, 51.5 * GB)]  # fmt: skip
    assert tracks_allocation(usual + retried)
    assert tracks_allocation(usual + retried[:1])  # one is enough by default
    assert not tracks_allocation(usual + retried[:2], evidence=3)
    assert not tracks_allocation(usual)


def test_a_retried_run_with_few_neighbours_is_compared_with_its_nearest() -> None:
    # A dozen runs of history (eager's MarkDuplicates, seed 5 of the 12/28 sample): the
    # retried run has one other within 25 % of its input; its two nearest are enough.
    runs = [(int(x * GB), p * GB, 17.2 * GB) for x, p in
            [(0.67, 9.8), (2.07, 12.4), (3.26, 14.6), (3.77, 14.3), (4.05, 14.8), (4.31, 16.3),
             (7.29, 14.6), (9.0, 14.5), (10.8, 11.4), (15.6, 15.5), (26.2, 15.5)]]  # fmt: skip
    assert not tracks_allocation(runs)
    assert tracks_allocation([*runs, (int(6.71 * GB), 33.4 * GB, 34.4 * GB)])
    # a retry that used little of its doubled allocation is an ordinary one
    assert not tracks_allocation([*runs, (int(6.71 * GB), 18.0 * GB, 34.4 * GB)])
    # two retried runs next to each other (seed 4): each is compared with the nearest
    # runs given half as much, whatever else is near
    runs = [(int(x * GB), p * GB, 17.2 * GB) for x, p in
            [(2.39, 13.4), (2.41, 12.4), (2.70, 13.3), (3.16, 13.7), (4.70, 15.7), (7.02, 14.8),
             (10.1, 11.5), (10.7, 11.3), (10.8, 11.4), (18.3, 15.5)]]  # fmt: skip
    retried = [(int(6.39 * GB), 32.1 * GB, 34.4 * GB), (int(6.71 * GB), 33.4 * GB, 34.4 * GB)]
    assert tracks_allocation(runs + retried)


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
    usual = [(int((5 + i / 10) * GB), (14 + i / 20) * GB, 17.2 * GB) for i in range(30)]
    retried = [(int(6 * GB), 18.5 * GB, 34.4 * GB)] * 4
    assert not tracks_allocation(usual + retried)
    # nor one that needed half as much again as its neighbours: 24 GB of the 34.4 its
    # retry got (a JVM grows into nearly all of it: eager's MarkDuplicates 93-97 %)
    assert not tracks_allocation([*usual, (int(6 * GB), 24.0 * GB, 34.4 * GB)])
    sized = [(int(x * GB), 0.9 * x * GB, x * GB) for x in range(1, 40)]
    assert not tracks_allocation(sized)
