"""The sidecar killed with SIGKILL mid-submit, restarted, the client retrying: every task
runs exactly once (counted from the side effects the tasks leave, not from any log).

Crash points (``seqera_sidecar.crashpoints``): ``row-written`` (rows stored, the backend
not called) and ``submitted`` (the backend took the jobs, handles not stored), each hit
three times, on the local backend and on the real one-node Slurm (where the restarted
sidecar finds each job by its submission key, ``Backend.find``: squeue by comment); and
kills at random moments while tasks run. No task may end ``unknown``. The client does what a
real one does: on a dropped connection or a 503 it sends the same request again (same
run, same task ids).
"""

from __future__ import annotations

import importlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

TOKEN = "fault-t0ken"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
TASKS, BATCH, CRASHES = 12, 2, 3


class Sidecar:
    """``seqera-sidecar serve --backend <backend>`` on a free port, restartable."""

    def __init__(self, root: Path, backend: str = "local") -> None:
        self.root = root
        self.backend = backend
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.starts = 0

    def start(self, crash_at: str | None = None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {**os.environ, "SEQERA_SIDECAR_TOKEN": TOKEN}
        env.pop("SEQERA_SIDECAR_CRASH_AT", None)
        if crash_at:
            env["SEQERA_SIDECAR_CRASH_AT"] = crash_at
        argv = [sys.executable, "-m", "seqera_sidecar", "serve", "--port", str(port),
                "--history", str(self.root / "history.db"), "--backend", self.backend,
                "--state", str(self.root / "runs.db")]  # fmt: skip
        log = open(self.root / f"sidecar-{self.starts}.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(argv, stderr=log, stdout=log, text=True, env=env)
        log.close()
        self.starts += 1
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the sidecar exited while starting"
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError("the sidecar did not answer /health in 60 s")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, f"{self.url}{path}", headers=HEADERS, timeout=30, **kwargs)


def _task(effects: Path, n: int) -> dict[str, Any]:
    # One line per run of the task: the count the test checks.
    line = f'echo "${{SLURM_JOB_ID:-$SEQERA_JOB_ID}}" >> {effects}/t{n}; sleep 0.1'
    return {"id": f"t{n}", "name": f"t{n}", "command": ["sh", "-c", line]}


def _submit_until_accepted(
    sidecar: Sidecar, run: str, tasks: list[Any], plan: dict[str, Any]
) -> None:
    while True:
        try:
            answer = sidecar.call("POST", f"/v1/runs/{run}/tasks", json={"tasks": tasks})
            if answer.status_code == 202:
                return
            assert answer.status_code == 503, answer.text  # the backend failed: retry
        except httpx.TransportError:
            pass  # the sidecar died under the request
        if sidecar.process is not None and sidecar.process.poll() is not None:
            plan["injected"] += 1
            again = plan["point"] if plan["injected"] < CRASHES else None
            sidecar.start(again)


def _settle(sidecar: Sidecar, run: str) -> dict[str, str]:
    states: dict[str, str] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        states = {f"t{n}": sidecar.call("GET", f"/v1/runs/{run}/tasks/t{n}").json()["state"]
                  for n in range(TASKS)}  # fmt: skip
        # "unknown" is not an end: a task left unknown shows as lost when time runs out
        if all(s in ("succeeded", "failed", "cancelled") for s in states.values()):
            return states
        time.sleep(0.3)
    return states


def _tally(effects: Path, states: dict[str, str]) -> dict[str, int]:
    counts = {f"t{n}": 0 for n in range(TASKS)}
    for path in effects.iterdir():
        counts[path.name] = len(path.read_text().splitlines())
    return {"submitted": TASKS, "run": sum(c >= 1 for c in counts.values()),
            "lost": sum(c == 0 or states.get(t) != "succeeded" for t, c in counts.items()),
            "twice": sum(c > 1 for c in counts.values())}  # fmt: skip


def _record(
    request: pytest.FixtureRequest, fault: str, injected: int, tally: dict[str, int], k: str
) -> None:
    """A row of the suite's fault table (``fault_table`` in tests/faults/conftest.py)."""
    print(f"\n| {fault} | {injected} | {tally['submitted']} | {tally['run']} | "
          f"{tally['lost']} | {tally['twice']} |")  # fmt: skip
    try:
        table = request.getfixturevalue("fault_table")
    except pytest.FixtureLookupError:
        return  # run outside the suite's conftest: the printed row is all there is
    row = importlib.import_module(type(table).__module__).FaultRow
    command = f"uvx nox -s faults -- tests/faults/test_sidecar_crash.py -k '{k}'"
    table.rows.append(row(fault, injected, TASKS, tally["submitted"], tally["run"],
                          tally["lost"], tally["twice"], command))  # fmt: skip


@pytest.mark.parametrize(
    ("backend", "point"),
    [("local", "row-written"), ("local", "submitted"), ("slurm", "row-written"),
     ("slurm", "submitted")],
)  # fmt: skip
def test_sigkill_mid_submit_runs_every_task_exactly_once(
    tmp_path: Path, backend: str, point: str, request: pytest.FixtureRequest
) -> None:
    if backend == "slurm":
        request.getfixturevalue("slurm")  # the real one-node cluster; SLURM_CONF set
    effects = tmp_path / "effects"
    effects.mkdir()
    sidecar = Sidecar(tmp_path, backend)
    # Each sidecar life dies the second time it passes the point.
    sidecar.start(f"{point}:2")
    plan: dict[str, Any] = {"point": f"{point}:2", "injected": 0}
    try:
        run = sidecar.call("POST", "/v1/runs", json={"name": "faults"}).json()["id"]
        for start in range(0, TASKS, BATCH):
            tasks = [_task(effects, n) for n in range(start, start + BATCH)]
            _submit_until_accepted(sidecar, run, tasks, plan)
        states = _settle(sidecar, run)
        tally = _tally(effects, states)
    finally:
        sidecar.stop()
    where = {"row-written": "after its rows, before submit",
             "submitted": "after submit, before storing handles"}[point]  # fmt: skip
    _record(request, f"sidecar ({backend}) kill -9 {where}", plan["injected"], tally,
            f"{backend}-{point}")  # fmt: skip
    assert plan["injected"] == CRASHES
    assert "unknown" not in states.values(), states
    assert tally == {"submitted": TASKS, "run": TASKS, "lost": 0, "twice": 0}


def test_sigkill_at_random_moments_while_tasks_run(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    effects = tmp_path / "effects"
    effects.mkdir()
    sidecar = Sidecar(tmp_path)
    sidecar.start()
    chance = random.Random(20)
    killed = 0
    try:
        run = sidecar.call("POST", "/v1/runs", json={"name": "faults"}).json()["id"]
        plan: dict[str, Any] = {"point": None, "injected": CRASHES}  # no crash points
        for start in range(0, TASKS, BATCH):
            tasks = [_task(effects, n) for n in range(start, start + BATCH)]
            _submit_until_accepted(sidecar, run, tasks, plan)
            if start // BATCH % 2 == 1:  # every other batch: killed a moment later
                time.sleep(chance.uniform(0, 0.4))
                sidecar.kill()
                killed += 1
                sidecar.start()
        tally = _tally(effects, _settle(sidecar, run))
    finally:
        sidecar.stop()
    _record(request, "sidecar kill -9 at random moments while its tasks run", killed, tally,
            "random")  # fmt: skip
    assert tally == {"submitted": TASKS, "run": TASKS, "lost": 0, "twice": 0}
