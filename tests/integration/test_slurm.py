"""The Slurm backend against a real one-node Slurm (see conftest.py for how it is tuned).

The time-limit job is submitted by the first test and checked by the last, so its minute
under ``--time=1`` overlaps the rest of the module instead of adding to it.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from seqera_core.backends.base import (
    OTHER,
    OUT_OF_MEMORY,
    TIME_LIMIT,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
)
from seqera_core.backends.batch._base import RetryPolicy
from seqera_core.backends.batch.slurm import SlurmBackend, submission_key_of
from seqera_core.labels import decode_labels
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .conftest import SlurmCluster
from .conftest import wait as wait_for

pytestmark = pytest.mark.integration

RETRY = RetryPolicy(attempts=10, first_delay=0.5, max_delay=4)


def make_backend(path: Path, **options: object) -> SlurmBackend:
    return SlurmBackend(work_dir=path, **{"retry": RETRY, **options})


@pytest.fixture
def backend(slurm: SlurmCluster, tmp_path: Path) -> SlurmBackend:
    return make_backend(tmp_path / "jobs")


def wait(
    backend: SlurmBackend, handles: Sequence[JobHandle], limit: float = 120, every: float = 0.5
) -> list[JobStatus]:
    """The shared ``wait``, with this module's 120 s limit."""
    return wait_for(backend, handles, limit=limit, every=every)


def in_squeue(job_id: str) -> bool:
    done = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%i"], capture_output=True, text=True
    )
    return job_id in done.stdout.split()


def scontrol(job_id: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True
    ).stdout
    fields = {}
    for item in out.split():
        key, _, value = item.partition("=")
        fields[key] = value
    return fields


@pytest.fixture(scope="module")
def time_limited(
    slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SlurmBackend, JobHandle]]:
    backend = make_backend(tmp_path_factory.mktemp("timeout"))
    [handle] = backend.submit([JobSpec("over-time", ["sleep", "600"], ResourceRequest(time=60))])
    yield backend, handle
    backend.cancel([handle])


def test_time_limited_job_is_running(time_limited: tuple[SlurmBackend, JobHandle]) -> None:
    backend, handle = time_limited
    assert wait_for_state(backend, handle, JobState.RUNNING) is JobState.RUNNING


def wait_for_state(backend: SlurmBackend, handle: JobHandle, state: JobState) -> JobState:
    deadline = time.monotonic() + 60
    current = JobState.UNKNOWN
    while time.monotonic() < deadline and current is not state:
        current = backend.poll([handle])[0].state
        time.sleep(0.5)
    return current


def test_success_with_output_and_labels(backend: SlurmBackend, tmp_path: Path) -> None:
    spec = JobSpec(
        "hello",
        ["sh", "-c", 'echo "hello $WHO from $SEQERA_LABEL_TEAM"; echo oops >&2'],
        env={"WHO": "world"},
        labels={"team": "core; x=1"},
    )
    [handle] = backend.submit([spec])
    comment = scontrol(handle.native_id)["Comment"]
    # the labels, after the submission key Slurm keeps for the backend's look-ups
    key = "seqera-" + Path(handle.stdout or "").parent.name.rpartition(".")[2]
    assert decode_labels(comment) == {"seqera-submission": key, "team": "core; x=1"}
    assert submission_key_of(comment) == key
    [status] = wait(backend, [handle])
    assert (status.state, status.exit_code) == (JobState.SUCCEEDED, 0)
    assert status.cause is None and status.node  # NodeList, while squeue still lists it
    assert backend.logs(handle) == "hello world from core; x=1\noops\n"


def test_non_zero_exit(backend: SlurmBackend) -> None:
    [handle] = backend.submit([JobSpec("exit-3", ["sh", "-c", "exit 3"])])
    [status] = wait(backend, [handle])
    assert (status.state, status.exit_code, status.cause) == (JobState.FAILED, 3, OTHER)


def test_out_of_memory_kill(backend: SlurmBackend) -> None:
    # 300 MiB against a 32 MiB limit, held for 20 s: Slurm samples memory once a second, and
    # a hog that is over sooner (as `head -c 300M /dev/zero | tail` can be) may go unseen.
    hog = ["python3", "-c", "import time; b = bytearray(300 * 2**20); time.sleep(20)"]
    [handle] = backend.submit([JobSpec("hog", hog, ResourceRequest(memory=32 * MIB))])
    [status] = wait(backend, [handle])
    assert status.state is JobState.FAILED and status.out_of_memory, status
    assert status.cause == OUT_OF_MEMORY and status.resubmissions == 0  # the engine's to retry


def test_cancel_many_with_one_scancel(backend: SlurmBackend) -> None:
    handles = backend.submit([JobSpec(f"nap-{i}", ["sleep", "300"]) for i in range(3)])
    backend.cancel(handles)
    statuses = wait(backend, handles)
    assert {s.state for s in statuses} == {JobState.CANCELLED}
    assert backend.calls["scancel"] == 1


def test_requested_resources_reach_the_scheduler(backend: SlurmBackend) -> None:
    request = ResourceRequest(cpus=1.5, memory=300 * MIB + 1, time=9 * 60 + 30, queue="debug")
    [handle] = backend.submit([JobSpec("sized", ["sleep", "300"], request)])
    try:
        job = scontrol(handle.native_id)
        assert job["NumCPUs"] == "2" and job["CPUs/Task"] == "2"  # cpus rounded up
        assert job["MinMemoryNode"] == "301M"  # memory rounded up to whole MiB
        assert job["TimeLimit"] == "00:10:00"  # time rounded up to whole minutes
        assert job["Partition"] == "debug" and job["JobName"] == "sized"
    finally:
        backend.cancel([handle])


