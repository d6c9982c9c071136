"""The local backend's fork server on real processes: ``python -m`` jobs of a preloaded
package start as forks, isolated as new processes are; everything else as before."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqera_core.backends import LocalBackend, open_backend
from seqera_core.backends.base import JobSpec, JobState
from seqera_core.backends.local._forking import ForkServer
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from ....processes import ends
from .conftest import wait

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

# A job module for the server to preload (its imports, as Snakemake's, load once; the
# module itself runs anew as __main__): what it does depends on its first argument.
DEPENDENCY = "import time\nLOADED_AT = time.time()\n"
JOB = """
import os, subprocess, sys, time

from forkdep import LOADED_AT


def warm():
    pass


if __name__ == "__main__":
    what = sys.argv[1]
    with open("report", "w") as out:
        print(os.getcwd(), os.environ.get("LEAK"), os.environ.get("MINE"), os.getppid(), file=out)
        print(LOADED_AT, os.getsid(0) == os.getpid(), sys.path[0], file=out)
    print("to stdout")
    print("to stderr", file=sys.stderr)
    # What a job may do to its own process; none of it may reach the next job.
    os.chdir("/")
    os.environ["LEAK"] = "leaked"
    if what == "exit":
        sys.exit(int(sys.argv[2]))
    if what == "raise":
        raise RuntimeError("the job's own error")
    if what == "sleep":  # with a grandchild in its group
        child = subprocess.Popen(["sleep", "300"])
        open(sys.argv[2], "w").write(f"{os.getpid()} {child.pid}")
        time.sleep(300)
    if what == "hog":
        block = bytearray(80 * 2**20)
        time.sleep(0.5)
    if what == "spin":  # CPU time, however busy the machine is
        while time.process_time() < 0.4:
            pass
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "lib"
    directory.mkdir()
    (directory / "forkjob.py").write_text(textwrap.dedent(JOB))
    (directory / "forkdep.py").write_text(DEPENDENCY)
    # The server inherits this process's environment, so it finds the module.
    monkeypatch.setenv("PYTHONPATH", str(directory))
    monkeypatch.delenv("LEAK", raising=False)
    return directory


@pytest.fixture
def backend(tmp_path: Path, module: Path) -> Iterator[LocalBackend]:
    local = LocalBackend(
        cpus=2,
        work_dir=tmp_path / "logs",
        kill_grace=0.5,
        sample_interval=0.05,
        preload=["forkjob:warm"],
    )
    yield local
    local.close()


def job(tmp_path: Path, name: str, *args: str, time_limit: int | None = None) -> JobSpec:
    workdir = tmp_path / name
    workdir.mkdir(exist_ok=True)
    return JobSpec(
        name=name,
        command=(sys.executable, "-m", "forkjob", *args),
        request=ResourceRequest(memory=512 * MIB, time=time_limit),
        workdir=str(workdir),
        env={"MINE": name},
    )


def report(tmp_path: Path, name: str) -> list[str]:
    return (tmp_path / name / "report").read_text().split()


def test_jobs_fork_from_one_preload_and_nothing_leaks_between_them(
    tmp_path: Path, backend: LocalBackend
) -> None:
    first = backend.submit([job(tmp_path, "first", "ok")])
    assert wait(backend, first)[0].state is JobState.SUCCEEDED
    second = backend.submit([job(tmp_path, "second", "ok")])
    status = wait(backend, second)[0]
    assert status.state is JobState.SUCCEEDED and status.exit_code == 0
    assert backend.calls["fork"] == 2 and backend.calls["spawn"] == 2
    cwd, leak, mine, parent = report(tmp_path, "second")[:4]
    # Its own directory and environment, though the first job changed both in its process.
    assert (cwd, leak, mine) == (str(tmp_path / "second"), "None", "second")
    # A child of the server, not of this process; imports from the one preload.
    assert int(parent) != os.getpid()
    loaded_first, own_session, path0 = report(tmp_path, "first")[4:]
    assert report(tmp_path, "second")[4] == loaded_first
    assert own_session == "True" and path0 == str(tmp_path / "first")
    assert backend.logs(status.handle) == "to stdout\nto stderr\n"
    assert os.getcwd() != "/" and "LEAK" not in os.environ


