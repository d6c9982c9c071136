"""Runs and tasks dispatched to the local backend by a real sidecar process, across restarts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from .conftest import Served, start_sidecar, stop_sidecar

TOKEN = "runs-t0ken"


def _wait(served: Served, run: str, task: str, states: set[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found: dict[str, Any] = httpx.get(f"{served.url}/v1/runs/{run}/tasks/{task}",
                                          headers=served.headers).json()  # fmt: skip
        if found["state"] in states:
            return found
        time.sleep(0.2)
    raise AssertionError(f"task {task} never reached {states}: {found}")


def test_tasks_run_report_and_survive_a_restart(tmp_path: Path) -> None:
    history, state = tmp_path / "history.db", tmp_path / "runs.db"
    extra = ("--backend", "local", "--state", str(state))
    process, served = start_sidecar(history, TOKEN, *extra)
    try:
        run = httpx.post(f"{served.url}/v1/runs", headers=served.headers,
                         json={"name": "demo", "labels": {"project": "rnaseq"}}).json()  # fmt: skip
        tasks = [
            {"name": "hello", "command": ["sh", "-c", "echo hello $SEQERA_LABEL_PROJECT "
                                          "${SEQERA_SIDECAR_TOKEN:-no-token}"],
             "resources": {"cpus": 1, "memory_bytes": 64 * 2**20, "process": "HELLO"},
             "labels": {"sample": "a"}},
            {"name": "fails", "command": ["sh", "-c", "exit 3"]},
            {"name": "sleeps", "command": ["sleep", "300"]},
        ]  # fmt: skip
        answer = httpx.post(f"{served.url}/v1/runs/{run['id']}/tasks", json={"tasks": tasks},
                            headers=served.headers)  # fmt: skip
        assert answer.status_code == 202, answer.text
        hello, fails, sleeps = (t["id"] for t in answer.json()["tasks"])
        done = _wait(served, run["id"], hello, {"succeeded"})
        assert done["resources"]["memory_bytes"] == 64 * 2**20 and done["backend"] == "local"
        logs = httpx.get(f"{served.url}/v1/runs/{run['id']}/tasks/{hello}/logs",
                         headers=served.headers).text  # fmt: skip
        # The run's labels reach the task's environment; the sidecar's token does not.
        assert logs == "hello rnaseq no-token\n"
        failed = _wait(served, run["id"], fails, {"failed"})
        assert failed["exit_code"] == 3
        running = _wait(served, run["id"], sleeps, {"running"})
    finally:
        stop_sidecar(process)
    # Restarted: finished tasks are as they were; the local job ran on and is re-adopted.
    process, served = start_sidecar(history, TOKEN, *extra)
    try:
        base = f"{served.url}/v1/runs/{run['id']}/tasks"
        again = httpx.get(f"{base}/{hello}", headers=served.headers).json()
        assert again["state"] == "succeeded" and again["exit_code"] == 0
        time.sleep(2)  # a few poll cycles of the new sidecar
        adopted = _wait(served, run["id"], sleeps, {"running"})
        assert adopted["native_id"] == running["native_id"]
        cancelled = httpx.post(f"{base}/{sleeps}/cancel", headers=served.headers).json()
        assert cancelled["state"] == "cancelled"
        # The finished tasks fed the history the resolver reads.
        resolved = httpx.post(f"{served.url}/v1/resources/resolve", json={"process": "HELLO"},
                              headers=served.headers)  # fmt: skip
        assert resolved.status_code == 200
    finally:
        stop_sidecar(process)


def test_cancel_terminate_and_faults(tmp_path: Path) -> None:
    process, served = start_sidecar(tmp_path / "h.db", TOKEN, "--backend", "local",
                                    "--state", str(tmp_path / "runs.db"))  # fmt: skip
    try:
        http = served.client()
        run = http.post("/v1/runs", json={"name": "r"}).json()["id"]
        base = f"/v1/runs/{run}"
        sleeper = {"name": "s", "command": ["sleep", "300"]}
        first, second = (t["id"] for t in http.post(
            f"{base}/tasks", json={"tasks": [sleeper, sleeper]}).json()["tasks"])  # fmt: skip
        assert http.post(f"{base}/tasks/{first}/cancel").json()["state"] == "cancelled"
        terminated = http.post(f"{base}/terminate").json()
        assert terminated["terminated"] is True
        assert http.get(f"{base}/tasks/{second}").json()["state"] == "cancelled"
        late = http.post(f"{base}/tasks", json={"tasks": [sleeper]})
        assert late.status_code == 409
        missing = http.get("/v1/runs/nope/tasks/nope")
        assert missing.status_code == 404
        fresh = http.post("/v1/runs", json={"name": "r2"}).json()["id"]
        base = f"/v1/runs/{fresh}"
        bad = http.post(f"{base}/tasks", json={"tasks": [{"command": "echo hi"}]})
        assert bad.status_code == 400 and "$.tasks[0].command" in bad.json()["problems"][0]
        too_many = http.post(f"{base}/tasks", json={"tasks": [sleeper] * 101})
        assert too_many.status_code == 400
    finally:
        stop_sidecar(process)
