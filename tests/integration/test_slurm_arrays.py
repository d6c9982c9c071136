"""Job arrays on the real one-node Slurm: one ``sbatch --array`` per shape, elements end alone."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState
from seqera_core.backends.batch._base import RetryPolicy
from seqera_core.backends.batch.slurm import SlurmBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

from .conftest import SlurmCluster, wait

pytestmark = pytest.mark.integration

SMALL = ResourceRequest(cpus=1, memory=100 * MIB, time=120)


@pytest.fixture
def backend(slurm: SlurmCluster, tmp_path: Path) -> SlurmBackend:
    return SlurmBackend(
        work_dir=tmp_path / "jobs",
        retry=RetryPolicy(attempts=10),
        squash=SquashPolicy("array", max_jobs=4),
    )


def test_one_sbatch_per_shape_and_each_element_ends_alone(
    backend: SlurmBackend, tmp_path: Path
) -> None:
    specs = [
        JobSpec(f"j{i}", ["sh", "-c", f"echo out-{i}; echo err-{i} >&2; exit {i % 2}"], SMALL)
        for i in range(6)
    ]
    specs.append(JobSpec("other-shape", ["sh", "-c", "echo big"], ResourceRequest(cpus=2, time=60)))
    custom = tmp_path / "custom.log"
    specs.append(
        JobSpec("custom-log", ["echo", "mine"], SMALL, stdout=str(custom), stderr=str(custom))
    )
    handles = backend.submit(specs)
    # 7 of one shape, max 4 per array (4 + 3, the one with a single log file apart),
    # and one of another shape
    assert backend.calls["sbatch"] == 4
    assert re.fullmatch(r"\d+_0", handles[0].native_id)
    statuses = wait(backend, handles)
    assert [s.exit_code for s in statuses] == [0, 1, 0, 1, 0, 1, 0, 0]
    assert [s.state for s in statuses[:2]] == [JobState.SUCCEEDED, JobState.FAILED]
    assert [backend.logs(h) for h in handles[:3]] == [f"out-{i}\nerr-{i}\n" for i in range(3)]
    assert custom.read_text() == "mine\n"
    assert backend.calls["squeue"] <= 80  # one per poll, for every element at once


def test_elements_carry_the_request_and_cancel_alone(backend: SlurmBackend) -> None:
    request = ResourceRequest(cpus=2, memory=200 * MIB, time=150)
    specs = [
        JobSpec(f"s{i}", ["sh", "-c", f"sleep {60 if i == 0 else 2}"], request) for i in range(3)
    ]
    handles = backend.submit(specs)
    assert backend.calls["sbatch"] == 1
    deadline = time.monotonic() + 120
    while backend.poll(handles[:1])[0].state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    record = subprocess.run(
        ["scontrol", "show", "job", handles[0].native_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"\bNumCPUs=2\b", record), record
    assert re.search(r"\bMinMemoryNode=200M\b", record), record
    assert re.search(r"\bTimeLimit=00:03:00\b", record), record  # 150 s, rounded up
    assert f"ArrayTaskId={handles[0].native_id.split('_')[1]}" in record
    backend.cancel(handles[:1])
    statuses = wait(backend, handles)
    assert [s.state for s in statuses] == [
        JobState.CANCELLED,
        JobState.SUCCEEDED,
        JobState.SUCCEEDED,
    ]


def test_a_new_process_finds_jobs_and_array_elements_by_their_keys(
    backend: SlurmBackend,
) -> None:
    # Two jobs of one shape go out as one array, a third alone; a new backend on the same
    # directory (a restarted sidecar) finds each by its caller's key, and nothing else.
    specs = [JobSpec(f"k{i}", ["sleep", "60"], SMALL, key=f"caller-{i}") for i in range(2)]
    specs.append(JobSpec("alone", ["sleep", "60"], ResourceRequest(cpus=2, time=60), key="c-2"))
    handles = backend.submit(specs)
    try:
        assert backend.calls["sbatch"] == 2 and handles[1].native_id.endswith("_1")
        again = SlurmBackend(work_dir=backend.work_dir, retry=RetryPolicy(attempts=10))
        found = again.find(["caller-0", "caller-1", "c-2", "never-sent"])
        assert found == {"caller-0": handles[0], "caller-1": handles[1], "c-2": handles[2]}
        assert again.calls == {"squeue": 1}  # one listing for every key
        # adopted: polled like any job of its own
        assert {s.state for s in again.poll(list(found.values()))} <= {
            JobState.PENDING, JobState.RUNNING}  # fmt: skip
    finally:
        backend.cancel(handles)