def test_exit_codes_and_limits_are_those_of_a_new_process(
    tmp_path: Path, backend: LocalBackend
) -> None:
    specs = [
        job(tmp_path, "three", "exit", "3"),
        job(tmp_path, "raises", "raise"),
        job(tmp_path, "slow", "sleep", str(tmp_path / "pids"), time_limit=1),
    ]
    three, raises, slow = wait(backend, backend.submit(specs))
    assert (three.state, three.exit_code) == (JobState.FAILED, 3)
    assert (raises.state, raises.exit_code) == (JobState.FAILED, 1)
    assert "RuntimeError: the job's own error" in backend.logs(raises.handle)
    assert slow.state is JobState.FAILED and slow.time_limit and slow.exit_code == 128 + 15
    assert backend.calls["fork"] == 3


def test_cancel_ends_the_whole_group_of_a_forked_job(tmp_path: Path, backend: LocalBackend) -> None:
    pids = tmp_path / "pids"
    handles = backend.submit([job(tmp_path, "sleeper", "sleep", str(pids))])
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()):
        assert time.monotonic() < deadline, backend.poll(handles)
        time.sleep(0.05)
    backend.cancel(handles)
    status = wait(backend, handles)[0]
    assert status.state is JobState.CANCELLED
    for pid in map(int, pids.read_text().split()):
        # the sleep grandchild was in the job's group: killed with it (a zombie is gone too)
        assert ends(pid, within=10), f"process {pid} outlived its cancelled job"


def test_peak_memory_is_measured_for_a_forked_job(tmp_path: Path, backend: LocalBackend) -> None:
    status = wait(backend, backend.submit([job(tmp_path, "hog", "hog")]))[0]
    assert status.state is JobState.SUCCEEDED
    assert status.peak_memory_bytes is not None and status.peak_memory_bytes >= 80 * 2**20


def test_cpu_time_is_measured_for_a_forked_job(tmp_path: Path, backend: LocalBackend) -> None:
    spin, nap = wait(backend, backend.submit([job(tmp_path, "spin", "spin"),
                                              job(tmp_path, "hog", "hog")]))  # fmt: skip
    assert spin.state is nap.state is JobState.SUCCEEDED
    # the server's wait4 rusage: what the forked job's own process used, no more
    assert spin.cpu_seconds is not None and 0.4 <= spin.cpu_seconds < 2
    assert nap.cpu_seconds is not None and nap.cpu_seconds < spin.cpu_seconds


def test_other_jobs_start_as_new_processes(tmp_path: Path, backend: LocalBackend) -> None:
    shell = JobSpec(
        name="shell",
        command=("sh", "-c", 'pwd; echo "$MINE"; exit 4'),
        request=ResourceRequest(),
        workdir=str(tmp_path),
        env={"MINE": "x"},
    )
    # another interpreter path is not the server's, even if it is the same file
    other = Path(tmp_path / "bin")
    other.mkdir()
    (other / "python").symlink_to(sys.executable)
    elsewhere = JobSpec(
        name="elsewhere",
        command=(str(other / "python"), "-c", "print('not preloaded')"),
        request=ResourceRequest(),
    )
    done = wait(backend, backend.submit([shell, elsewhere]))
    assert [s.exit_code for s in done] == [4, 0]
    assert backend.logs(done[0].handle) == f"{tmp_path}\nx\n"
    assert backend.calls["spawn"] == 2 and backend.calls["fork"] == 0


