"""The Grid Engine backend on the real cell: limits, error states, arrays, keys."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState
from seqera_core.backends.batch.sge import SgeBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

from ..conftest import wait
from .conftest import SgeCell

pytestmark = pytest.mark.integration

# Two processes of 70 MiB each: every one stays under the setrlimit sge_execd gives the
# job (h_vmem times slots, per process), their sum does not; sge_execd adds them up
# and kills the job ("failed 37"), as for a job that goes over h_rt.
TWO_HOGS = (
    "python3 -c 'b = bytearray(70 << 20); import time; time.sleep(30)' & "
    "python3 -c 'b = bytearray(70 << 20); import time; time.sleep(30)' & wait"
)


@pytest.fixture
def backend(sge: SgeCell, tmp_path: Path) -> SgeBackend:
    return SgeBackend(work_dir=tmp_path / "jobs", env=sge.env)


def test_memory_and_time_kills_are_told_apart(backend: SgeBackend) -> None:
    hog = JobSpec("hog", ["sh", "-c", TWO_HOGS], ResourceRequest(memory=100 * MIB, time=60))
    slow = JobSpec("slow", ["sleep", "30"], ResourceRequest(memory=100 * MIB, time=2))
    fine = JobSpec("fine", ["sh", "-c", TWO_HOGS.replace("30", "1")],
                   ResourceRequest(cpus=2, memory=400 * MIB, time=60))  # fmt: skip
    memory, timed, ok = wait(backend, backend.submit([hog, slow, fine]))
    assert memory.state is JobState.FAILED and memory.out_of_memory, memory
    assert not memory.time_limit and memory.reason == "out of memory"
    assert memory.exit_code == 137 and memory.peak_memory_bytes
    assert memory.peak_memory_bytes >= 100 * MIB  # what sge_execd measured and killed at
    assert timed.state is JobState.FAILED and timed.time_limit, timed
    assert not timed.out_of_memory and timed.reason == "time limit reached"
    # the same hogs in 200 MiB per slot: they fit, and their usage is reported
    assert ok.state is JobState.SUCCEEDED, ok
    assert ok.peak_memory_bytes and ok.peak_memory_bytes > 140 * MIB
    assert ok.wall_seconds is not None and ok.wall_seconds >= 1
    assert ok.cpu_seconds is not None and ok.cpu_seconds > 0  # qacct's cpu


def test_a_job_in_error_is_reported_failed_and_deleted(
    sge: SgeCell, backend: SgeBackend, tmp_path: Path
) -> None:
    # a working directory that does not exist where the job starts: Eqw, for ever
    spec = JobSpec("lost", ["true"], ResourceRequest(), workdir=str(tmp_path / "missing"))
    (status,) = wait(backend, backend.submit([spec]))
    assert status.state is JobState.FAILED
    assert "error state" in (status.reason or "") and "missing" in (status.reason or "")
    assert status.handle.native_id not in sge.run("qstat", "-u", "*").stdout


def test_an_array_runs_each_job_once_in_its_own_directory(sge: SgeCell, tmp_path: Path) -> None:
    backend = SgeBackend(work_dir=tmp_path / "jobs", env=sge.env,
                         squash=SquashPolicy("array", max_jobs=10))  # fmt: skip
    log = tmp_path / "runs.log"
    request = ResourceRequest(cpus=1, memory=64 * MIB, time=60)
    specs = [
        JobSpec(f"e{i}", ["sh", "-c", f"echo e{i} >> {log}; echo out-e{i}; exit {i}"], request)
        for i in range(3)
    ]
    handles = backend.submit(specs)
    assert backend.calls["qsub"] == 1
    assert [h.native_id.split(".")[1] for h in handles] == ["1", "2", "3"]
    statuses = wait(backend, handles)
    assert [s.exit_code for s in statuses] == [0, 1, 2]
    assert [s.state for s in statuses] == [JobState.SUCCEEDED, JobState.FAILED, JobState.FAILED]
    assert sorted(log.read_text().split()) == ["e0", "e1", "e2"]
    assert backend.logs(handles[2]) == "out-e2\n"


def test_find_returns_the_job_a_key_went_out_with(sge: SgeCell, tmp_path: Path) -> None:
    first = SgeBackend(work_dir=tmp_path / "jobs", env=sge.env)
    (handle,) = first.submit([JobSpec("keyed", ["sleep", "20"], ResourceRequest(), key="k-1")])
    # a later process, same work directory: it asks Grid Engine (qstat -j '*' context)
    later = SgeBackend(work_dir=tmp_path / "jobs", env=sge.env)
    found = later.find(["k-1", "never-sent"])
    assert list(found) == ["k-1"] and found["k-1"].native_id == handle.native_id
    assert later.calls["qstat"] == 1
    later.cancel([found["k-1"]])
    (status,) = wait(later, [found["k-1"]])
    assert status.state is JobState.CANCELLED


def test_the_job_runs_where_it_is_told_with_its_outputs(
    backend: SgeBackend, tmp_path: Path
) -> None:
    spec = JobSpec("where", ["sh", "-c", "pwd; echo to-err >&2"], ResourceRequest(),
                   workdir=str(tmp_path))  # fmt: skip
    (status,) = wait(backend, handles := backend.submit([spec]))
    assert status.state is JobState.SUCCEEDED
    assert backend.logs(handles[0]) == f"{os.path.realpath(tmp_path)}\nto-err\n"
