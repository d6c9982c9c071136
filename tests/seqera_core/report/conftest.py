"""A real run to report on: jobs on the local backend, measured and recorded in a history."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends import LocalBackend
from seqera_core.backends.base import JobSpec, JobStatus
from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import finished_record
from seqera_core.units import GIB, MIB

RUN_ID = "local-run"


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


# bytes b"x" * n are written, so resident: bytes(n) would be calloc'ed and never touched
HOLD = "import time; x = b'x' * ({mb} * 2**20); time.sleep({nap})"
SPIN = (
    "import time; x = b'x' * ({mb} * 2**20)\n"
    "end = time.time() + {nap}\nwhile time.time() < end: pass"
)

# (process, command, cpus, memory, time limit): what each task of the run declares
JOBS = [
    *[("index", _python(HOLD.format(mb=30, nap=0.4)), 1, 512 * MIB, 60)] * 3,
    *[("align", _python(SPIN.format(mb=60, nap=0.5)), 2, GIB, 120)] * 4,
    ("align", _python(HOLD.format(mb=300, nap=2)), 2, 100 * MIB, 120),  # out of memory
    *[("call", _python(HOLD.format(mb=10, nap=0.3)), 1, 256 * MIB, 30)] * 2,
    ("call", ["sleep", "30"], 1, 256 * MIB, 1),  # killed at its time limit
    ("qc", ["sh", "-c", "exit 3"], 1, 64 * MIB, 30),  # fails on its own
]


@pytest.fixture(scope="session")
def local_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite history holding one real run (``RUN_ID``) of the jobs above."""
    root = tmp_path_factory.mktemp("local-run")
    backend = LocalBackend(cpus=8, work_dir=root / "logs", kill_grace=0.3, sample_interval=0.05)
    requests = [
        ResourceRequest(cpus=cpus, memory=memory, time=limit, process=process)
        for process, _, cpus, memory, limit in JOBS
    ]
    try:
        handles = backend.submit(
            [JobSpec(name=f"{job[0]}-{i}", command=job[1], request=request)
             for i, (job, request) in enumerate(zip(JOBS, requests, strict=True))]
        )  # fmt: skip
        deadline = time.monotonic() + 60
        statuses: list[JobStatus] = []
        while time.monotonic() < deadline:
            statuses = backend.poll(handles)
            if all(s.state.finished for s in statuses):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the local run did not end: {statuses}")
    finally:
        backend.close()
    history = open_history(root / "history.db")
    history.record(
        finished_record(request, status, run_id=RUN_ID, engine="seqera-run")
        for request, status in zip(requests, statuses, strict=True)
    )
    history.close()
    return root / "history.db"
