"""What a report cannot show is said in a sentence that names what would show it.

The rows are what each backend records (seen on the real ones: a Slurm without slurmdbd
gives no run time, peak or CPU; tests/integration/test_report_slurm.py runs it)."""

from __future__ import annotations

from seqera_core.history import TaskRecord
from seqera_core.report._gaps import missing
from seqera_core.report._timeline import spans
from seqera_core.units import GIB


def _row(task: str, backend: str, **measured: object) -> TaskRecord:
    return TaskRecord("r", task, "align", True, cpus=2, memory=GIB, time=600,
                      backend=backend, **measured)  # type: ignore[arg-type]  # fmt: skip


FULL = {"realtime": 10.0, "peak_memory": GIB // 2, "cpu_time": 12.0, "finished": 100.0}


def test_every_figure_measured_says_nothing() -> None:
    assert missing([_row("a", "local", **FULL), _row("b", "slurm", **FULL)]) == ()


def test_slurm_without_accounting_names_slurmdbd() -> None:
    (sentence,) = missing([_row("a", "slurm"), _row("b", "slurm")])
    assert sentence.startswith("Slurm accounting (slurmdbd) is off for 2 attempts")
    assert "AccountingStorageType=accounting_storage/slurmdbd" in sentence
    assert sentence.endswith("their run time, peak memory and CPU time.")


def test_slurm_with_accounting_but_no_maxrss_names_the_gatherer() -> None:
    rows = [_row("a", "slurm", realtime=10.0, cpu_time=1.0), _row("b", "slurm", **FULL)]
    (sentence,) = missing(rows)
    assert "no peak memory for 1 successful attempt" in sentence
    assert "JobAcctGatherType" in sentence


def test_each_backend_its_own_words() -> None:
    rows = [_row("a", "torque", realtime=5.0), _row("b", "ecs", realtime=5.0),
            _row("c", "", realtime=5.0, peak_memory=1)]  # fmt: skip
    torque_, ecs_, older = sorted(missing(rows), key=lambda s: ("Torque" not in s, "ECS" not in s))
    assert torque_.startswith("Torque's qstat forgets") and "peak memory and CPU time" in torque_
    assert "report_usage" in ecs_
    assert older == ("No CPU time was recorded for 1 successful attempt (by an older seqera, "
                     "or an engine that did not say).")  # fmt: skip


def test_a_job_cancelled_before_it_ran_has_no_run_time_to_miss() -> None:
    cancelled = TaskRecord("r", "x", "align", False, cause="cancelled", backend="local")
    assert missing([cancelled, _row("a", "local", **FULL)]) == ()


def test_the_timeline_places_each_attempt_from_its_run_time() -> None:
    rows = [_row("late", "slurm", realtime=5.0, finished=200.0),
            _row("early", "local", realtime=50.0, finished=100.0),
            _row("untimed", "slurm", finished=150.0)]  # fmt: skip
    placed = spans(rows)
    assert [(s.task, s.start, s.end, s.backend, s.outcome) for s in placed] == [
        ("early", 50.0, 100.0, "local", "succeeded"), ("late", 195.0, 200.0, "slurm", "succeeded"),
    ]  # fmt: skip
