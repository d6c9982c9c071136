"""The run session: one config wires platform, backend, resolvers, history and labels; it
records every finished attempt through one path and closes what it opened."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from seqera_core.backends import JobHandle, JobSpec, JobState, JobStatus, LocalBackend
from seqera_core.config import Config, load_config
from seqera_core.errors import HistoryError, UsageError
from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import HttpResolver, PredictiveResolver
from seqera_core.session import Finished, Session
from seqera_core.units import GIB, MIB

PLATFORM = Path(__file__).parents[2] / "shared" / "platforms" / "slurm-cluster.yaml"


def _config(tmp_path: Path, environ: dict[str, str], text: str = "") -> Config:
    (tmp_path / "seqera.yaml").write_text(text)
    return load_config(environ=environ, cwd=tmp_path, home=tmp_path / "home")


def test_everything_comes_from_one_config(tmp_path: Path) -> None:
    text = f"platform: {PLATFORM}\nhistory: {tmp_path / 'h.db'}\nlabels: {{team: genomics}}\n"
    environ = {"SEQERA_RESOLVER_URL": "http://127.0.0.1:9", "SEQERA_LABELS": "project=x"}
    with Session(_config(tmp_path, environ, text), "snakemake", metadata={"user": "u"}) as one:
        # nobody chose a backend: the platform's scheduler
        assert one.backend_name == "slurm" and one.entry.batch
        assert one.platform is not None and one.platform.name == "example-hpc"
        kinds = sorted(type(r).__name__ for r in one.resolvers)
        assert "HttpResolver" in kinds and "PredictiveResolver" in kinds
        assert one.history is not None and one.history.path == str(tmp_path / "h.db")
        assert one.labels == {
            "snakemake/engine": "snakemake",
            "snakemake/user": "u",
            "team": "genomics",
            "project": "x",
        }


def test_flags_win_and_the_backend_opens_only_when_used(tmp_path: Path) -> None:
    config = load_config(
        environ={"SEQERA_BACKEND": "slurm"}, cwd=tmp_path, home=tmp_path,
        flags={"backend": "local", "local.cpus": "3"},
    )  # fmt: skip
    session = Session(config, "seqera-run", work_dir=tmp_path / "logs")
    assert session.backend_name == "local" and session._backend is None
    backend = session.backend
    assert isinstance(backend, LocalBackend) and backend.capacity_cpus == 3
    assert session.work_dir == tmp_path / "logs"
    session.close()
    session.close()  # idempotent
    with pytest.raises(UsageError, match="closed"):
        _ = session.backend


def test_close_closes_every_resolver_and_the_history(tmp_path: Path) -> None:
    config = Config({"backend": "local", "history": str(tmp_path / "h.db"),
                     "resolver.url": "http://127.0.0.1:9"})  # fmt: skip
    session = Session(config, "cwltool")
    http = next(r for r in session.resolvers if isinstance(r, HttpResolver))
    assert any(isinstance(r, PredictiveResolver) for r in session.resolvers)
    session.close()
    assert http._client.is_closed
    with pytest.raises(HistoryError, match="closed database"):
        session.history.count()  # type: ignore[union-attr]


def _status(native_id: str, state: JobState = JobState.SUCCEEDED, **more: object) -> JobStatus:
    return JobStatus(JobHandle("local", native_id), state, **more)  # type: ignore[arg-type]


def test_every_field_the_engine_knew_is_recorded(tmp_path: Path) -> None:
    config = Config({"backend": "local", "history": str(tmp_path / "h.db")})
    request = ResourceRequest(cpus=2, memory=GIB, time=60, process="align", attempt=2,
                              input_bytes=123, container="img:1")  # fmt: skip
    with Session(config, "snakemake", run_id="r1") as session:
        done = _status("7", peak_memory_bytes=100 * MIB, wall_seconds=1.5)
        killed = _status("8", JobState.FAILED, out_of_memory=True, exit_code=137)
        cancelled = _status("9", JobState.CANCELLED)
        running = _status("10", JobState.RUNNING)
        items = [Finished(request, s, task_id=f"t{s.handle.native_id}")
                 for s in (done, killed, cancelled, running)]  # fmt: skip
        assert session.record(items) == 3  # an unfinished job is not an attempt yet
        rows = {r.task_id: r for r in session.history.records(["r1"])}  # type: ignore[union-attr]
    first = rows["t7"]
    assert (first.attempt, first.input_bytes, first.container) == (2, 123, "img:1")
    assert (first.engine, first.peak_memory, first.cause) == ("snakemake", 100 * MIB, None)
    assert rows["t8"].cause == "out_of_memory" and rows["t9"].cause == "cancelled"


def test_a_locked_history_never_fails_and_loses_no_row(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    open_history(path).close()
    config = Config({"backend": "local", "history": str(path)})
    warnings: list[str] = []
    session = Session(config, "seqera-run", warn=warnings.append)
    session.history._db.execute("PRAGMA busy_timeout = 100")  # type: ignore[union-attr]
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another writer holds the database
    request = ResourceRequest(process="p")
    assert session.record([Finished(request, _status("1"))]) == 0
    assert session.record([Finished(request, _status("2"))]) == 0
    assert session.unrecorded == 2 and "will try again" in warnings[-1]
    blocker.execute("COMMIT")
    assert session.record([Finished(request, _status("3"))]) == 3
    assert session.unrecorded == 0
    blocker.execute("BEGIN EXCLUSIVE")
    session.record([Finished(request, _status("4"))])
    blocker.execute("COMMIT")
    session.close()  # the last waiting row goes at close
    assert open_history(path).count() == 4


def test_close_waits_for_a_history_that_comes_back(tmp_path: Path) -> None:
    # Issue 20: a run that ends while a shared history restarts kept its rows in memory
    # and dropped them with close()'s one try.
    path = tmp_path / "h.db"
    open_history(path).close()
    warnings: list[str] = []
    session = Session(Config({"backend": "local", "history": str(path)}), "seqera-run",
                      warn=warnings.append)  # fmt: skip
    session.history._db.execute("PRAGMA busy_timeout = 100")  # type: ignore[union-attr]
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN EXCLUSIVE")
    session.record([Finished(ResourceRequest(process="p"), _status("1"))])
    assert session.unrecorded == 1
    threading.Timer(1.0, blocker.execute, ("COMMIT",)).start()
    session.close()
    assert open_history(path).count() == 1
    assert "trying again for up to" in warnings[-1]


def test_the_summary_and_report_count_rows_that_waited_for_the_store(tmp_path: Path) -> None:
    # cwltool-seqera under a locked history (tests/faults/test_history_locked.py) printed
    # "15 tasks" for 16: the last row still waited when the summary read the store.
    path = tmp_path / "h.db"
    open_history(path).close()
    session = Session(Config({"backend": "local", "history": str(path)}), "seqera-run",
                      warn=lambda _: None)  # fmt: skip
    session.history._db.execute("PRAGMA busy_timeout = 100")  # type: ignore[union-attr]
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    request = ResourceRequest(process="p", memory=GIB)
    session.record([Finished(request, _status(str(n), peak_memory_bytes=MIB)) for n in (1, 2)])
    assert session.unrecorded == 2
    blocker.execute("COMMIT")  # released before the run's end
    lines = session.summary()
    assert lines and lines[0].startswith("2 tasks"), lines
    assert session.unrecorded == 0
    blocker.execute("BEGIN EXCLUSIVE")
    session.record([Finished(request, _status("3", peak_memory_bytes=MIB))])
    blocker.execute("COMMIT")
    session.write_report(tmp_path / "report.html")
    assert session.unrecorded == 0 and open_history(path).count() == 3
    session.close()


def test_a_real_job_through_the_session(tmp_path: Path) -> None:
    config = Config({"backend": "local", "history": str(tmp_path / "h.db")})
    with Session(config, "seqera-run", work_dir=tmp_path) as session:
        prepared = session.prepare(ResourceRequest(cpus=1, memory=64 * MIB, process="echo"))
        spec = JobSpec("echo", ["sh", "-c", "echo $SEQERA_LABEL_SEQERA_RUN_ENGINE"],
                       prepared.request, labels=prepared.labels)  # fmt: skip
        (handle,) = session.submit([spec])
        deadline = time.monotonic() + 20
        while not (status := session.poll([handle])[0]).state.finished:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        session.record([Finished(prepared.request, status)])
        assert session.logs(handle) == "seqera-run\n"
    (row,) = open_history(tmp_path / "h.db").records()
    assert row.succeeded and row.process == "echo" and row.memory == 64 * MIB
    assert row.realtime is not None and row.engine == "seqera-run"


def test_the_default_history_is_recorded_to_but_never_sized_from(tmp_path: Path) -> None:
    default = tmp_path / "home" / ".seqera" / "history.db"
    with Session(_config(tmp_path, {}), "snakemake", record_to=str(default)) as session:
        assert session.history is not None and default.exists()
        assert not any(isinstance(r, PredictiveResolver) for r in session.resolvers)
    named = _config(tmp_path, {"SEQERA_HISTORY": str(tmp_path / "named.db")})
    with Session(named, "snakemake", record_to=str(default)) as session:
        assert any(isinstance(r, PredictiveResolver) for r in session.resolvers)


def test_a_default_history_that_cannot_open_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    warnings: list[str] = []
    where = str(tmp_path / "file" / "history.db")  # under a file: no directory there
    with Session(_config(tmp_path, {}), "cwltool", record_to=where, warn=warnings.append) as s:
        assert s.history is None
    assert len(warnings) == 1 and "not recorded" in warnings[0]


def test_an_attempt_that_ends_after_the_run_closed_is_said_not_raised(tmp_path: Path) -> None:
    # cwltool-seqera under SIGTERM: a worker recorded its cancelled job after the session
    # had closed its ledger, and died with "I/O operation on closed file"
    path = tmp_path / "h.db"
    warnings: list[str] = []
    session = Session(Config({"backend": "local", "history": str(path)}), "cwltool",
                      ledger=tmp_path / "ledger", warn=warnings.append)  # fmt: skip
    session.close()
    assert session.record([Finished(ResourceRequest(process="p"), _status("1"))]) == 0
    session.settled([_status("2").handle])
    assert "after the run closed" in warnings[-1]
    assert open_history(path).count() == 0


def test_a_local_job_of_a_run_killed_before_its_end_is_adopted_by_the_next(
    tmp_path: Path,
) -> None:
    # The run's local backend keeps its jobs beside the ledger: the next run over the same
    # directory finds the one a dead run left, by key, and sends nothing.
    config = Config({"backend": "local"})
    gate = tmp_path / "gate"
    command = (
        "sh",
        "-c",
        f"echo ran >> {tmp_path / 'ran'}; while [ ! -e {gate} ]; do sleep 0.05; done",
    )
    spec = JobSpec("j", command, ResourceRequest(memory=64 * MIB), key="k-1")
    dead = Session(config, "seqera-run", ledger=tmp_path / "runs", run_id="dead")
    (handle,) = dead.submit([spec])
    assert (tmp_path / "local-jobs" / handle.native_id / "job.json").exists()
    dead.backend.detach()  # type: ignore[attr-defined]
    dead._resume._ledger._lock.close()  # type: ignore[union-attr]  # as a SIGKILL drops it
    with Session(config, "seqera-run", ledger=tmp_path / "runs", run_id="next") as again:
        (adopted,) = again.submit([spec])
        assert adopted == handle
        gate.touch()
        deadline = time.monotonic() + 30
        while not (status := again.poll([adopted])[0]).state.finished:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert status.state is JobState.SUCCEEDED
    assert (tmp_path / "ran").read_text() == "ran\n"
