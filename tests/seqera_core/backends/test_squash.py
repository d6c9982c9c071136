"""Squashed allocations on real processes: the local backend hosts the allocations here.

The same launcher and bookkeeping run on Slurm in tests/integration/test_squash_slurm.py.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from seqera_core.backends import JobHandle, JobSpec, JobState, JobStatus, LocalBackend
from seqera_core.backends._squash import SquashBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

SMALL = ResourceRequest(cpus=1, memory=64 * MIB, time=60)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalBackend]:
    backend = LocalBackend(cpus=2, memory=4096 * MIB, work_dir=tmp_path / "local", kill_grace=0.3)
    yield backend
    backend.close()


def squash(local: LocalBackend, tmp_path: Path, **policy: object) -> SquashBackend:
    options: dict[str, object] = {"max_jobs": 10, "max_time": 3600, **policy}
    return SquashBackend(local, SquashPolicy("squash", **options), work_dir=tmp_path, idle=2)  # type: ignore[arg-type]


def wait(
    backend: SquashBackend, handles: Sequence[JobHandle], limit: float = 30
) -> list[JobStatus]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        statuses = backend.poll(handles)
        if all(s.state.finished for s in statuses):
            return statuses
        time.sleep(0.05)
    raise AssertionError(f"jobs still running after {limit} s: {backend.poll(handles)}")


def counting(tmp_path: Path, name: str, code: int = 0, nap: float = 0) -> JobSpec:
    """A job that appends its name to runs.log each time it starts."""
    script = f"echo {name} >> {tmp_path}/runs.log; echo out-{name}; echo err-{name} >&2; sleep {nap}; exit {code}"  # noqa: E501
    return JobSpec(name, ["sh", "-c", script], SMALL)


def runs(tmp_path: Path) -> list[str]:
    path = tmp_path / "runs.log"
    return path.read_text().split() if path.exists() else []


def test_many_jobs_few_allocations_each_reported_alone(local: LocalBackend, tmp_path: Path) -> None:
    backend = squash(local, tmp_path)
    specs = [counting(tmp_path, f"j{i}", code=3 if i == 7 else 0) for i in range(25)]
    handles = backend.submit(specs)
    assert local.calls["spawn"] <= 3  # 25 jobs, at most 10 per allocation
    statuses = wait(backend, handles)
    assert [s.state for s in statuses].count(JobState.FAILED) == 1
    failed = statuses[7]
    assert failed.exit_code == 3 and failed.state is JobState.FAILED
    assert all(s.exit_code == 0 for n, s in enumerate(statuses) if n != 7)  # neighbours pass
    assert sorted(runs(tmp_path)) == sorted(f"j{i}" for i in range(25))  # each ran once
    assert backend.logs(handles[4]) == "out-j4\nerr-j4\n"
    assert all(s.wall_seconds is not None and s.peak_memory_bytes for s in statuses)
    backend.close()


def test_a_job_gets_the_cores_and_memory_it_asked_for(local: LocalBackend, tmp_path: Path) -> None:
    backend = squash(local, tmp_path, cpus=2)
    fat = JobSpec("fat", ["true"], ResourceRequest(cpus=2, memory=512 * MIB, time=60))
    thin = JobSpec("thin", ["true"], SMALL)
    [decision_fat, decision_thin] = backend.explain([fat, thin])
    assert decision_fat.allocation == decision_thin.allocation == 1
    assert "2 cores, 512 MiB" in decision_fat.why  # 256 MiB per core, the fat job's share
    wait(backend, backend.submit([fat, thin]))


def test_what_cannot_be_squashed_runs_alone_and_says_why(
    local: LocalBackend, tmp_path: Path
) -> None:
    backend = squash(local, tmp_path, max_time=600)
    specs = [
        JobSpec("untimed", ["true"], ResourceRequest(cpus=1, memory=64 * MIB)),
        JobSpec("long", ["true"], ResourceRequest(cpus=1, memory=64 * MIB, time=3600)),
        JobSpec("lab-a", ["true"], ResourceRequest(cpus=1, memory=64 * MIB, time=60, account="a")),
        JobSpec("lab-b", ["true"], ResourceRequest(cpus=1, memory=64 * MIB, time=60, account="b")),
        JobSpec("keyed", ["true"], SMALL, labels={"squash_key": "sample-1"}),
        JobSpec("plain", ["true"], SMALL),
    ]
    decisions = backend.explain(specs)
    assert [d.how for d in decisions] == ["alone", "alone", "squash", "squash", "squash", "squash"]
    assert "no time limit" in decisions[0].why
    assert "squash.max_time" in decisions[1].why
    # different accounts, and a different squash key, never share
    allocations = [d.allocation for d in decisions[2:]]
    assert len(set(allocations)) == 4
    statuses = wait(backend, backend.submit(specs))
    assert all(s.state is JobState.SUCCEEDED for s in statuses)


def test_allocations_killed_midway_rerun_only_unfinished_jobs(
    local: LocalBackend, tmp_path: Path
) -> None:
    backend = squash(local, tmp_path, max_jobs=6)
    specs = [counting(tmp_path, f"j{i}", nap=0.0 if i < 3 else 1.5) for i in range(6)]
    handles = backend.submit(specs)
    # wait until the quick ones finished and a slow one is running, then kill the allocation
    deadline = time.monotonic() + 20
    while len(runs(tmp_path)) < 4:
        assert time.monotonic() < deadline
        backend.poll(handles)
        time.sleep(0.05)
    allocations = [a.handle for g in backend._groups.values() for a in g.live()]
    assert len(allocations) == 1
    local.cancel([a for a in allocations if a is not None])  # as scancel would
    statuses = wait(backend, handles, limit=60)
    assert all(s.state is JobState.SUCCEEDED for s in statuses), statuses
    ran = runs(tmp_path)
    assert sorted(set(ran)) == [f"j{i}" for i in range(6)]
    assert all(ran.count(f"j{i}") == 1 for i in range(3))  # finished before: never again
    assert any(ran.count(f"j{i}") == 2 for i in range(3, 6))  # interrupted: run again
    assert sum(len(g.allocations) for g in backend._groups.values()) >= 2


def test_cancel_queued_and_running_jobs(local: LocalBackend, tmp_path: Path) -> None:
    backend = squash(local, tmp_path)
    running = JobSpec("running", ["sleep", "30"], ResourceRequest(cpus=2, memory=64 * MIB, time=60))
    queued = JobSpec("queued", ["true"], ResourceRequest(cpus=2, memory=64 * MIB, time=60))
    handles = backend.submit([running, queued])
    deadline = time.monotonic() + 20
    while backend.poll(handles)[0].state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    backend.cancel(handles)
    statuses = wait(backend, handles)
    assert [s.state for s in statuses] == [JobState.CANCELLED, JobState.CANCELLED]


def test_a_job_past_its_own_time_limit_is_killed_alone(local: LocalBackend, tmp_path: Path) -> None:
    backend = squash(local, tmp_path)
    slow = JobSpec("slow", ["sleep", "30"], ResourceRequest(cpus=1, memory=64 * MIB, time=1))
    quick = counting(tmp_path, "quick")
    statuses = wait(backend, backend.submit([slow, quick]))
    assert statuses[0].state is JobState.FAILED and statuses[0].time_limit
    assert statuses[1].state is JobState.SUCCEEDED


def test_later_jobs_join_a_running_allocation(local: LocalBackend, tmp_path: Path) -> None:
    # A workflow's next step becomes ready when the first ends: the allocation that ran
    # the first (sized for it alone) has its time back and takes the next ones.
    backend = squash(local, tmp_path)
    first = backend.submit([counting(tmp_path, "first")])
    wait(backend, first)
    later = backend.submit([counting(tmp_path, "later")])
    wait(backend, first + later)
    assert local.calls["spawn"] == 1  # one allocation ran both


def test_no_room_left_means_a_new_allocation(local: LocalBackend, tmp_path: Path) -> None:
    backend = squash(local, tmp_path)
    first = backend.submit([counting(tmp_path, "first", nap=2)])
    deadline = time.monotonic() + 20
    while backend.poll(first)[0].state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # the running job still holds its 60 s of the allocation's 120 s
    later = backend.submit([counting(tmp_path, "later")])
    wait(backend, first + later)
    assert local.calls["spawn"] == 2


PROBE = """
import os, sys
import squash_probe
print(squash_probe.IMPORTED_BY != os.getpid(), os.getcwd(), os.environ["GREETING"], sys.argv[1:])
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("preload", [("squash_probe",), ()], ids=["fork", "new-process"])
def test_preloaded_python_jobs_start_as_forks(
    local: LocalBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preload: tuple[str, ...]
) -> None:
    package = tmp_path / "modules" / "squash_probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import os\nIMPORTED_BY = os.getpid()\n")
    (package / "__main__.py").write_text(PROBE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "modules"))
    policy = SquashPolicy("squash", max_jobs=10, max_time=3600)
    backend = SquashBackend(local, policy, work_dir=tmp_path, idle=2, preload=preload)
    workdir = tmp_path / "work"
    workdir.mkdir()
    specs = [
        JobSpec(f"p{code}", [sys.executable, "-m", "squash_probe", str(code)], SMALL,
                workdir=str(workdir), env={"GREETING": "hi"})
        for code in (0, 3)
    ]  # fmt: skip
    statuses = wait(backend, backend.submit(specs))
    assert [s.exit_code for s in statuses] == [0, 3]
    assert statuses[1].state is JobState.FAILED
    forked = "True" if preload else "False"
    assert backend.logs(statuses[0].handle) == f"{forked} {workdir} hi ['0']\n"
    assert all(s.peak_memory_bytes and s.wall_seconds is not None for s in statuses)