def test_a_dead_server_fails_its_jobs_and_later_ones_run_as_processes(
    tmp_path: Path, backend: LocalBackend
) -> None:
    pids = tmp_path / "pids"
    handles = backend.submit([job(tmp_path, "orphan", "sleep", str(pids))])
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()):
        assert time.monotonic() < deadline, backend.poll(handles)
        time.sleep(0.05)
    server = int(report(tmp_path, "orphan")[3])
    os.kill(server, signal.SIGKILL)
    status = wait(backend, handles)[0]
    assert status.state is JobState.FAILED and "fork server died" in (status.reason or "")
    for pid in map(int, pids.read_text().split()):
        assert ends(pid, within=10), f"process {pid} outlived its lost job"
    after = wait(backend, backend.submit([job(tmp_path, "after", "exit", "0")]))[0]
    assert after.state is JobState.SUCCEEDED
    assert backend.calls["fork"] == 1 and backend.calls["spawn"] == 2


def test_the_registry_hands_preload_to_the_local_backend(tmp_path: Path, module: Path) -> None:
    backend = open_backend("local", work_dir=tmp_path / "logs", preload=["forkjob:warm"])
    try:
        assert isinstance(backend, LocalBackend)
        status = wait(backend, backend.submit([job(tmp_path, "registry", "ok")]))[0]
        assert status.state is JobState.SUCCEEDED and backend.calls["fork"] == 1
    finally:
        backend.close()


def test_a_server_forked_from_this_process_keeps_its_imports(
    tmp_path: Path, module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(module))
    import forkdep  # imported here, before the fork: the server must not import it again

    server = ForkServer(["forkjob:warm"], fork=True)
    pid = server.pid
    assert server.forked and pid is not None
    with LocalBackend(cpus=2, work_dir=tmp_path / "logs", fork_server=server) as backend:
        status = wait(backend, backend.submit([job(tmp_path, "early", "ok")]))[0]
        assert status.state is JobState.SUCCEEDED and backend.calls["fork"] == 1
        cwd, leak, mine, parent, loaded, own_session, _ = report(tmp_path, "early")
        assert (cwd, leak, mine) == (str(tmp_path / "early"), "None", "early")
        assert int(parent) == pid and own_session == "True"
        assert float(loaded) == forkdep.LOADED_AT
        assert Path(f"/proc/{pid}/comm").read_text() == "seqera-forks\n"
    assert ends(pid, within=10), "the server outlived its backend"


def test_with_threads_running_the_server_is_a_new_interpreter(tmp_path: Path, module: Path) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        server = ForkServer(["forkjob:warm"], fork=True)
    finally:
        stop.set()
        thread.join()
    pid = server.pid
    assert not server.forked and pid is not None
    with LocalBackend(cpus=2, work_dir=tmp_path / "logs", fork_server=server) as backend:
        status = wait(backend, backend.submit([job(tmp_path, "late", "ok")]))[0]
        assert status.state is JobState.SUCCEEDED and backend.calls["fork"] == 1
    assert ends(pid, within=10)


def test_a_fork_server_given_to_a_backend_that_does_not_fork_is_closed(
    tmp_path: Path, module: Path
) -> None:
    server = ForkServer(["forkjob:warm"])
    pid = server.pid
    assert pid is not None
    backend = open_backend("slurm", work_dir=tmp_path / "jobs", fork_server=server)
    backend.close()
    assert not server.alive and ends(pid, within=10)
    # and one given to the local backend is its fork server
    server = ForkServer(["forkjob:warm"])
    local = open_backend("local", work_dir=tmp_path / "logs", fork_server=server)
    try:
        status = wait(local, local.submit([job(tmp_path, "given", "ok")]))[0]  # type: ignore[arg-type]
        assert status.state is JobState.SUCCEEDED and local.calls["fork"] == 1
        assert int(report(tmp_path, "given")[3]) == server.pid
    finally:
        local.close()


def test_a_forked_server_nobody_takes_ends_quietly(
    module: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Snakemake builds the settings (and so the server) for a dry run too
    server = ForkServer(["forkjob:warm"], fork=True)
    pid = server.pid
    assert server.forked and pid is not None
    server.close()
    assert ends(pid, within=10)
    assert "Traceback" not in capfd.readouterr().err
