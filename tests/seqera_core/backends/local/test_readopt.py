"""Re-adoption with the fork server on real processes: a backend that dies (SIGKILL, or
``detach``) leaves its forked jobs running, recorded in ``state``; the next backend on the
same directory finds them by key, sees them run, then end with their real exit status;
nothing runs twice, and the records go once their ends were reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from seqera_core.backends import LocalBackend
from seqera_core.backends.base import JobSpec, JobState
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from ....processes import ends
from .conftest import wait

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

# A job for the fork server to preload: it counts its start, waits for its gate, and
# exits with the code it is given.
JOB = """
import os, sys, time


def warm():
    pass


if __name__ == "__main__":
    name, code = sys.argv[1], int(sys.argv[2])
    with open(os.path.join("..", "starts"), "a") as out:
        print(name, os.getpid(), file=out)
    while not os.path.exists("gate"):
        time.sleep(0.02)
    sys.exit(code)
"""

# The backend that dies: starts the jobs as forks, says so, then waits to be killed.
DYING = """
import json, sys, time
from seqera_core.backends import LocalBackend
from seqera_core.backends.base import JobSpec, JobState
from seqera_core.models import ResourceRequest

state, logs, jobs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
backend = LocalBackend(cpus=4, work_dir=logs, state=state, preload=["gatejob:warm"])
specs = [JobSpec(j["name"], j["command"], ResourceRequest(memory=64 * 2**20),
                 workdir=j["workdir"], key=j["key"]) for j in jobs]
handles = backend.submit(specs)
deadline = time.monotonic() + 60
while not all(s.state is JobState.RUNNING for s in backend.poll(handles)):
    assert time.monotonic() < deadline, backend.poll(handles)
    time.sleep(0.02)
print(json.dumps({"server": backend._forker.pid, "forks": backend.calls["fork"],
                  "pids": [backend._jobs[h.native_id].pid for h in handles]}), flush=True)
time.sleep(600)
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "lib"
    directory.mkdir()
    (directory / "gatejob.py").write_text(textwrap.dedent(JOB))
    monkeypatch.setenv("PYTHONPATH", str(directory))  # the server and its jobs find it
    return directory


def spec(tmp_path: Path, name: str, code: int) -> JobSpec:
    workdir = tmp_path / "jobs" / name
    workdir.mkdir(parents=True, exist_ok=True)
    return JobSpec(
        name,
        (sys.executable, "-m", "gatejob", name, str(code)),
        ResourceRequest(memory=64 * MIB),
        workdir=str(workdir),
        key=f"key-{name}",
    )


def starts(tmp_path: Path) -> list[str]:
    path = tmp_path / "jobs" / "starts"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def open_gate(tmp_path: Path, name: str) -> None:
    (tmp_path / "jobs" / name / "gate").touch()


