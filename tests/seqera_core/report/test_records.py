"""Which rows a report covers, and the cause of each failure."""

from __future__ import annotations

import datetime as dt

import attrs
import pytest

from seqera_core.errors import ResourceError, UsageError
from seqera_core.history import History, TaskRecord, open_history
from seqera_core.report import cause, parse_since
from seqera_core.report._records import select


def test_the_cause_of_a_failure() -> None:
    ok = TaskRecord("r", "t", "p", True, out_of_memory=True)
    assert cause(ok) is None
    failed = attrs.evolve(ok, succeeded=False)
    assert cause(failed) == "out_of_memory"
    assert cause(attrs.evolve(failed, out_of_memory=False, time_limit=True)) == "time_limit"
    assert cause(attrs.evolve(failed, out_of_memory=False, exit_code=1)) == "other"


def _history(*records: TaskRecord) -> History:
    history = open_history(":memory:")
    history.record(records)
    return history


def test_select_runs_and_since() -> None:
    noon = dt.datetime(2026, 11, 24, 12).timestamp()
    history = _history(
        TaskRecord("a", "1", "p", True, finished=noon - 3600),
        TaskRecord("b", "1", "p", True, finished=noon + 60),
        TaskRecord("b", "2", "p", False, finished=None),
    )
    assert {r.run_id for r in select(history)} == {"a", "b"}
    assert [r.task_id for r in select(history, ["b"])] == ["1", "2"]
    assert [r.run_id for r in select(history, (), parse_since("2026-11-24T12:00"))] == ["b"]
    with pytest.raises(UsageError, match="finished since"):
        select(history, ["a"], parse_since("2026-11-24T12:00"))


def test_an_unknown_run_names_the_runs_there() -> None:
    history = _history(TaskRecord("run-1", "1", "p", True), TaskRecord("run-2", "1", "p", True))
    with pytest.raises(ResourceError, match=r"--run: 'nope'.*run-1, run-2"):
        select(history, ["run-1", "nope"])


def test_an_empty_history_says_so() -> None:
    with pytest.raises(UsageError, match="holds no task"):
        select(open_history(":memory:"), where="h.db")


@pytest.mark.parametrize("text", ["yesterday", "24/11/2026", ""])
def test_a_bad_since_names_the_flag(text: str) -> None:
    with pytest.raises(ResourceError, match="--since"):
        parse_since(text)


def test_since_takes_a_zone() -> None:
    noon = dt.datetime(2026, 11, 24, 12, tzinfo=dt.UTC)
    assert parse_since("2026-11-24T12:00Z") == noon.timestamp()
