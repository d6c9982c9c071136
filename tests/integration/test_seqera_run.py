"""``seqera run`` end to end on the real one-node Slurm, as a user types it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SlurmCluster

pytestmark = pytest.mark.integration


def _seqera(cluster: SlurmCluster, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **cluster.env}
    return subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", *argv],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=180, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["slurm", "torque"])
def test_run_exits_with_the_jobs_code_and_shows_its_output(
    slurm: SlurmCluster, tmp_path: Path, backend: str
) -> None:
    done = _seqera(
        slurm, tmp_path, "run", "--backend", backend, "--cpus", "1", "--memory", "100MB",
        "--time", "5m", "--label", "team=genomics", "--",
        "sh", "-c", "echo hello from $0; exit 3", "the job",
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "hello from the job" in done.stdout


def test_run_rejects_bad_units_before_submitting(slurm: SlurmCluster, tmp_path: Path) -> None:
    done = _seqera(slurm, tmp_path, "run", "--backend", "slurm", "--memory", "4 gb", "--", "true")
    assert done.returncode == 2
    assert "--memory" in done.stderr and "4 gb" in done.stderr
