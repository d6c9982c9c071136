"""Squashed allocations on real processes: the local backend hosts the allocations here.

The same launcher and bookkeeping run on Slurm in tests/integration/test_squash_slurm.py.
"""

from __future__ import annotations

import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pytest

from seqera_core.backends import JobHandle, JobSpec, JobState, JobStatus, LocalBackend
from seqera_core.backends.batch._base import EXIT_FILE
from seqera_core.backends.squash import _protocol
from seqera_core.backends.squash._backend import SquashBackend
from seqera_core.backends.squash._plan import explain, history_runtime
from seqera_core.history import TaskRecord, open_history
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
    # the launcher's wait4 rusage: each job's own CPU seconds, never more than it ran
    assert all(s.cpu_seconds is not None and s.cpu_seconds >= 0 for s in statuses)
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


# -- faults, restarts, secrets ------------------------------------------------------------

# Runs the copied launcher, but the first allocation of a group kills itself (SIGKILL, no
# clean-up) right after its first claim, before anything else is written: the moment at
# which, with a claim made of a rename and a record written after it, a job was lost.
CRASHING = """
import importlib.util, os, signal, sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("launcher", sys.argv[1])
launcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launcher)
marker = Path(sys.argv[2]) / "crashed"

def crash(self, entry):
    if marker.exists():
        return start(self, entry)
    marker.touch()
    os.kill(os.getpid(), signal.SIGKILL)

start = launcher.Launcher._start
launcher.Launcher._start = crash
sys.exit(launcher.main(sys.argv[2:]))
"""


def test_a_launcher_killed_between_claim_and_record_loses_nothing(
    local: LocalBackend, tmp_path: Path
) -> None:
    script = tmp_path / "crashing.py"
    script.write_text(CRASHING)
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    wrapper.chmod(0o755)
    policy = SquashPolicy("squash", max_jobs=10, max_time=3600)
    backend = SquashBackend(
        local, policy, work_dir=tmp_path, idle=2, python=str(wrapper), scheduler_every=0
    )
    handles = backend.submit([counting(tmp_path, "only")])
    [status] = wait(backend, handles)
    assert status.state is JobState.SUCCEEDED, status
    [group] = backend._groups.values()
    assert (group.directory / "crashed").exists()
    assert runs(tmp_path) == ["only"]  # claimed by the dead one, run once by the next
    assert local.calls["spawn"] == 2


def test_a_new_backend_polls_and_recovers_what_an_earlier_one_accepted(
    local: LocalBackend, tmp_path: Path
) -> None:
    first = squash(local, tmp_path, max_jobs=6)
    specs = [counting(tmp_path, f"j{i}", nap=0.0 if i < 2 else 1.5) for i in range(4)]
    handles = first.submit(specs)
    deadline = time.monotonic() + 20
    while len(runs(tmp_path)) < 3:  # two quick ones done, a slow one running
        assert time.monotonic() < deadline
        time.sleep(0.05)
    allocations = [a.handle for g in first._groups.values() for a in g.live() if a.handle]
    del first  # the process that submitted is gone; its allocation is killed too
    local.cancel(allocations)
    second = squash(local, tmp_path)
    statuses = wait(second, handles, limit=60)
    assert all(s.state is JobState.SUCCEEDED for s in statuses), statuses
    ran = runs(tmp_path)
    assert ran.count("j0") == ran.count("j1") == 1, ran  # finished: never again
    assert sorted(set(ran)) == ["j0", "j1", "j2", "j3"]
    assert all(s.wall_seconds is not None for s in statuses)