def killed_backend(tmp_path: Path, specs: Sequence[JobSpec]) -> dict[str, object]:
    """Start ``specs`` in a backend of another process, as forks, and SIGKILL it once
    they run; what it said (its fork server's pid, its forks, the jobs' pids)."""
    jobs = [{"name": s.name, "command": list(s.command), "workdir": s.workdir, "key": s.key}
            for s in specs]  # fmt: skip
    dying = subprocess.Popen(
        [sys.executable, "-c", DYING, str(tmp_path / "state"), str(tmp_path / "logs"),
         json.dumps(jobs)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert dying.stdout is not None
        said: dict[str, object] = json.loads(dying.stdout.readline())
    finally:
        dying.send_signal(signal.SIGKILL)
        dying.wait()
    return said


def test_forked_jobs_of_a_killed_backend_are_adopted_and_end_with_their_own_status(
    tmp_path: Path, module: Path
) -> None:
    specs = [spec(tmp_path, "ok", 0), spec(tmp_path, "three", 3), spec(tmp_path, "term", 0)]
    said = killed_backend(tmp_path, specs)
    assert said["forks"] == 3  # every job a fork of the server, with state on
    pids = said["pids"]
    assert isinstance(pids, list)
    with LocalBackend(cpus=4, work_dir=tmp_path / "logs", state=tmp_path / "state") as backend:
        found = backend.find(["key-ok", "key-three", "key-term", "key-never"])
        assert sorted(found) == ["key-ok", "key-term", "key-three"]
        handles = [found["key-ok"], found["key-three"], found["key-term"]]
        assert [s.state for s in backend.poll(handles)] == [JobState.RUNNING] * 3
        open_gate(tmp_path, "ok")
        open_gate(tmp_path, "three")
        os.kill(pids[2], signal.SIGTERM)  # no exit of its own: the server's wait status
        ok, three, term = wait(backend, handles)
    assert (ok.state, ok.exit_code) == (JobState.SUCCEEDED, 0)
    assert (three.state, three.exit_code, three.reason) == (JobState.FAILED, 3,
                                                            "exited with code 3")  # fmt: skip
    assert (term.state, term.exit_code, term.reason) == (JobState.FAILED, 143,
                                                         "killed by SIGTERM")  # fmt: skip
    assert sorted(starts(tmp_path)) == ["ok", "term", "three"]  # each once
    assert ends(int(str(said["server"])), 10)  # the orphaned server left with its last job
    # Every end was reported: the records (and the dead backend's lock) are gone.
    assert list((tmp_path / "state").iterdir()) == []


def test_a_job_whose_fork_server_died_too_leaves_its_own_exit_code(
    tmp_path: Path, module: Path
) -> None:
    said = killed_backend(tmp_path, [spec(tmp_path, "alone", 5)])
    os.kill(int(str(said["server"])), signal.SIGKILL)  # nobody left to wait for the job
    assert ends(int(str(said["server"])), 10)
    with LocalBackend(cpus=4, work_dir=tmp_path / "logs", state=tmp_path / "state") as backend:
        handle = backend.find(["key-alone"])["key-alone"]
        assert backend.poll([handle])[0].state is JobState.RUNNING
        open_gate(tmp_path, "alone")
        (status,) = wait(backend, [handle])
    assert (status.state, status.exit_code) == (JobState.FAILED, 5)
    assert starts(tmp_path) == ["alone"]


@pytest.mark.parametrize("preload", [[], ["gatejob:warm"]])  # the next one forks too
def test_a_detached_backend_hands_its_forked_and_queued_jobs_over(
    tmp_path: Path, module: Path, preload: list[str]
) -> None:
    first = LocalBackend(cpus=1, work_dir=tmp_path / "logs", state=tmp_path / "state",
                         preload=["gatejob:warm"])  # fmt: skip
    running, queued = first.submit([spec(tmp_path, "a", 0), spec(tmp_path, "b", 7)])
    deadline = time.monotonic() + 30
    while first.poll([running])[0].state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert first.calls["fork"] == 1
    first.detach()  # as if it died: "b" never started (one core), "a" runs on
    with LocalBackend(cpus=1, work_dir=tmp_path / "logs", state=tmp_path / "state",
                      preload=preload) as second:  # fmt: skip
        found = second.find(["key-a", "key-b"])
        assert found == {"key-a": running, "key-b": queued}
        open_gate(tmp_path, "a")
        open_gate(tmp_path, "b")
        a, b = wait(second, [running, queued])
    assert (a.state, a.exit_code, b.state, b.exit_code) == (JobState.SUCCEEDED, 0,
                                                            JobState.FAILED, 7)  # fmt: skip
    assert sorted(starts(tmp_path)) == ["a", "b"]


def test_two_live_backends_on_one_state_never_take_each_others_jobs(
    tmp_path: Path, module: Path
) -> None:
    state = tmp_path / "state"
    with LocalBackend(cpus=2, work_dir=tmp_path / "logs", state=state) as first:
        (handle,) = first.submit([spec(tmp_path, "mine", 0)])
        with LocalBackend(cpus=2, work_dir=tmp_path / "logs", state=state) as second:
            assert second.find(["key-mine"]) == {}
            open_gate(tmp_path, "mine")
            (status,) = wait(first, [handle])
        assert status.state is JobState.SUCCEEDED
    assert starts(tmp_path) == ["mine"]
    assert list(state.iterdir()) == []  # both closed: ends reported, locks gone


def test_an_unreported_end_stays_recorded_for_the_next_run(tmp_path: Path, module: Path) -> None:
    state = tmp_path / "state"
    open_gate(tmp_path, spec(tmp_path, "quick", 0).name)
    with LocalBackend(cpus=2, work_dir=tmp_path / "logs", state=state) as first:
        (handle,) = first.submit([spec(tmp_path, "quick", 0)])
        first.wait([handle], 30)  # ended, never polled: the engine may not have seen it
    with LocalBackend(cpus=2, work_dir=tmp_path / "logs", state=state) as second:
        found = second.find(["key-quick"])
        assert second.poll([found["key-quick"]])[0].state is JobState.SUCCEEDED
    assert list(state.iterdir()) == []
