"""The Torque dialect end to end through Debian's slurm-wlm-torque qsub/qstat/qdel on Slurm.

The wrappers report no exit status (``job_state = C`` only) and forget a job when Slurm
purges it, so exit codes come from the file the job script writes.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from seqera_core.backends import SquashBackend
from seqera_core.backends.base import JobSpec, JobState
from seqera_core.backends.batch._base import RetryPolicy
from seqera_core.backends.batch.pbs import PbsBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

from .conftest import SlurmCluster, wait

pytestmark = pytest.mark.integration


@pytest.fixture
def torque(slurm: SlurmCluster, tmp_path: Path) -> PbsBackend:
    retry = RetryPolicy(attempts=10, first_delay=0.5, max_delay=4)
    return PbsBackend(dialect="torque", work_dir=tmp_path / "jobs", retry=retry)


def test_success_failure_and_logs(torque: PbsBackend) -> None:
    handles = torque.submit(
        [
            JobSpec("ok", ["sh", "-c", 'echo "hi $SEQERA_LABEL_RUN"'], labels={"run": "r 1"}),
            JobSpec("bad", ["sh", "-c", "echo no >&2; exit 7"]),
        ]
    )
    ok, bad = wait(torque, handles)
    assert (ok.state, ok.exit_code) == (JobState.SUCCEEDED, 0)
    assert (bad.state, bad.exit_code) == (JobState.FAILED, 7)
    assert torque.logs(handles[0]) == "hi r 1\n"
    assert torque.logs(handles[1]) == "no\n"
    assert torque.calls["qsub"] == 2


def test_resources_reach_slurm_through_the_wrapper(torque: PbsBackend) -> None:
    request = ResourceRequest(cpus=2, memory=200 * MIB, time=150)
    [handle] = torque.submit([JobSpec("sized job", ["sleep", "300"], request, key="k-sized")])
    try:
        out = subprocess.run(
            ["scontrol", "show", "job", "-o", handle.native_id],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        fields = dict(item.partition("=")[::2] for item in out.split())
        assert fields["NumCPUs"] == "2"  # ppn=2 becomes -n2
        assert fields["MinMemoryNode"] == "200M"
        assert fields["TimeLimit"] == "00:03:00"  # walltime 00:02:30, Slurm rounds to minutes
        # the submission key rides on the name: the one field the wrappers pass on as is
        key = "seqera-" + Path(handle.stdout or "").parent.name.rpartition(".")[2]
        assert fields["JobName"] == f"sized_job.{key}"
        # and the look-up after an unknown outcome finds the job by it (qstat -f -1)
        assert (torque._keys() or {}).get(key) == handle.native_id
        # so does a new process on the same directory, by the caller's key
        again = PbsBackend(dialect="torque", work_dir=torque.work_dir)
        assert again.find(["k-sized", "k-never-sent"]) == {"k-sized": handle}
    finally:
        torque.cancel([handle])


def test_cancel_with_one_qdel(torque: PbsBackend) -> None:
    handles = torque.submit([JobSpec(f"nap{i}", ["sleep", "300"]) for i in range(3)])
    torque.cancel(handles)
    statuses = wait(torque, handles)
    assert {s.state for s in statuses} == {JobState.CANCELLED}
    assert torque.calls["qdel"] == 1


def test_many_jobs_one_qstat_per_poll(torque: PbsBackend) -> None:
    handles = torque.submit([JobSpec(f"t{i}", ["sh", "-c", f"exit {i % 3}"]) for i in range(30)])
    polls = 0
    deadline = time.monotonic() + 120
    while True:
        statuses = torque.poll(handles)
        polls += 1
        if all(s.state.finished for s in statuses):
            break
        assert time.monotonic() < deadline
        time.sleep(1)
    assert [s.exit_code for s in statuses] == [i % 3 for i in range(30)]
    assert torque.calls["qstat"] == polls


def test_squashed_jobs_through_the_wrappers(torque: PbsBackend, tmp_path: Path) -> None:
    squash = SquashBackend(torque, SquashPolicy("squash", max_jobs=10), idle=2)
    small = ResourceRequest(cpus=1, memory=100 * MIB, time=60)
    specs = [JobSpec(f"j{i}", ["sh", "-c", f"echo j{i}; exit {i % 3}"], small) for i in range(6)]
    handles = squash.submit(specs)
    assert torque.calls["qsub"] == 1
    statuses = wait(squash, handles)
    assert [s.exit_code for s in statuses] == [0, 1, 2, 0, 1, 2]
    assert [squash.logs(h) for h in handles] == [f"j{i}\n" for i in range(6)]