def test_queue_entries_hold_the_environment_and_only_their_owner_reads_them(
    local: LocalBackend, tmp_path: Path
) -> None:
    # a job the launcher forks carries its environment in its entry (a script job: in
    # its job.sh, 0700)
    policy = SquashPolicy("squash", max_jobs=10, max_time=3600)
    backend = SquashBackend(local, policy, work_dir=tmp_path, idle=2, preload=("json",))
    command = [sys.executable, "-m", "json.tool", "--help"]
    spec = JobSpec("secret", command, SMALL, env={"STORAGE_TOKEN": "s3cr3t"})
    [status] = wait(backend, backend.submit([spec]))
    assert status.state is JobState.SUCCEEDED, status
    root = backend.root
    [record] = (root / "jobs").iterdir()
    assert "s3cr3t" in record.read_text()  # what the launcher needs, hence the mode
    for directory in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for path in root.rglob("*.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    result = Path(status.handle.stdout or "").parent / "result.json"
    assert stat.S_IMODE(result.stat().st_mode) == 0o600


def test_the_launcher_and_the_batch_script_name_one_exit_file() -> None:
    assert _protocol.EXIT_CODE == EXIT_FILE


def test_claimed_names_carry_their_allocation() -> None:
    name = _protocol.claimed_name("0000007", "alloc12")
    assert _protocol.parse_claimed(name) == ("0000007", "alloc12")
    assert _protocol.parse_claimed("0000007.json") is None


def test_jobs_are_packed_by_the_run_time_the_history_saw(tmp_path: Path) -> None:
    history = open_history(tmp_path / "history.db")
    records = [
        TaskRecord(run_id="r", task_id=str(n), process="trivial", succeeded=True, realtime=2.0)
        for n in range(3)
    ]
    history.record(records)
    policy = SquashPolicy("squash", max_jobs=100, max_time=3600)
    request = ResourceRequest(cpus=1, memory=300 * MIB, time=300, process="trivial")
    specs = [JobSpec(f"t{n}", ["true"], request) for n in range(200)]
    declared = {d.allocation for d in explain(specs, policy)}
    predicted = {d.allocation for d in explain(specs, policy, history_runtime(history))}
    assert len(declared) == 19  # 300 s each: 11 to an hour's allocation
    assert len(predicted) == 2  # 2 s each: max_jobs is the limit
    history.close()


def test_a_new_backend_finds_squashed_jobs_by_the_callers_key(
    local: LocalBackend, tmp_path: Path
) -> None:
    # A sidecar killed between submit and storing its handles asks by key on restart: a
    # squashed job is found by its record (and polled), a key never queued is not.
    first = squash(local, tmp_path)
    specs = [attrs.evolve(counting(tmp_path, f"k{i}", nap=0.5), key=f"task-{i}") for i in range(3)]
    handles = first.submit(specs)
    lone = local.submit([attrs.evolve(counting(tmp_path, "alone"), key="task-alone")])
    second = squash(local, tmp_path)
    found = second.find(["task-0", "task-1", "task-2", "task-never", "task-alone"])
    # squashed jobs from their records; one that ran alone from the scheduler (here local)
    assert found == {**{f"task-{i}": handles[i] for i in range(3)}, "task-alone": lone[0]}
    statuses = wait(second, list(found.values()), limit=60)
    assert all(s.state is JobState.SUCCEEDED for s in statuses), statuses
    deadline = time.monotonic() + 20
    while not local.poll(lone)[0].state.finished and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(runs(tmp_path)) == ["alone", "k0", "k1", "k2"]  # each once


# A squash backend used as engines use it: Snakemake hands jobs over (``run_jobs``) from
# its main thread while its status thread polls (``check_active_jobs``), so ``submit`` and
# ``poll`` run at the same time; found in a 2,000-job run whose status thread died with
# "dictionary changed size during iteration".
def test_jobs_handed_over_while_another_thread_polls(local: LocalBackend, tmp_path: Path) -> None:
    policy = SquashPolicy("squash", max_jobs=1000, max_time=3600)
    backend = SquashBackend(local, policy, work_dir=tmp_path, idle=1)
    handles: list[JobHandle] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def status_thread() -> None:
        while not done.is_set():
            try:
                backend.poll(list(handles))
            except BaseException as exc:
                errors.append(exc)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    poller = threading.Thread(target=status_thread)
    poller.start()
    try:
        for batch in range(30):
            specs = [JobSpec(f"j{batch}-{n}", ["true"], SMALL) for n in range(40)]
            handles.extend(backend.submit(specs))
            if errors:
                break
    finally:
        done.set()
        poller.join()
        sys.setswitchinterval(interval)
        backend.close()
    assert errors == []


def test_inside_an_allocation_each_job_is_held_to_its_memory_by_the_kernel(
    local: LocalBackend, tmp_path: Path
) -> None:
    from seqera_core.backends.local._cgroup import MemoryCgroups

    made, why = MemoryCgroups.open()
    if made is None:
        pytest.skip(f"no memory cgroup can be made here ({why})")
    made.close()
    # 158 MB touched under a 64 MiB request, three times in one allocation, beside a
    # small job that must not be touched by its neighbours' kills
    hog = ("b = bytearray(158 * 10**6); b[::4096] = b'x' * len(b[::4096]); "
           "import time; time.sleep(0.5)")  # fmt: skip
    specs = [JobSpec(f"hog{i}", [sys.executable, "-c", hog], SMALL) for i in range(3)]
    specs.append(counting(tmp_path, "small"))
    backend = squash(local, tmp_path, cpus=2)
    statuses = wait(backend, backend.submit(specs), limit=60)
    assert local.calls["spawn"] == 1  # one allocation held them all
    for status in statuses[:3]:
        assert status.state is JobState.FAILED and status.out_of_memory, status
        assert status.peak_memory_bytes is not None, status
        assert 48 * MIB <= status.peak_memory_bytes <= 64 * MIB, status
    assert statuses[3].state is JobState.SUCCEEDED, statuses[3]
    backend.close()
