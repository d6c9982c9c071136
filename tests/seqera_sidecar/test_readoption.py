"""The local backend's state directory: a backend killed with SIGKILL, its jobs taken back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from seqera_core.backends import JobHandle, JobState, LocalBackend

# Run in a child that dies by SIGKILL right after submitting: nothing of its own clean-up runs.
_DOOMED = """
import json, os, signal, sys, time
from seqera_core.backends import JobSpec, LocalBackend
from seqera_core.models import ResourceRequest
state, effects = sys.argv[1], sys.argv[2]
backend = LocalBackend(cpus=3, work_dir=state + "/logs", state=state + "/records")
one, three = ResourceRequest(cpus=1), ResourceRequest(cpus=3)
specs = [
    JobSpec("long", ["sleep", "30"], one, env={"SEQERA_SUBMISSION_KEY": "k-long"}),
    JobSpec("short", ["sh", "-c", "sleep 1; exit 3"], one),
    JobSpec("victim", ["sleep", "30"], one),
    JobSpec("queued", ["sh", "-c", f"echo ran >> {effects}/queued"], three,
            env={"SEQERA_SUBMISSION_KEY": "k-queued"}),
]
handles = backend.submit(specs)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:  # until the first three run and the last waits
    states = [s.state.value for s in backend.poll(handles)]
    if states == ["running", "running", "running", "pending"]:
        break
    time.sleep(0.05)
print(json.dumps([[h.backend, h.native_id, h.name, h.stdout, h.stderr] for h in handles]))
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def _pid(records: Path, handle: JobHandle) -> int:
    return int((records / handle.native_id / "pid").read_text().split()[0])


def test_a_killed_backends_jobs_are_adopted_not_lost(tmp_path: Path) -> None:
    effects = tmp_path / "effects"
    effects.mkdir()
    doomed = subprocess.run([sys.executable, "-c", _DOOMED, str(tmp_path), str(effects)],
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert doomed.returncode == -signal.SIGKILL, doomed.stderr
    long, short, victim, queued = (JobHandle(*h) for h in json.loads(doomed.stdout))
    records = tmp_path / "records"
    os.killpg(_pid(records, victim), signal.SIGKILL)  # dies while nobody watches
    time.sleep(1.5)  # "short" ends while nobody watches
    backend = LocalBackend(cpus=3, work_dir=tmp_path / "logs", state=records)
    try:
        assert set(backend.find(["k-long", "k-queued", "k-other"])) == {"k-long", "k-queued"}
        deadline = time.monotonic() + 10
        while backend.poll([short])[0].state is not JobState.FAILED:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        status = dict(zip("lsvq", backend.poll([long, short, victim, queued]), strict=True))
        assert status["l"].state is JobState.RUNNING  # never "failed: lost" while it runs
        assert status["s"].exit_code == 3  # written by the wrapper, read after adoption
        assert status["v"].state is JobState.FAILED and "no exit status" in str(status["v"].reason)
        assert status["q"].state is JobState.PENDING  # queued again: needs every core
        backend.cancel([long])  # an adopted job can be cancelled
        while not backend.poll([queued])[0].state.finished:
            assert time.monotonic() < deadline + 20
            time.sleep(0.05)
        assert backend.poll([long])[0].state is JobState.CANCELLED
        assert backend.poll([queued])[0].state is JobState.SUCCEEDED
        assert (effects / "queued").read_text() == "ran\n"  # ran once, after the crash
        pid = _pid(records, long)
        assert not Path(f"/proc/{pid}").exists() or b"Z" in Path(f"/proc/{pid}/stat").read_bytes()
        assert oct(records.stat().st_mode & 0o777) == "0o700"
        assert oct((records / long.native_id / "job.json").stat().st_mode & 0o777) == "0o600"
    finally:
        backend.close()
    # Closed, it deleted the records of the jobs whose ends it reported (a sidecar that
    # stops detaches instead, and keeps them); a third backend runs nothing again.
    again = LocalBackend(cpus=3, state=records)
    assert again.find(["k-long", "k-queued"]) == {}
    again.close()
    assert (effects / "queued").read_text() == "ran\n"
    assert list(records.iterdir()) == []
