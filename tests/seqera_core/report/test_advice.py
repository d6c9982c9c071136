"""The right-sizer's advice per process and its saving on the run, worked by hand."""

from __future__ import annotations

import math

import attrs
import pytest

from seqera_core.dialects.snakemake import RUNNER_MEMORY
from seqera_core.history import TaskRecord, open_history
from seqera_core.report import build
from seqera_core.units import GIB, MIB


def test_without_input_sizes_the_advice_is_the_largest_use_with_a_margin() -> None:
    # 12 tasks: 4 cpus and 8 GiB asked, 100..210 MiB used at 150 % cpu, 1 to 2 hours each
    rows = [
        TaskRecord("run", f"t{i}", "align", True, cpus=4, memory=8 * GIB, time=6 * 3600,
                   peak_memory=(100 + 10 * i) * MIB, cpu_percent=150.0,
                   realtime=3600.0 + 300 * i)
        for i in range(12)
    ]  # fmt: skip
    history = open_history(":memory:")
    history.record(rows)
    advice = build(history).advice["align"]
    largest = 210 * MIB
    # PredictiveResolver's calibrated bound: past the largest use by what a spread of
    # 100..210 MiB over 12 runs calls for; cpus: the most cores kept busy
    assert largest < advice.memory <= math.ceil(largest * 1.5)
    # time: a kill loses the whole run and a longer limit holds nothing, so a miss is
    # priced 10 x a memory miss; 12 run times spread evenly over 1-2 h call for up to 2 x
    longest = 3600 + 300 * 11
    assert longest < advice.time <= 2 * longest
    assert advice.cpus == 2
    assert advice.sized == 12 and advice.too_small == 0
    hours = sum(r.realtime or 0 for r in rows) / 3600
    assert advice.saved_memory == pytest.approx((8 * GIB - advice.memory) * hours / 1e9)
    assert advice.saved_cpus == pytest.approx((4 - 2) * hours)


def test_a_process_with_no_measured_peak_gets_no_memory_advice() -> None:
    rows = [TaskRecord("run", f"t{i}", "qc", True, cpus=1, memory=GIB, realtime=60.0)
            for i in range(3)]  # fmt: skip
    history = open_history(":memory:")
    history.record(rows)
    advice = build(history).advice["qc"]
    assert advice.memory is None and advice.saved_memory == 0
    assert advice.time == 600  # the resolver's floor: a limit of a few minutes wins nothing


def test_a_process_that_never_succeeded_gets_none() -> None:
    history = open_history(":memory:")
    history.record([TaskRecord("run", "t", "boom", False, memory=GIB, out_of_memory=True)])
    report = build(history)
    assert report.advice == {} and report.saved_memory == 0
    assert "withName" not in report.nextflow


def test_snakemake_advice_never_goes_below_the_memory_its_executor_submits() -> None:
    # 12 Snakemake jobs using 20..31 MiB: the right-sizer alone would ask for ~40 MiB, but
    # `--executor seqera` runs every job in at least 256 MiB (Snakemake itself runs there)
    rows = [
        TaskRecord("run", f"t{i}", "tiny", True, cpus=1, memory=GIB, time=600,
                   peak_memory=(20 + i) * MIB, realtime=60.0, engine="snakemake")
        for i in range(12)
    ]  # fmt: skip
    history = open_history(":memory:")
    history.record(rows)
    advice = build(history).advice["tiny"]
    assert advice.memory == RUNNER_MEMORY
    assert advice.saved_memory == pytest.approx((GIB - RUNNER_MEMORY) * 12 * 60 / 3600 / 1e9)
    # the same tasks from another engine are advised what they use, with a margin
    other = [attrs.evolve(r, engine="nextflow", run_id="nf") for r in rows]
    history = open_history(":memory:")
    history.record(other)
    assert 31 * MIB < (build(history).advice["tiny"].memory or 0) < RUNNER_MEMORY


def test_advice_never_asks_more_than_declared_without_a_failure() -> None:
    # a rule declaring runtime=5 (minutes) and 200 MB that ran 0.1 s in 150 MB: the
    # resolver's floors (10 minutes, a margin) must not come back as "ask for more"
    rows = [TaskRecord("run", f"t{i}", "quick", True, cpus=1, memory=200 * 10**6, time=300,
                       peak_memory=150 * 10**6 + i, realtime=0.1, cpu_time=0.05)
            for i in range(3)]  # fmt: skip
    history = open_history(":memory:")
    history.record(rows)
    advice = build(history).advice["quick"]
    assert advice.time == 300 and advice.memory is not None and advice.memory <= 200 * 10**6
    assert advice.cpus <= 1 and advice.saved_memory >= 0


def test_a_time_limit_failure_justifies_a_longer_limit_than_declared() -> None:
    def advised(killed: bool) -> int | None:
        rows = [
            TaskRecord("run", "t", "slow", not killed, cpus=1, memory=GIB, time=60,
                       realtime=60.0, time_limit=killed, peak_memory=MIB),
            TaskRecord("run", "t", "slow", True, attempt=2, cpus=1, memory=GIB, time=60,
                       peak_memory=MIB, realtime=59.0),
        ]  # fmt: skip
        history = open_history(":memory:")
        history.record(rows)
        return build(history).advice["slow"].time

    # the resolver's floor of 10 minutes: asked for only after the limit killed a run
    assert advised(killed=False) == 60
    assert advised(killed=True) == 600
