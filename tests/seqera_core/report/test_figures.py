"""The figures per process agree with the history rows, recomputed here in SQL."""

from __future__ import annotations

import sqlite3
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqera_core.history import TaskRecord, open_history
from seqera_core.platforms import CostRates, Platform, Queue
from seqera_core.report import CAUSES, build, document
from seqera_core.report._figures import summary
from seqera_core.units import GIB, MIB

RUN_ID = "local-run"  # the run conftest.local_history records

# The report's definitions, restated over the table itself: requested counts every
# attempt with its amount and run time (measured or not: it was reserved); a failed
# attempt's whole request is waste; busy cores are the CPU time over the run time (else
# %cpu / 100), never more than reserved.
_BUSY = "COALESCE(cpu_time, cpu_percent / 100.0 * realtime)"
_PER_PROCESS = """
SELECT process, COUNT(*), SUM(succeeded),
  SUM(CASE WHEN memory IS NOT NULL AND realtime IS NOT NULL THEN memory * realtime END),
  SUM(CASE WHEN succeeded AND memory IS NOT NULL AND realtime IS NOT NULL
            AND peak_memory IS NOT NULL THEN peak_memory * realtime END),
  SUM(CASE WHEN memory IS NOT NULL AND realtime IS NOT NULL AND NOT succeeded
           THEN memory * realtime
           WHEN memory IS NOT NULL AND realtime IS NOT NULL AND peak_memory IS NOT NULL
           THEN MAX(memory - peak_memory, 0) * realtime END),
  SUM(CASE WHEN cpus IS NOT NULL AND realtime IS NOT NULL THEN cpus * realtime END),
  SUM(CASE WHEN succeeded AND cpus IS NOT NULL AND realtime IS NOT NULL
            AND {busy} IS NOT NULL THEN MIN({busy}, cpus * realtime) END),
  SUM(realtime), SUM(CASE WHEN realtime IS NOT NULL THEN time END),
  SUM(NOT succeeded AND out_of_memory), SUM(NOT succeeded AND NOT out_of_memory AND time_limit),
  SUM(NOT succeeded AND NOT out_of_memory AND NOT time_limit)
FROM task_history WHERE run_id IN ({runs}) GROUP BY process
"""


def recomputed(path: Path, runs: list[str]) -> dict[str, dict[str, Any]]:
    """Per process, the figures straight from the table."""
    with sqlite3.connect(path) as db:
        query = _PER_PROCESS.format(runs=",".join("?" * len(runs)), busy=_BUSY)
        rows = db.execute(query, runs).fetchall()
    figures = {}
    for row in rows:
        (process, attempts, succeeded, mem_req, mem_used, mem_waste, cpu_req, cpu_used,
         run, limit, oom, time_limit, other) = row  # fmt: skip
        figures[process] = {
            "attempts": attempts,
            "succeeded": succeeded,
            "memory": [(v or 0) / 1e9 / 3600 for v in (mem_req, mem_used, mem_waste)],
            "cpus": [(cpu_req or 0) / 3600, (cpu_used or 0) / 3600],
            "run_hours": (run or 0) / 3600,
            "limit_hours": (limit or 0) / 3600,
            "failures": {
                k: v
                for k, v in (("out_of_memory", oom), ("time_limit", time_limit), ("other", other))
                if v
            },
        }
    return figures


def check(figures: dict[str, Any], expected: dict[str, dict[str, Any]]) -> None:
    by_name = {p["process"]: p for p in figures["processes"]}
    assert set(by_name) == set(expected)
    for process, want in expected.items():
        got = by_name[process]
        assert (got["attempts"], got["succeeded"]) == (want["attempts"], want["succeeded"])
        memory = got["memory"]
        assert [memory["requested"], memory["used"], memory["wasted"]] == pytest.approx(
            want["memory"], rel=1e-9, abs=1e-12
        ), process
        assert [got["cpus"]["requested"], got["cpus"]["used"]] == pytest.approx(
            want["cpus"], rel=1e-9, abs=1e-12
        ), process
        assert got["run_hours"] == pytest.approx(want["run_hours"], abs=1e-12)
        assert got["limit_hours"] == pytest.approx(want["limit_hours"], abs=1e-12)
        assert got["failures"] == want["failures"]


def test_a_real_local_run_agrees_with_its_rows(local_history: Path) -> None:
    history = open_history(local_history)
    figures = document(build(history, [RUN_ID]))
    history.close()
    expected = recomputed(local_history, [RUN_ID])
    check(figures, expected)
    # the run failed three ways, each counted under its own cause
    assert figures["summary"]["failures"] == {"out_of_memory": 1, "time_limit": 1, "other": 1}
    assert expected["align"]["failures"] == {"out_of_memory": 1}
    # sorted by waste, largest first
    wasted = [p["memory"]["wasted"] for p in figures["processes"]]
    assert wasted == sorted(wasted, reverse=True)
    # the local backend measured every successful task's peak, and its run time
    assert figures["summary"]["memory"]["unmeasured"] == 0
    # and the CPU time of every attempt, so every process that succeeded kept cores busy
    assert figures["summary"]["cpus"]["unmeasured"] == 0
    assert all(p["cpus"]["used"] > 0 for p in figures["processes"] if p["succeeded"])
    assert figures["summary"]["missing"] == []
    # every attempt on the timeline where it ran, though all were recorded at the end
    placed = figures["timeline"]
    assert len(placed) == 12 and len({round(s["end"], 1) for s in placed}) > 3
    assert all(s["backend"] == "local" and s["end"] > s["start"] for s in placed)
    total = sum(p["memory"][2] for p in expected.values())
    assert figures["summary"]["memory"]["wasted"] == pytest.approx(total, rel=1e-9)


