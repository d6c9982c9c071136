"""The dispatcher in-process over the real local backend: retries, partial failures,
rows left by a crash, a locked history and a failing poll loop."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from seqera_core.backends import (
    Backend,
    JobHandle,
    JobSpec,
    LocalBackend,
    SchedulerError,
    SubmitError,
)
from seqera_core.config import Config
from seqera_core.errors import UsageError
from seqera_core.history import open_history
from seqera_core.session import Session
from seqera_sidecar import create_app
from seqera_sidecar.runs import RunStore
from seqera_sidecar.submission import task_spec

AUTH = {"Authorization": "Bearer t0ken"}


def _task(directory: Path, task_id: str, **extra: Any) -> dict[str, Any]:
    # The side effect counted: one line per time the task ran.
    command = f"echo ran >> {directory / task_id}"
    return {"id": task_id, "name": task_id, "command": ["sh", "-c", command], **extra}


def _runs(directory: Path, task_id: str) -> int:
    path = directory / task_id
    return len(path.read_text().splitlines()) if path.exists() else 0


def _wait(client: TestClient, run: str, ids: Sequence[str], states: set[str]) -> list[Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tasks = [client.get(f"/v1/runs/{run}/tasks/{i}", headers=AUTH).json() for i in ids]
        if all(t["state"] in states for t in tasks):
            return tasks
        time.sleep(0.1)
    raise AssertionError(f"never all {states}: {tasks}")


class _HalfSent(LocalBackend):
    """Fault injection: the first time, one job reaches the backend, then the call fails."""

    failed = False

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        if self.failed:
            return super().submit(jobs)
        self.failed = True
        sent = super().submit(jobs[:1])
        raise SubmitError("sbatch: error: Socket timed out on send/recv operation", None, sent)


class _NoLookup(LocalBackend):
    """A backend that cannot look jobs up by submission key: the contract's default."""

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        return Backend.find(self, keys)


class _Given(Session):
    """A session over a backend built by the test (a fault injector around a real one)."""

    def __init__(self, backend: Backend, history: Path | None = None) -> None:
        values = {"backend": "local"} | ({"history": str(history)} if history else {})
        super().__init__(Config(values), "seqera-sidecar")
        self.given = backend

    @property
    def backend(self) -> Backend:
        return self.given


def _dispatcher(backend: Backend, path: Path, history: Path | None = None) -> RunStore:
    return RunStore(_Given(backend, history), path, interval=0.1)


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    directory = tmp_path / "effects"
    directory.mkdir()
    return directory


