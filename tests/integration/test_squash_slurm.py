"""Squashed allocations on the real one-node Slurm: many jobs, few ``sbatch`` calls."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState, SquashBackend
from seqera_core.backends.batch._base import RetryPolicy
from seqera_core.backends.batch.slurm import SlurmBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

from .conftest import SlurmCluster, wait

pytestmark = pytest.mark.integration

SMALL = ResourceRequest(cpus=1, memory=100 * MIB, time=60)


def squash(tmp_path: Path, cpus: int | None = None) -> SquashBackend:
    policy = SquashPolicy("squash", max_jobs=20, max_time=3600, cpus=cpus)
    slurm_backend = SlurmBackend(work_dir=tmp_path / "jobs", retry=RetryPolicy(attempts=10))
    return SquashBackend(slurm_backend, policy, idle=3)


@pytest.fixture
def backend(slurm: SlurmCluster, tmp_path: Path) -> SquashBackend:
    # one core: the jobs of an allocation run one after another, as the tests below need
    return squash(tmp_path, cpus=1)


def counting(
    tmp_path: Path, name: str, code: int = 0, nap: float = 0, first_nap: float | None = None
) -> JobSpec:
    """A job that appends its name to runs.log each time it starts; ``first_nap``: how
    long its first run sleeps (a run sent again sleeps ``nap``)."""
    log = tmp_path / "runs.log"
    script = f"echo {name} >> {log}; echo out-{name}; echo err-{name} >&2; "
    if first_nap is not None:
        once = tmp_path / f"{name}.first"
        script += f"if [ ! -e {once} ]; then : > {once}; sleep {first_nap}; fi; "
    script += f"sleep {nap}; exit {code}"
    return JobSpec(name, ["sh", "-c", script], SMALL)


def runs(tmp_path: Path) -> list[str]:
    path = tmp_path / "runs.log"
    return path.read_text().split() if path.exists() else []


def test_jobs_share_one_allocation_and_end_alone(slurm: SlurmCluster, tmp_path: Path) -> None:
    backend = squash(tmp_path)  # squash.cpus unset: as wide as the jobs, up to the node
    specs = [counting(tmp_path, f"j{i}", code=5 if i == 3 else 0) for i in range(12)]
    specs.append(JobSpec("record", ["sh", "-c", "scontrol show job $SLURM_JOB_ID"], SMALL))
    handles = backend.submit(specs)
    assert backend.calls["sbatch"] == 1
    statuses = wait(backend, handles)
    assert statuses[3].state is JobState.FAILED and statuses[3].exit_code == 5
    assert all(s.state is JobState.SUCCEEDED for n, s in enumerate(statuses) if n != 3)
    assert backend.logs(handles[7]) == "out-j7\nerr-j7\n"
    assert sorted(runs(tmp_path)) == sorted(f"j{i}" for i in range(12))
    record = backend.logs(handles[-1])
    # the allocation asked for what its jobs can use at once: 13 of the node's 16 cores,
    # 100 MiB each, and their summed time spread over those cores (60 s) plus 60 s
    assert backend.calls["sinfo"] == 1  # the node's size, asked once
    assert re.search(r"\bNumCPUs=13\b", record), record
    assert re.search(r"\bMinMemoryNode=1300M\b", record), record
    assert re.search(r"\bTimeLimit=00:02:00\b", record), record
    assert "JobName=squash-group1-alloc1" in record
    assert all(s.wall_seconds is not None for s in statuses)


def test_a_cancelled_allocation_reruns_exactly_its_unfinished_jobs(
    backend: SquashBackend, tmp_path: Path
) -> None:
    # j3's first run outlasts any delay of a loaded machine before the scancel lands
    # (under CI's load a 20 s j3, and j4 after it, once both finished first); it
    # is cancelled long before its 50 s, and its run sent again is quick. j4 waits behind
    # it (one core) and has not started when the allocation goes.
    specs = [counting(tmp_path, f"j{i}", first_nap=50 if i == 3 else None) for i in range(5)]
    handles = backend.submit(specs)
    deadline = time.monotonic() + 120
    while len(runs(tmp_path)) < 4:  # three quick ones done, a slow one running
        assert time.monotonic() < deadline, backend.poll(handles)
        time.sleep(0.2)
    [allocation] = [a.handle for g in backend._groups.values() for a in g.live()]
    assert allocation is not None
    subprocess.run(["scancel", allocation.native_id], check=True)  # as a user or admin would
    assert runs(tmp_path) == ["j0", "j1", "j2", "j3"], "j3 ended before the scancel"
    statuses = wait(backend, handles, limit=240)
    assert all(s.state is JobState.SUCCEEDED for s in statuses), statuses
    ran = runs(tmp_path)
    assert all(ran.count(f"j{i}") == 1 for i in range(3)), ran  # finished: never again
    assert ran.count("j3") == 2, ran  # interrupted: run again, once
    assert ran.count("j4") == 1, ran  # never started in the cancelled allocation
    assert backend.calls["sbatch"] == 2


def test_cancelling_one_job_leaves_its_neighbours(backend: SquashBackend, tmp_path: Path) -> None:
    sleeper = JobSpec("sleeper", ["sleep", "120"], SMALL)
    handles = backend.submit([sleeper, counting(tmp_path, "neighbour", nap=3)])
    deadline = time.monotonic() + 120
    while backend.poll(handles)[0].state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    backend.cancel(handles[:1])
    statuses = wait(backend, handles)
    assert statuses[0].state is JobState.CANCELLED
    assert statuses[1].state is JobState.SUCCEEDED
    assert backend.calls["scancel"] == 0  # the launcher killed it; the allocation lives on


def test_a_new_backend_polls_what_an_earlier_one_submitted(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    # The process that submitted is gone (a crash, a restart of the sidecar): its state
    # is on disk, and the allocation it submitted runs on.
    policy = SquashPolicy("squash", max_jobs=20, max_time=3600)

    def fresh() -> SquashBackend:
        slurm_backend = SlurmBackend(work_dir=tmp_path / "jobs", retry=RetryPolicy(attempts=10))
        return SquashBackend(slurm_backend, policy, idle=3)

    handles = fresh().submit([counting(tmp_path, f"j{i}", nap=1) for i in range(3)])
    again = fresh()
    statuses = wait(again, handles)
    assert all(s.state is JobState.SUCCEEDED for s in statuses), statuses
    assert sorted(runs(tmp_path)) == ["j0", "j1", "j2"]
    assert again.calls["sbatch"] == 0  # the earlier allocation ran them
    assert again.logs(handles[1]) == "out-j1\nerr-j1\n"


def test_a_scheduler_that_cannot_answer_holds_back_no_job_that_ended(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    first = squash(tmp_path)
    handles = first.submit([counting(tmp_path, f"j{i}") for i in range(3)])
    wait(first, handles)
    # A new process over the same work directory whose squeue cannot reach the cluster
    # (as during a munge or slurmctld outage): the jobs' own files still say they ended.
    unreadable = tmp_path / "empty-slurm.conf"  # squeue fails at once: no ClusterName
    unreadable.touch()
    broken = SlurmBackend(
        work_dir=tmp_path / "jobs",
        retry=RetryPolicy(attempts=1),
        env={"SLURM_CONF": str(unreadable)},
    )
    again = SquashBackend(broken, SquashPolicy("squash", max_jobs=20, max_time=3600), idle=3)
    statuses = again.poll(handles)
    assert all(s.state is JobState.SUCCEEDED for s in statuses), statuses
    assert again.calls["squeue"] >= 1  # it was asked, and failed
