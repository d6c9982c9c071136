"""The routing backend over this machine and a squashing Slurm candidate on the real
one-node Slurm (16 CPUs): the candidate's own allocation, running the route's jobs, is
room for them (its jobs end when they are expected to), not another user's job held to
its time limit."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from seqera_core.backends import Backend, JobSpec, JobState, open_backend
from seqera_core.backends.route import RouteBackend
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .conftest import SlurmCluster, wait
from .test_squash_slurm import squash

pytestmark = pytest.mark.integration


def test_a_running_allocation_is_room_for_the_routes_own_jobs(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    def open_one(name: str, fork_server: Any = None) -> Backend:
        if name == "local":
            return open_backend("local", work_dir=tmp_path / "local", cpus=1)
        return squash(tmp_path)  # as wide as its jobs, up to the node's 16 CPUs

    gate, log = tmp_path / "gate", tmp_path / "runs.log"
    route = RouteBackend(("local", "slurm"), opener=open_one, pin=["held=slurm"],
                         scheduler_every=0.1, overhead=["slurm=1"])  # fmt: skip
    try:
        # 16 one-core jobs expected to take 40 s each fill one allocation of 16 cores
        held = [
            JobSpec(f"held{n}", ["sh", "-c", f"echo {n} >> {log}; until [ -e {gate} ]; "
                                 "do sleep 0.2; done"],
                    ResourceRequest(process="held", cpus=1, memory=50 * MIB, time=40))
            for n in range(16)
        ]  # fmt: skip
        handles = route.submit(held)
        deadline = time.monotonic() + 90
        while not log.exists() or len(log.read_text().split()) < 16:
            assert time.monotonic() < deadline, "the allocation did not start its 16 jobs"
            route.poll(handles)
            time.sleep(0.2)
        time.sleep(0.3)  # squeue's next answer shows the allocation running
        probe = JobSpec("next", ["true"], ResourceRequest(process="next", cpus=1, time=40))
        _, slurm_verdict = route.verdicts(probe)
        # its cores come back as the route's jobs end (40 s, the overhead 1 s), not when
        # the allocation's own time limit says (120 s here, hours for a large one)
        assert slurm_verdict.refused is None
        assert 1 < slurm_verdict.start <= 45, slurm_verdict
        gate.touch()
        statuses = wait(route, handles)
        assert all(s.state is JobState.SUCCEEDED for s in statuses)
        assert sorted(log.read_text().split(), key=int) == [str(n) for n in range(16)]
    finally:
        gate.touch()
        route.close()