def test_distributions_are_the_rows_quartiles(local_history: Path) -> None:
    history = open_history(local_history)
    report = build(history, [RUN_ID])
    history.close()
    with sqlite3.connect(local_history) as db:
        query = "SELECT peak_memory FROM task_history WHERE process = 'align' AND succeeded"
        peaks = [p for (p,) in db.execute(query)]
    align = next(p for p in report.summary.processes if p.process == "align")
    spread = align.distributions["peak_memory"]
    assert spread.count == len(peaks) == 4
    assert spread.median == pytest.approx(statistics.median(peaks))
    assert (spread.minimum, spread.maximum) == (min(peaks), max(peaks))


def test_outliers_are_named_by_task() -> None:
    rows = [TaskRecord("r", f"t{i}", "bwa", True, memory=GIB, peak_memory=100 * MIB,
                       realtime=60.0) for i in range(9)]  # fmt: skip
    rows.append(TaskRecord("r", "big", "bwa", True, memory=GIB, peak_memory=900 * MIB,
                           realtime=60.0))  # fmt: skip
    (bwa,) = summary(rows).processes
    assert [(o.task, o.quantity) for o in bwa.outliers] == [("big", "peak_memory")]
    # a replayed attempt is named by its attempt too
    retry = TaskRecord("r", "big", "bwa", True, attempt=2, memory=GIB, peak_memory=900 * MIB,
                       realtime=60.0)  # fmt: skip
    (bwa,) = summary([*rows[:9], retry]).processes
    assert bwa.outliers[0].task == "big (attempt 2)"


def test_cost_at_the_default_queues_rates() -> None:
    rows = [TaskRecord("r", "a", "p", True, cpus=4, memory=8 * GIB, peak_memory=2 * GIB,
                       cpu_percent=100.0, realtime=3600.0)]  # fmt: skip
    rates = CostRates(core_hour=0.5, gib_hour=0.25)
    platform = Platform("hpc", "slurm", (Queue("other"), Queue("normal", cost=rates)),
                        default_queue="normal")  # fmt: skip
    figures = summary(rows, platform)
    assert figures.costs is not None
    assert figures.costs.total == pytest.approx(4 * 0.5 + 8 * 0.25)
    assert figures.costs.wasted == pytest.approx(3 * 0.5 + 6 * 0.25)
    assert figures.processes[0].cost_wasted == pytest.approx(figures.costs.wasted)
    assert summary(rows, Platform("free", "slurm", (Queue("normal"),))).costs is None


_MAYBE_BYTES = st.none() | st.integers(1, 64 * GIB)
_RECORDS = st.lists(
    st.builds(
        TaskRecord,
        run_id=st.sampled_from(["r1", "r2", "r3"]),
        task_id=st.text("abc123", min_size=1, max_size=4),
        process=st.sampled_from(["bwa", "fastqc", "sort <x>", "Ä'\""]),
        succeeded=st.booleans(),
        attempt=st.integers(1, 3),
        out_of_memory=st.booleans(),
        time_limit=st.booleans(),
        cpus=st.none() | st.sampled_from([1.0, 2.0, 0.5, 16.0]),
        memory=_MAYBE_BYTES,
        time=st.none() | st.integers(1, 86400),
        peak_memory=_MAYBE_BYTES,
        cpu_percent=st.none() | st.floats(0, 3200),
        realtime=st.none() | st.floats(0, 86400),
        cpu_time=st.none() | st.floats(0, 86400 * 32),
        backend=st.sampled_from(["", "local", "slurm", "ecs", "torque"]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(records=_RECORDS, runs=st.sets(st.sampled_from(["r1", "r2", "r3"]), min_size=1))
def test_any_history_agrees_with_its_rows(
    tmp_path_factory: pytest.TempPathFactory, records: list[TaskRecord], runs: set[str]
) -> None:
    path = tmp_path_factory.mktemp("h") / "history.db"
    history = open_history(path)
    history.record(records)
    stored = {(r.run_id, r.task_id, r.attempt) for r in records}
    present = sorted(runs & {run for run, _, _ in stored})
    if not present:
        history.close()
        return
    figures = document(build(history, present))
    history.close()
    check(figures, recomputed(path, present))
    assert set(figures["summary"]["failures"]) <= set(CAUSES)