def _serve(dispatcher: RunStore, tmp_path: Path) -> TestClient:
    history = dispatcher.session.history or open_history(tmp_path / "h.db")
    return TestClient(create_app(history, token="t0ken", dispatcher=dispatcher))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    backend = LocalBackend(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        yield client


def test_a_retried_task_runs_once(client: TestClient, effects: Path) -> None:
    run = client.post("/v1/runs", json={"name": "r"}, headers=AUTH).json()["id"]
    tasks = [_task(effects, f"t{n}") for n in range(3)]
    first = client.post(f"/v1/runs/{run}/tasks", json={"tasks": tasks}, headers=AUTH)
    again = client.post(f"/v1/runs/{run}/tasks", json={"tasks": tasks}, headers=AUTH)
    assert first.status_code == again.status_code == 202
    native = [t["native_id"] for t in first.json()["tasks"]]
    assert [t["native_id"] for t in again.json()["tasks"]] == native
    _wait(client, run, ["t0", "t1", "t2"], {"succeeded"})
    assert [_runs(effects, f"t{n}") for n in range(3)] == [1, 1, 1]
    changed = [_task(effects, "t0", environment={"X": "1"})]
    conflict = client.post(f"/v1/runs/{run}/tasks", json={"tasks": changed}, headers=AUTH)
    assert conflict.status_code == 409 and "t0" in conflict.json()["problems"][0]
    twice = client.post(f"/v1/runs/{run}/tasks", json={"tasks": [tasks[0], tasks[0]]},
                        headers=AUTH)  # fmt: skip
    assert twice.status_code == 400
    # Another run may use the same ids.
    other = client.post("/v1/runs", json={"name": "o"}, headers=AUTH).json()["id"]
    assert client.post(f"/v1/runs/{other}/tasks", json={"tasks": [_task(effects, "u")]},
                       headers=AUTH).status_code == 202  # fmt: skip


class _HalfNoLookup(_HalfSent):
    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        return Backend.find(self, keys)


@pytest.mark.parametrize("backend_class", [_HalfSent, _HalfNoLookup])
def test_a_submit_error_keeps_what_went_out(
    tmp_path: Path, effects: Path, backend_class: type[LocalBackend]
) -> None:
    backend = backend_class(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        run = client.post("/v1/runs", json={"name": "r"}, headers=AUTH).json()["id"]
        tasks = {"tasks": [_task(effects, "a"), _task(effects, "b")]}
        failed = client.post(f"/v1/runs/{run}/tasks", json=tasks, headers=AUTH)
        assert failed.status_code == 503
        assert [t["id"] for t in failed.json()["tasks"]] == ["a"]  # kept, and said so
        assert client.get(f"/v1/runs/{run}/tasks/b", headers=AUTH).status_code == 404
        # The client retries the same request: "a" is answered from its row, "b" goes out.
        retried = client.post(f"/v1/runs/{run}/tasks", json=tasks, headers=AUTH)
        assert retried.status_code == 202
        assert retried.json()["tasks"][0]["native_id"] == failed.json()["tasks"][0]["native_id"]
        _wait(client, run, ["a", "b"], {"succeeded"})
    assert _runs(effects, "a") == _runs(effects, "b") == 1


def _crashed_after_rows(
    tmp_path: Path, effects: Path, *, submitted: bool = False, **extra: Any
) -> str:
    """Rows written, the backend never called (or, ``submitted``, called and its handles
    not stored), the process gone (its files left as is, its jobs running on)."""
    backend = LocalBackend(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dying = RunStore(_Given(backend), tmp_path / "runs.db")
    run = dying.create_run("r", {})
    parsed = [task_spec(0, _task(effects, "x", **extra))]
    _, fresh = dying._claim(run["id"], {}, parsed)
    if submitted:
        backend.submit([spec for _, _, spec in fresh])
        backend.detach()
    dying._db.close()
    os.close(dying._lockfd)  # as the kernel does for a killed process
    return str(run["id"])


def test_a_row_left_by_a_crash_is_found_or_sent_once(tmp_path: Path, effects: Path) -> None:
    run = _crashed_after_rows(tmp_path, effects)
    backend = LocalBackend(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        assert client.get(f"/v1/runs/{run}/tasks/x", headers=AUTH).json()["state"] in {
            "submitting", "pending", "running", "succeeded"}  # fmt: skip
        _wait(client, run, ["x"], {"succeeded"})
        assert dispatcher.resubmitted == 1
    assert _runs(effects, "x") == 1


def test_without_lookup_a_row_left_by_a_crash_is_never_sent_twice(
    tmp_path: Path, effects: Path
) -> None:
    run = _crashed_after_rows(tmp_path, effects)
    backend = _NoLookup(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        task = _wait(client, run, ["x"], {"unknown"})[0]
        assert "cannot look jobs up" in task["reason"]
    assert _runs(effects, "x") == 0


class _Unanswered(LocalBackend):
    """Fault injection: the first two look-ups fail as a scheduler that does not answer."""

    lookups = 0

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        self.lookups += 1
        if self.lookups <= 2:
            raise SchedulerError("squeue: error: Socket timed out on send/recv operation")
        return super().find(keys)


@pytest.mark.parametrize("submitted", [False, True])
def test_a_row_left_by_a_crash_waits_while_the_lookup_fails_then_runs_once(
    tmp_path: Path, effects: Path, submitted: bool
) -> None:
    run = _crashed_after_rows(tmp_path, effects, submitted=submitted)
    backend = _Unanswered(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        # no answer is no proof: the row is neither sent nor given up while it lasts
        _wait(client, run, ["x"], {"succeeded"})
        assert backend.lookups >= 3
        assert dispatcher.resubmitted == (0 if submitted else 1)  # adopted, or sent once
    assert _runs(effects, "x") == 1


def _hold_lock(path: Path, seconds: float) -> threading.Thread:
    held = threading.Event()

    def hold() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")  # a writer that never lets go (in WAL too)
        held.set()
        time.sleep(seconds)
        db.execute("ROLLBACK")
        db.close()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    return thread


def test_a_locked_history_delays_records_never_tasks(tmp_path: Path, effects: Path) -> None:
    backend = LocalBackend(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db", tmp_path / "h.db")
    history = dispatcher.session.history
    assert history is not None
    with _serve(dispatcher, tmp_path) as client:
        run = client.post("/v1/runs", json={"name": "r"}, headers=AUTH).json()["id"]
        holder = _hold_lock(tmp_path / "h.db", 7)
        client.post(f"/v1/runs/{run}/tasks", json={"tasks": [_task(effects, "h")]}, headers=AUTH)
        assert _wait(client, run, ["h"], {"succeeded", "failed"})[0]["state"] == "succeeded"
        # Meanwhile /health answers at once: nothing waits for the store on the event loop.
        started = time.monotonic()
        assert client.get("/health").status_code == 200
        assert time.monotonic() - started < 1
        holder.join()
        deadline = time.monotonic() + 20
        while history.count() == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert history.count() == 1 and dispatcher.history_failures >= 1
        metrics = client.get("/metrics", headers=AUTH).text
        assert "seqera_sidecar_history_failures_total" in metrics


def test_a_failing_poll_loop_is_degraded_then_recovers(tmp_path: Path, effects: Path) -> None:
    backend = LocalBackend(work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        run = client.post("/v1/runs", json={"name": "r"}, headers=AUTH).json()["id"]
        slow = {"id": "s", "command": ["sleep", "30"]}
        client.post(f"/v1/runs/{run}/tasks", json={"tasks": [slow]}, headers=AUTH)
        _wait(client, run, ["s"], {"running"})
        holder = _hold_lock(tmp_path / "runs.db", 6)  # "database is locked" after 5 s
        deadline = time.monotonic() + 20
        while client.get("/health").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        degraded = client.get("/health")
        assert degraded.status_code == 503 and degraded.json()["status"] == "degraded"
        assert "locked" in degraded.json()["poller"]["last_error"]
        holder.join()
        while client.get("/health").status_code != 200 and time.monotonic() < deadline + 20:
            time.sleep(0.2)
        assert client.get("/health").json()["poller"]["failures"] >= 1
        assert "seqera_sidecar_poll_failures_total" in client.get("/metrics", headers=AUTH).text
        client.post(f"/v1/runs/{run}/tasks/s/cancel", headers=AUTH)


def test_a_state_file_of_the_first_version_is_migrated(tmp_path: Path) -> None:
    # The schema before submission keys (task ids unique alone), as main's runs.py wrote it.
    old = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
    old.executescript("""
        CREATE TABLE runs (id TEXT PRIMARY KEY, name TEXT NOT NULL, labels TEXT NOT NULL,
                           created REAL NOT NULL, terminated REAL);
        CREATE TABLE tasks (id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL, process TEXT, state TEXT NOT NULL, exit_code INTEGER,
            reason TEXT, attempts INTEGER NOT NULL DEFAULT 1, resources TEXT NOT NULL,
            handle TEXT, created REAL NOT NULL, updated REAL NOT NULL);
        CREATE INDEX tasks_active ON tasks (state);
        INSERT INTO runs VALUES ('r1', 'old', '{}', 0, NULL);
        INSERT INTO tasks VALUES ('t1', 'r1', 'done', 'P', 'succeeded', 0, NULL, 1, '{}',
            '{"backend": "local", "native_id": "x.1"}', 0, 0);
    """)
    old.close()
    (tmp_path / "runs.db").chmod(0o644)
    dispatcher = RunStore(_Given(LocalBackend(state=tmp_path / "records")), tmp_path / "runs.db")
    try:
        task = dispatcher.task("r1", "t1")
        assert task["state"] == "succeeded" and task["native_id"] == "x.1"
        assert oct((tmp_path / "runs.db").stat().st_mode & 0o777) == "0o600"
    finally:
        dispatcher.stop()
    with pytest.raises(UsageError, match="in use by another sidecar"):
        first = RunStore(_Given(LocalBackend()), tmp_path / "runs.db")
        try:
            RunStore(_Given(LocalBackend()), tmp_path / "runs.db")
        finally:
            first.stop()


def test_a_row_left_by_a_crash_that_can_no_longer_fit_fails_with_the_reason(
    tmp_path: Path, effects: Path
) -> None:
    run = _crashed_after_rows(tmp_path, effects, resources={"cpus": 2})
    backend = LocalBackend(cpus=1, work_dir=tmp_path / "jobs", state=tmp_path / "records")
    dispatcher = _dispatcher(backend, tmp_path / "runs.db")
    with _serve(dispatcher, tmp_path) as client:
        task = _wait(client, run, ["x"], {"failed"})[0]
        assert task["reason"].startswith("cannot be submitted") and "cpus" in task["reason"]
        assert client.get("/health").status_code == 200  # not a poll loop failing for ever
    assert _runs(effects, "x") == 0
