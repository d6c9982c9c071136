"""A node that fails under a running job: the backend sends the job again by itself.

The one node is set DOWN under a running job submitted with ``--no-requeue`` (so Slurm
reports NODE_FAIL instead of requeueing it itself). The backend resubmits it with the
node excluded; on a one-node cluster sbatch refuses that, so it goes out without the
exclusion and waits for the node, which is resumed. The engine's handle stays the same
and the final status counts one resubmission; a job that needs more memory or time is
not resubmitted (see tests/integration/test_slurm.py).

Reproduce: ``uvx nox -s faults -- -k node``
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from seqera_core.backends.base import JobSpec, JobState
from seqera_core.backends.batch._commands import RetryPolicy
from seqera_core.backends.batch.slurm import SlurmBackend
from seqera_core.models import ResourceRequest

from .conftest import FaultRow, FaultTable, SlurmCluster, wait

pytestmark = pytest.mark.integration


def scontrol(*args: str) -> str:
    done = subprocess.run(["scontrol", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"scontrol {' '.join(args)}: {done.stderr}"
    return done.stdout


def resume(node: str) -> None:
    """Put the node back in service if it is still down (ReturnToService=2 may have)."""
    state = scontrol("show", "node", node, "-o")
    if "DOWN" in state or "DRAIN" in state:
        scontrol("update", f"nodename={node}", "state=resume")


def test_a_failed_node_is_resubmitted_once_with_the_same_handle(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable
) -> None:
    node = scontrol("show", "nodes", "-o").split()[0].removeprefix("NodeName=")
    out = tmp_path / "out"
    out.mkdir()
    backend = SlurmBackend(work_dir=tmp_path / "jobs", retry=RetryPolicy(attempts=10))
    script = 'echo "$SLURM_JOB_ID" >> "$1/runs"; sleep 8; echo ok > "$1/out"'
    request = ResourceRequest(extra={"slurm.extra": "--no-requeue"})
    [handle] = backend.submit([JobSpec("node-fail", ["sh", "-c", script, "sh", str(out)], request)])
    deadline = time.monotonic() + 60
    while not (out / "runs").exists():  # running
        assert time.monotonic() < deadline, backend.poll([handle])
        time.sleep(0.2)
    try:
        scontrol("update", f"nodename={node}", "state=down", "reason=fault-suite")
        deadline = time.monotonic() + 60
        while True:
            [status] = backend.poll([handle])
            if status.resubmissions:
                break
            assert time.monotonic() < deadline and not status.state.finished, status
            time.sleep(0.5)
        assert status.state is JobState.PENDING and f"node failure on {node}" in (
            status.reason or ""
        )
    finally:
        resume(node)
    [final] = wait(backend, [handle], limit=120)
    runs = (out / "runs").read_text().split()
    fault_table.rows.append(
        FaultRow(
            fault="node set DOWN under a running job (NODE_FAIL, --no-requeue)",
            injected=1,
            jobs=1,
            submitted=len(set(runs)),
            ran=1 if (out / "out").exists() else 0,
            lost=0 if final.state is JobState.SUCCEEDED else 1,
            twice=0,  # the first run was killed with its node: one run completed
            command="uvx nox -s faults -- -k node",
        )
    )
    assert (final.state, final.exit_code, final.handle) == (JobState.SUCCEEDED, 0, handle)
    assert final.resubmissions == 1 and backend.calls["sbatch"] == 3  # excluded, refused, sent
    assert len(runs) == 2 and runs[0] == handle.native_id  # killed once, completed once
    assert (out / "out").read_text() == "ok\n"
