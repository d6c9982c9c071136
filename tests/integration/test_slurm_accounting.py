"""Slurm accounting as a history source, on a real one-node Slurm with slurmdbd.

What a job used (sacct's largest step MaxRSS and Elapsed) comes with its final status,
one ``sacct`` per poll for every job that ended in it; ``seqera run --history`` then
sizes the next run of the same job from it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState
from seqera_core.backends.batch.slurm import SlurmBackend
from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .conftest import SlurmCluster

pytestmark = pytest.mark.integration

HOLD = "import time; b = bytearray({size}); time.sleep(3)"


def test_finished_jobs_bring_their_peak_and_wall_time(
    slurm_accounting: SlurmCluster, tmp_path: Path
) -> None:
    backend = SlurmBackend(work_dir=tmp_path / "jobs", env=slurm_accounting.env)
    sizes = (100 * 10**6, 200 * 10**6, 300 * 10**6)
    specs = [
        JobSpec(f"hold{n}", [sys.executable, "-c", HOLD.format(size=n)],
                ResourceRequest(memory=1024 * MIB, time=600))
        for n in sizes
    ]  # fmt: skip
    handles = backend.submit(specs)
    polls = ends = 0
    ended: set[str] = set()
    deadline = time.monotonic() + 180
    while True:
        statuses = backend.poll(handles)
        polls += 1
        newly = {s.handle.native_id for s in statuses if s.state.finished} - ended
        ends += bool(newly)
        ended |= newly
        if len(ended) == len(handles):
            break
        assert time.monotonic() < deadline, statuses
        time.sleep(0.5)
    assert {s.state for s in statuses} == {JobState.SUCCEEDED}
    for size, status in zip(sizes, statuses, strict=True):
        # the interpreter itself adds some tens of MB to what the job holds
        assert status.peak_memory_bytes is not None
        assert size <= status.peak_memory_bytes <= size + 150 * 10**6, status
        assert status.wall_seconds is not None and 3 <= status.wall_seconds <= 60
        # TotalCPU: the interpreter's start and the allocation, well under its wall time
        assert status.cpu_seconds is not None and 0 < status.cpu_seconds < status.wall_seconds
    # one sacct per poll in which jobs ended, for all of them; none while they ran
    assert backend.calls["sacct"] == ends <= polls
    assert backend.calls["squeue"] == polls


def test_a_second_run_asks_for_what_the_first_used(
    slurm_accounting: SlurmCluster, tmp_path: Path
) -> None:
    db = tmp_path / "history.db"
    argv = [sys.executable, "-m", "seqera_core.cli", "run", "--backend", "slurm",
            "--history", str(db), "--name", "hold", "--memory", "4GB", "--time", "1h",
            "--", sys.executable, "-c", HOLD.format(size=200 * 10**6)]  # fmt: skip
    env = {**os.environ, **slurm_accounting.env}
    for _ in range(2):
        done = subprocess.run(
            argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False
        )
        assert done.returncode == 0, done.stderr
    _, (first, second) = open_history(db).attempts()
    assert first.memory == 4 * 10**9 and first.succeeded and second.succeeded
    assert first.peak_memory is not None and first.peak_memory >= 200 * 10**6
    # sized from the first run's accounted peak: 1.2 x (under 10 runs), far below 4 GB
    assert second.memory == -(-first.peak_memory * 12 // 10)
    # what Slurm itself holds for the job: slurmctld keeps it for MinJobAge (300 s); the
    # accounting row can still lack the job's request this soon after it ended
    # (the history keys a seqera run task by the run, not the job: the last job is the second)
    jobs = subprocess.run(
        ["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    shown = max(jobs, key=lambda line: int(line.split()[0].removeprefix("JobId=")))
    mib = -(-second.memory // MIB)
    assert f"MinMemoryNode={mib}M" in shown.split(), shown
