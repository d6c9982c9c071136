"""A squash backend used as engines use it: Snakemake hands jobs over (``run_jobs``) from
its main thread while its status thread polls (``check_active_jobs``), so ``submit`` and
``poll`` run at the same time; found in a 2,000-job run whose status thread died with
"dictionary changed size during iteration"."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqera_core.backends import JobHandle, JobSpec, LocalBackend
from seqera_core.backends._squash import SquashBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

SMALL = ResourceRequest(cpus=1, memory=64 * MIB, time=60)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalBackend]:
    backend = LocalBackend(cpus=2, memory=4096 * MIB, work_dir=tmp_path / "local", kill_grace=0.3)
    yield backend
    backend.close()


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
