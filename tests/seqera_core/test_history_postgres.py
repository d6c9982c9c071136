"""The shared history on a real PostgreSQL server this module starts on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from seqera_core.config import Config
from seqera_core.errors import HistoryError
from seqera_core.history import History, TaskRecord, _sql, open_history
from seqera_core.history._postgres import _CREATE
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import PredictiveResolver
from seqera_core.session import Session

from ..conftest import require
from ..postgres import free_port, postgres_server


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with postgres_server() as server:
        yield server.url


@pytest.fixture
def history(postgres_url: str) -> Iterator[History]:
    store = open_history(postgres_url)  # creates the table
    psycopg = require("psycopg", "the PostgreSQL history needs the postgresql extra")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("TRUNCATE task_history, task_summary, task_totals")
    yield store
    store.close()


def test_same_answers_as_sqlite(history: History) -> None:
    records = [
        TaskRecord("r", "1", "ALIGN", True, peak_memory=2 * 10**9, cpus=4, cpu_percent=150.0,
                   realtime=10.0, input_bytes=10**9),
        TaskRecord("r", "2", "ALIGN", False, memory=10**9, out_of_memory=True),
        TaskRecord("r", "3", "SORT", True, peak_memory=10**8),
    ]  # fmt: skip
    lite = open_history(":memory:")
    for store in (history, lite):
        assert store.record(records) == 3
    assert history.stats("ALIGN") == lite.stats("ALIGN")
    assert history.stats("NONE") is None
    assert history.processes() == lite.processes() == ["ALIGN", "SORT"]
    assert history.cpu_use() == lite.cpu_use()
    cursor, stored = history.attempts()
    assert stored == lite.attempts()[1]
    assert history.attempts(cursor) == (cursor, [])
    history.record(records[:1])  # a replay replaces itself and comes back once more
    assert history.count() == 3
    assert [r.task_id for r in history.attempts(cursor)[1]] == ["1"]


def _write_at_once(url: str, *, runs: int, batches: int, size: int) -> None:
    """``runs`` writers, each its own connection, storing ``batches`` x ``size`` attempts."""

    def run(name: str) -> None:
        store = open_history(url)
        for batch in range(batches):
            store.record(
                TaskRecord(name, f"{batch}-{i}", "ALIGN", True, peak_memory=i + 1)
                for i in range(size)
            )
        store.close()

    writers = [threading.Thread(target=run, args=(f"run{n}",)) for n in range(runs)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()


def test_several_runs_writing_at_once_lose_nothing(postgres_url: str, history: History) -> None:
    _write_at_once(postgres_url, runs=4, batches=10, size=50)
    assert history.count() == 4 * 10 * 50
    _, records = history.attempts()
    assert len({(r.run_id, r.task_id) for r in records}) == 2000


def test_the_right_sizer_learns_from_it(history: History) -> None:
    history.record(
        TaskRecord("r", str(i), "ALIGN", True, peak_memory=(i + 1) * 10**7,
                   input_bytes=(i + 1) * 10**8, realtime=60.0)
        for i in range(50)
    )  # fmt: skip
    resolver = PredictiveResolver(history)
    answer = resolver.resolve(
        ResourceRequest(memory=10**11, process="ALIGN", input_bytes=5 * 10**8)
    )
    assert answer is not None and answer.memory < 50 * 10**7


def test_an_unreachable_server_is_a_clear_error_that_a_run_outlives(postgres_url: str) -> None:
    """Down is not malformed: a HistoryError (a run warns and records later), not exit 2."""
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(HistoryError, match=r"history: .* expected a reachable PostgreSQL"):
        open_history(url)


def test_a_run_starting_while_the_server_is_down_goes_on(postgres_url: str) -> None:
    """Four Snakemake runs share a server that restarts (tests/faults/test_postgres_restart):
    one that starts while it is down must run its jobs, not exit 1 before the first."""
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    warnings: list[str] = []
    with Session(Config({"backend": "local", "history": url}), "snakemake",
                 warn=warnings.append) as session:  # fmt: skip
        assert session.history is None
        assert any("could not be reached" in w and "once the history opens" in w
                   for w in warnings), warnings  # fmt: skip


def test_a_reader_following_concurrent_writers_misses_nothing(
    postgres_url: str, history: History
) -> None:
    """The incremental reader (the right-sizer's) sees every attempt exactly once.

    Writers whose transactions overlap would commit sequence numbers out of order, and a
    reader that had already passed a number would skip the row committed late.
    """
    done = threading.Event()
    seen: list[tuple[str, str]] = []

    def follow() -> None:
        cursor = 0
        while True:
            finished = done.is_set()
            cursor, records = history.attempts(cursor)
            seen.extend((r.run_id, r.task_id) for r in records)
            if finished and not records:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    _write_at_once(postgres_url, runs=4, batches=20, size=25)
    done.set()
    reader.join()
    assert len(seen) == len(set(seen)) == 4 * 20 * 25


def test_the_password_stays_out_of_the_error(postgres_url: str) -> None:
    url = f"postgresql://postgres:s3cret@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(HistoryError) as caught:
        open_history(url)
    assert "s3cret" not in str(caught.value)
    assert "postgres:***@127.0.0.1" in str(caught.value)


def test_an_older_table_gains_the_later_columns(postgres_url: str) -> None:
    psycopg = require("psycopg", "the PostgreSQL history needs the postgresql extra")
    older = _sql.schema("postgresql")
    for column in _sql.ADDED_COLUMNS:  # the table as the first release wrote it
        older = "\n".join(line for line in older.splitlines()
                          if not line.startswith(f"    {column} "))  # fmt: skip
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP TABLE IF EXISTS task_history")
        admin.execute(older)
        admin.execute("INSERT INTO task_history (run_id, task_id, attempt, process, succeeded) "
                      "VALUES ('r', 't', 1, 'ALIGN', TRUE)")  # fmt: skip
    store = open_history(postgres_url)
    try:
        store.record([TaskRecord("r", "u", "ALIGN", True, cpu_time=1.5, backend="slurm")])
        rows = store.records()
        # the summaries a dropped table left beside it are folded again from this one's
        totals, summaries = store.summaries()
        assert totals.attempts == 2 and [(s.process, s.attempts) for s in summaries] == [
            ("ALIGN", 2)
        ]  # fmt: skip
    finally:
        store.close()
    assert [(r.task_id, r.cause, r.cpu_time, r.backend) for r in rows] == [
        ("t", None, None, ""), ("u", None, 1.5, "slurm")
    ]  # fmt: skip


def _open_behind_a_creator(postgres_url: str, sessions_ended: int) -> BaseException | History:
    """Open the history while another run holds the lock that creates the tables, ending
    the opener's session ``sessions_ended`` times while it waits (what a fast shutdown
    does to it), then let the creator go: what the opener gave."""
    psycopg = require("psycopg", "the PostgreSQL history needs the postgresql extra")
    opened: list[BaseException | History] = []
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (_CREATE,))

        def open_it() -> None:
            try:
                opened.append(open_history(postgres_url))
            except BaseException as exc:  # the test reads what it was
                opened.append(exc)

        opener = threading.Thread(target=open_it)
        opener.start()
        waiting = (
            "SELECT pid FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        for _ in range(sessions_ended):
            for _ in range(400):
                pids = [pid for (pid,) in admin.execute(waiting).fetchall()]
                if pids or not opener.is_alive():
                    break
                opener.join(0.05)
            assert pids, "the opener never waited on the tables' lock"
            for pid in pids:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        opener.join(2)
        admin.execute("SELECT pg_advisory_unlock(%s)", (_CREATE,))
    opener.join(30)
    (result,) = opened
    return result


def test_a_session_ended_while_the_tables_are_checked_is_connected_again(
    postgres_url: str,
) -> None:
    """pg_ctl stop -m fast (or a terminated backend) ends the session of a run that waits
    to check the tables behind another run creating them: it connects again once, as a
    call on an open history does, and opens the history."""
    result = _open_behind_a_creator(postgres_url, 1)
    assert isinstance(result, History), repr(result)
    result.close()


def test_a_server_stopping_while_the_tables_are_checked_is_a_history_error(
    postgres_url: str,
) -> None:
    """Ended again after connecting again: a HistoryError a run outlives, not a psycopg
    traceback (under load in CI a Snakemake run started that way exited 1)."""
    result = _open_behind_a_creator(postgres_url, 2)
    assert isinstance(result, HistoryError), repr(result)
    assert "terminating connection" in str(result)
