"""``seqera-sidecar config`` and ``config --per-task`` read the history's summaries and
windows, never its whole table, and write what reading every row gave; on SQLite and on a
real PostgreSQL (tests/postgres.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seqera_core.history import History, TaskRecord, open_history
from seqera_core.resolvers import PredictiveResolver
from seqera_core.sizing import KEPT_FAILURES
from seqera_sidecar.cli import main
from seqera_sidecar.nextflow_config import process_config
from seqera_sidecar.pertask import Declared, Settings, declared_values, per_task_config

from ..conftest import require
from ..postgres import postgres_server

GB = 10**9
_WINDOW = 200


def _run(run: str, n: int) -> list[TaskRecord]:
    """ALIGN grows with its input and is retried after a kill; QC's first attempts of
    the first run declare nothing; TRIM only fails."""
    out = []
    for i in range(n):
        size = (i % 17 + 1) * GB
        declared = {"cpus": 4, "memory": 16 * GB, "time": 7200}
        if i % 10 == 0:
            out.append(TaskRecord(run, f"a{i}", "NF:ALIGN", succeeded=False, out_of_memory=True,
                                  input_bytes=size, **declared))  # fmt: skip
        out.append(TaskRecord(run, f"a{i}", "NF:ALIGN", succeeded=True,
                              attempt=2 if i % 10 == 0 else 1, input_bytes=size,
                              peak_memory=size // 2 + GB, realtime=600.0 + i, cpu_percent=380,
                              **declared))  # fmt: skip
        qc = {} if run == "r0" else {"cpus": 1, "memory": 4 * GB + i, "time": 3600}
        out.append(TaskRecord(run, f"q{i}", "NF:QC", succeeded=True, peak_memory=GB + i,
                              realtime=120.0 + i, **qc))  # fmt: skip
    out.append(TaskRecord(run, "t", "NF:TRIM", succeeded=False, cpus=2))
    return out


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def location(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A history of three runs, each longer than a window."""
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            where = str(tmp_path_factory.mktemp("config") / "history.db")
        else:
            require("psycopg", "the PostgreSQL history needs the postgresql extra")
            where = stack.enter_context(postgres_server()).url
        history = open_history(where)
        for n in range(3):
            history.record(_run(f"r{n}", 300))
        history.close()
        yield where


class _Windowed:
    """The history, refusing to hand out the whole table, counting the rows it reads."""

    def __init__(self, inner: History) -> None:
        self.inner = inner
        self.rows = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def records(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("config read every attempt")

    def attempts(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("config read every attempt")

    def feed(self, after: int = 0, limit: int = 10_000) -> Any:
        fed = self.inner.feed(after, limit)
        self.rows += len(fed)
        return fed

    def windows(self, *args: Any) -> Any:
        found = self.inner.windows(*args)
        self.rows += len({id(r) for rows in found.values() for r in rows})
        return found

    def first_declared(self, process: str) -> Any:
        found = self.inner.first_declared(process)
        self.rows += found is not None
        return found


def _declared_from_every_row(history: History) -> dict[str, Declared]:
    """What ``config --per-task`` wrote when it read every row."""
    found: dict[str, Declared] = {}
    for r in history.records():
        if r.attempt == 1 and r.process not in found and (r.cpus, r.memory, r.time) != (
            None, None, None,
        ):  # fmt: skip
            found[r.process] = Declared(r.cpus, r.memory, r.time)
    known = set(history.processes())
    return {p: d for p, d in found.items() if p in known}


def test_per_task_config_reads_one_row_a_process(location: str, tmp_path: Path) -> None:
    history = open_history(location)
    try:
        windowed = _Windowed(history)
        declared = declared_values(windowed)  # type: ignore[arg-type]
        assert declared == _declared_from_every_row(history)
        assert declared["NF:QC"] == Declared(1, 4 * GB, 3600)  # the first run declared none
        assert set(declared) == {"NF:ALIGN", "NF:QC"} and windowed.rows == 2
        expected = per_task_config(_declared_from_every_row(history), Settings())
    finally:
        history.close()
    out = tmp_path / "pertask.config"
    assert main(["config", "--per-task", "--history", location, "-o", str(out)]) == 0
    assert out.read_text() == expected


def test_static_config_reads_each_process_windows(location: str, tmp_path: Path) -> None:
    history = open_history(location)
    try:
        windowed = _Windowed(history)
        text = process_config(windowed, [PredictiveResolver(windowed)])  # type: ignore[arg-type]
        # ALIGN's windows (one stratum), QC's and its two strata's (cpus 1, none): not the
        # table's 3 x 631 attempts
        assert 0 < windowed.rows <= 4 * (_WINDOW + 2 * KEPT_FAILURES) < history.count()
        assert "withName: 'NF:ALIGN'" in text and "withName: 'NF:QC'" in text
        assert "NF:TRIM" not in text  # it never succeeded: nothing to size it from
    finally:
        history.close()
    out = tmp_path / "static.config"
    assert main(["config", "--history", location, "-o", str(out)]) == 0
    assert out.read_text() == text