def test_quoting_survives_the_whole_trip(backend: SlurmBackend, tmp_path: Path) -> None:
    evil = "a b; $(touch PWNED) `id` 'q' \"d\" \\ %j\n#SBATCH --mem=1T"
    workdir = tmp_path / "dir with space;$x"
    workdir.mkdir()
    spec = JobSpec(
        evil,
        ["printf", "%s|%s|%s", evil, "$HOME", "*"],
        workdir=str(workdir),
        env={"EVIL": evil},
        stdout="out %j.txt",
    )
    [handle] = backend.submit([spec])
    [status] = wait(backend, [handle])
    assert status.state is JobState.SUCCEEDED, backend.logs(handle)
    assert (workdir / "out %j.txt").read_text() == f"{evil}|$HOME|*"
    assert not list(tmp_path.rglob("PWNED"))
    assert scontrol_gone_or_name(handle.native_id, evil)


def scontrol_gone_or_name(job_id: str, name: str) -> bool:
    done = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True)
    return done.returncode != 0 or f"JobName={name.splitlines()[0]}" in done.stdout


def test_two_hundred_jobs_one_squeue_per_poll(backend: SlurmBackend) -> None:
    handles = backend.submit([JobSpec(f"many-{i}", ["true"]) for i in range(200)])
    polls = 0
    deadline = time.monotonic() + 180
    while True:
        statuses = backend.poll(handles)
        polls += 1
        if all(s.state.finished for s in statuses) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert {s.state for s in statuses} == {JobState.SUCCEEDED}
    assert {s.exit_code for s in statuses} == {0}
    assert backend.calls["sbatch"] == 200
    assert backend.calls["squeue"] == polls
    assert backend.calls["sacct"] <= polls  # at most one history lookup per poll


def test_job_gone_from_squeue_before_the_first_poll(backend: SlurmBackend) -> None:
    handles = backend.submit(
        [JobSpec("quick-ok", ["true"]), JobSpec("quick-bad", ["sh", "-c", "exit 5"])]
    )
    deadline = time.monotonic() + 90
    while any(in_squeue(h.native_id) for h in handles):
        assert time.monotonic() < deadline, "MinJobAge=2 should purge finished jobs"
        time.sleep(1)
    ok, bad = backend.poll(handles)
    assert (ok.state, ok.exit_code) == (JobState.SUCCEEDED, 0)
    assert (bad.state, bad.exit_code) == (JobState.FAILED, 5)
    assert backend.history == "jobcomp"  # sacct without slurmdbd failed, sacct -c worked
    # sacctmgr: the account look-up, once a run (it fails here: no slurmdbd)
    assert backend.calls == {"sacctmgr": 1, "sbatch": 2, "squeue": 1, "sacct": 2}


def test_without_any_history_the_exit_file_answers(slurm: SlurmCluster, tmp_path: Path) -> None:
    backend = make_backend(tmp_path / "jobs", history="none")
    [handle] = backend.submit([JobSpec("no-history", ["sh", "-c", "exit 4"])])
    deadline = time.monotonic() + 90
    while in_squeue(handle.native_id):
        assert time.monotonic() < deadline
        time.sleep(1)
    [status] = backend.poll([handle])
    assert (status.state, status.exit_code) == (JobState.FAILED, 4)
    assert "sacct" not in backend.calls


def test_controller_restart_loses_nothing(
    slurm: SlurmCluster, backend: SlurmBackend, tmp_path: Path
) -> None:
    # The jobs wait at a gate opened once the controller is back: a job that ended while it
    # was down (stopping it can take seconds on a loaded machine) is rightly reported ended
    # from its exit file, not UNKNOWN.
    gate = tmp_path / "gate"
    hold = ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.2; done"]
    queued = backend.submit([JobSpec(f"survivor-{i}", hold) for i in range(3)])
    slurm.stop_controller()
    down_since = time.monotonic()
    submitted: list[JobHandle] = []
    try:
        thread = threading.Thread(
            target=lambda: submitted.extend(backend.submit([JobSpec("late", ["true"])]))
        )
        thread.start()
        # While slurmctld is down a poll answers UNKNOWN rather than raising or hanging
        # (each Slurm client itself tries for about 9 s before it gives up).
        impatient = make_backend(backend.work_dir, retry=RetryPolicy(attempts=1))
        assert {s.state for s in impatient.poll(queued)} == {JobState.UNKNOWN}
        # Down long enough for sbatch to fail at least once: "Unable to contact slurm controller".
        time.sleep(max(0.0, 12 - (time.monotonic() - down_since)))
    finally:
        slurm.start_controller()
        gate.touch()
    thread.join(90)
    assert len(submitted) == 1
    assert backend.calls["sbatch"] > 4  # 3, and the late one at least twice
    statuses = wait(backend, [*queued, *submitted])
    assert [s.state for s in statuses] == [JobState.SUCCEEDED] * 4


def test_time_limit_kill(time_limited: tuple[SlurmBackend, JobHandle]) -> None:
    backend, handle = time_limited
    [status] = wait(backend, [handle], limit=150, every=2)
    assert status.state is JobState.FAILED and status.time_limit, status
    assert status.cause == TIME_LIMIT and status.resubmissions == 0  # the engine's to retry
