"""The local backend's memory limit enforced by the kernel, in a memory cgroup per job.

A job that touches 158 MB under a 64 MiB request is killed as out of memory every time
(five runs, as the leader and as a child of a shell) and its peak is the cgroup's; the
cgroups are gone after the backend closes. Where no cgroup can be made (no root, no
delegated subtree) the backend samples instead and says so once: that is tested too.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends.base import JobSpec, JobState
from seqera_core.backends.local import LocalBackend
from seqera_core.backends.local._cgroup import MemoryCgroups
from seqera_core.models import ResourceRequest

MIB = 2**20
# 158 MB touched page by page (resident, not just reserved), then a pause
HOG = ("b = bytearray(158 * 10**6); b[::4096] = b'x' * len(b[::4096]); "
       "import time; time.sleep(0.5)")  # fmt: skip


@pytest.fixture
def cgroups_here() -> None:
    made, why = MemoryCgroups.open()
    if made is None:
        pytest.skip(f"no memory cgroup can be made here ({why}); the backend samples")
    made.close()


def _spec(command: tuple[str, ...], name: str) -> JobSpec:
    return JobSpec(name=name, command=command, request=ResourceRequest(cpus=1, memory=64 * MIB))


@pytest.mark.usefixtures("cgroups_here")
def test_a_158_mb_job_under_64_mib_is_killed_as_out_of_memory_every_time(
    tmp_path: Path,
) -> None:
    backend = LocalBackend(cpus=2, work_dir=tmp_path / "logs", kill_grace=0.3)
    assert backend._cgroups is not None
    base = backend._cgroups.base
    # the Python process as the job's leader, and as a child of a shell that outlives it
    in_shell = f'"{sys.executable}" -c "{HOG}"; code=$?; echo after >&2; exit $code'
    shapes = {"leader": (sys.executable, "-c", HOG), "child": ("sh", "-c", in_shell)}
    specs = [_spec(command, f"{shape}-{i}") for shape, command in shapes.items()
             for i in range(5)]  # fmt: skip
    handles = backend.submit(specs)
    deadline = time.monotonic() + 120
    statuses = backend.poll(handles)
    while not all(s.state.finished for s in statuses):
        assert time.monotonic() < deadline, statuses
        time.sleep(0.1)
        statuses = backend.poll(handles)
    backend.close()
    for status in statuses:
        assert status.state is JobState.FAILED and status.out_of_memory, status
        assert status.cause == "out_of_memory" and status.exit_code == 137, status
        # the cgroup's high-water mark: up to the limit, far past what a sample could miss
        assert status.peak_memory_bytes is not None, status
        assert 48 * MIB <= status.peak_memory_bytes <= 64 * MIB, status
    assert not base.exists()  # every cgroup removed


def test_without_a_cgroup_the_backend_samples_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The machine without cgroups, as a user without root or delegation has it: the
    # controller is looked for in a /proc/self/cgroup that names none.
    from seqera_core.backends.local import _cgroup

    monkeypatch.setattr(_cgroup, "_own", lambda controller: None)
    with caplog.at_level(logging.WARNING, logger="seqera_core.backends.local"):
        backend = LocalBackend(cpus=2, work_dir=tmp_path / "logs", kill_grace=0.3,
                               sample_interval=0.05)  # fmt: skip
        (handle,) = backend.submit([_spec((sys.executable, "-c", HOG), "sampled")])
        deadline = time.monotonic() + 60
        while not (status := backend.poll([handle])[0]).state.finished:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        backend.close()
    said = [r.getMessage() for r in caplog.records if "sampled" in r.getMessage()]
    assert len(said) == 1 and "not enforced by the kernel" in said[0], said
    assert status.out_of_memory, status  # the sample saw it past 64 MiB and killed it
