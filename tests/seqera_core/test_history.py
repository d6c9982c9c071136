"""The task-history store: attempts in, per-process maxima out, failures kept apart."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from seqera_core.errors import HistoryError, ResourceError
from seqera_core.history import SqliteHistory, TaskRecord, _sql, open_history
from seqera_core.units import GIB, MIB


def _ok(task: str, peak: int, *, process: str = "ALIGN", cpu: float = 150.0, real: float = 60.0):
    return TaskRecord("run1", task, process, True, peak_memory=peak, cpu_percent=cpu,
                      realtime=real, memory=4 * GIB, cpus=4, time=3600)  # fmt: skip


def test_maxima_come_from_successful_attempts_only(tmp_path: Path) -> None:
    history = open_history(f"sqlite:///{tmp_path}/h.db")
    history.record([_ok("1", 1 * GIB, cpu=90), _ok("2", 3 * GIB, real=120), _ok("3", 2 * GIB)])
    killed = TaskRecord("run1", "4", "ALIGN", False, exit_code=137, out_of_memory=True,
                        memory=4 * GIB, peak_memory=4 * GIB)  # fmt: skip
    history.record([killed])
    stats = history.stats("ALIGN")
    assert stats is not None
    assert (stats.runs, stats.peak_memory, stats.cpu_percent, stats.realtime) == (
        3, 3 * GIB, 150.0, 120.0,
    )  # fmt: skip
    assert (stats.out_of_memory, stats.failed_memory, stats.time_limit) == (1, 4 * GIB, 0)
    assert history.stats("NEVER") is None
    assert history.processes() == ["ALIGN"]


def test_a_replayed_attempt_replaces_itself_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "history.db"
    first = SqliteHistory(path)
    first.record([_ok("1", 1 * GIB), _ok("1", 2 * GIB)])
    first.close()
    again = open_history(str(path))
    assert again.count() == 1
    stats = again.stats("ALIGN")
    assert stats is not None and stats.peak_memory == 2 * GIB


def test_threads_share_one_store() -> None:
    history = open_history(":memory:")
    workers = [
        threading.Thread(
            target=history.record, args=([_ok(f"{n}-{i}", MIB * i) for i in range(50)],)
        )
        for n in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert history.count() == 200


def test_unknown_urls_are_refused() -> None:
    with pytest.raises(ResourceError, match="sqlite:///path or a postgresql:// URL"):
        open_history("mysql://db/history")


def test_attempts_since_a_cursor() -> None:
    history = open_history(":memory:")
    history.record([TaskRecord("r", "1", "A", True, peak_memory=5),
                    TaskRecord("r", "2", "A", False, out_of_memory=True, memory=4)])  # fmt: skip
    cursor, first = history.attempts()
    assert [(r.task_id, r.succeeded, r.out_of_memory) for r in first] == [
        ("1", True, False),
        ("2", False, True),
    ]
    assert history.attempts(cursor) == (cursor, [])
    history.record([TaskRecord("r", "3", "A", True)])
    later, new = history.attempts(cursor)
    assert later > cursor and [r.task_id for r in new] == ["3"]


def test_cpu_use_reports_cores_never_busy() -> None:
    history = open_history(":memory:")
    history.record([
        TaskRecord("r", "1", "IDLE", True, cpus=8, cpu_percent=95.0),
        TaskRecord("r", "2", "IDLE", True, cpus=8, cpu_percent=180.0),
        TaskRecord("r", "3", "BUSY", True, cpus=2, cpu_percent=199.0),
        TaskRecord("r", "4", "IDLE", False, cpus=8, cpu_percent=790.0),  # failed: not counted
    ])  # fmt: skip
    idle, busy = sorted(history.cpu_use(), key=lambda u: u.process)[::-1]
    assert (idle.process, idle.runs, idle.reserved, idle.busy) == ("IDLE", 2, 8, 1.8)
    assert idle.unused == 6 and busy.unused == 0


def test_a_directory_or_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match="not a directory"):
        open_history(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("these are not the rows you are looking for\n" * 100)
    with pytest.raises(ResourceError, match="SQLite database"):
        open_history(text)
    with pytest.raises(ResourceError, match="postgresql://"):
        open_history("mysql://db/x")


def test_seqera_run_exits_2_on_such_a_history(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from seqera_core.cli import main

    assert main(["run", "--history", str(tmp_path), "--", "true"]) == 2
    err = capfd.readouterr().err
    assert "history" in err and "Traceback" not in err


def _older_schema(dialect: str) -> str:
    """The table as the first release wrote it: every column before ``cause``."""
    text = _sql.schema(dialect)
    for column in _sql.ADDED_COLUMNS:
        lines = text.splitlines()
        text = "\n".join(line for line in lines if not line.startswith(f"    {column} "))
    return text


def test_an_older_sqlite_history_gains_the_later_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(_older_schema("sqlite"))
        db.execute("INSERT INTO task_history (run_id, task_id, attempt, process, succeeded, "
                   "realtime) VALUES ('r', 't', 1, 'ALIGN', 1, 2.0)")  # fmt: skip
    store = open_history(path)
    (old,) = store.records()
    assert (old.cause, old.cpu_time, old.backend) == (None, None, "")
    store.record([TaskRecord("r", "u", "ALIGN", True, realtime=2.0, cpu_time=1.5, backend="slurm")])
    assert [(r.cpu_time, r.backend) for r in store.records()] == [(None, ""), (1.5, "slurm")]
    store.close()


def test_a_held_history_is_a_wait_that_ran_out_and_only_no_database_is_not_valid(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # a new file: held before anyone made it a WAL
    try:
        with pytest.raises(HistoryError, match=r"still locked by another process after 0\.2 s"):
            SqliteHistory(path, timeout=0.2)
    finally:
        holder.execute("COMMIT")
        holder.close()
    SqliteHistory(path).close()  # free again: it opens
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ResourceError, match="is not valid; expected an SQLite database"):
        SqliteHistory(junk, timeout=0.2)
