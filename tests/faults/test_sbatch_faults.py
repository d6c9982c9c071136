"""``sbatch`` that fails AFTER Slurm accepted the job: every job still runs exactly once.

A shim first on the backend's PATH runs the real ``sbatch`` and then, on a fixed share of
calls, throws its answer away and either exits 1 with slurmctld's "Socket timed out on
send/recv operation" or hangs past the backend's timeout. Each job appends its Slurm id to
a file of its own: a job run twice leaves two lines, a lost one none. The shim also
records every job Slurm accepted, so a second submission of the same job shows even if
the copy never ran.

Reproduce: ``uvx nox -s faults -- -k sbatch``
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from seqera_core.backends.base import JobSpec, JobState
from seqera_core.backends.batch._commands import RetryPolicy
from seqera_core.backends.batch.slurm import SlurmBackend

from .conftest import FaultRow, FaultTable, SlurmCluster, unavailable, wait

pytestmark = pytest.mark.integration

SOCKET_TIMEOUT = (
    "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
)
SHIM = """#!/bin/sh
# sbatch that really submits, then on every {every}th call loses the answer ({mode}).
state={state}
n=$(( $(cat "$state/calls" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$state/calls"
out=$({real} "$@") || {{ status=$?; echo "$out"; exit $status; }}
echo "$out" >> "$state/accepted"
if [ $(( n % {every} )) -eq 1 ] || [ {every} -eq 1 ]; then
    echo "$n" >> "$state/injected"
    case {mode} in
        fail) echo {message} >&2; exit 1 ;;
        hang) exec sleep 300 ;;
    esac
fi
echo "$out"
"""


def write_shim(directory: Path, mode: str, every: int) -> Path:
    real = shutil.which("sbatch")
    if real is None:
        unavailable("sbatch is not installed")
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    state = directory / "state"
    state.mkdir()
    shim = bin_dir / "sbatch"
    shim.write_text(
        SHIM.format(every=every, mode=mode, state=state, real=real, message=f"'{SOCKET_TIMEOUT}'")
    )
    shim.chmod(0o755)
    return bin_dir


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def jobs(out: Path, count: int) -> list[JobSpec]:
    # job i appends its id to runs.i and exits i % 4 == 3 ? 3 : 0
    script = 'echo "$SLURM_JOB_ID" >> "$1/runs.$2"; echo ok > "$1/out.$2"; exit "$3"'
    return [
        JobSpec(
            f"fault-{i}", ["sh", "-c", script, "sh", str(out), str(i), str(3 if i % 4 == 3 else 0)]
        )
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("mode", "every", "count", "timeout"),
    [("fail", 2, 16, 20.0), ("hang", 3, 9, 4.0)],
    ids=["socket-timeout-after-accept", "hang-after-accept"],
)
def test_sbatch_losing_its_answer_runs_every_job_once(
    slurm: SlurmCluster,
    tmp_path: Path,
    fault_table: FaultTable,
    mode: str,
    every: int,
    count: int,
    timeout: float,
) -> None:
    bin_dir = write_shim(tmp_path, mode, every)
    out = tmp_path / "out"
    out.mkdir()
    backend = SlurmBackend(
        work_dir=tmp_path / "jobs",
        timeout=timeout,
        retry=RetryPolicy(attempts=8, first_delay=0.5, max_delay=2),
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    handles = backend.submit(jobs(out, count))
    statuses = wait(backend, handles, limit=120)
    state = tmp_path / "state"
    injected = len(lines(state / "injected"))
    accepted = lines(state / "accepted")
    runs = [lines(out / f"runs.{i}") for i in range(count)]
    fault_table.rows.append(
        FaultRow(
            fault=f"sbatch {mode} after Slurm accepted (1 call in {every})",
            injected=injected,
            jobs=count,
            submitted=len(accepted),
            ran=sum(1 for r in runs if r),
            lost=sum(1 for r in runs if not r),
            twice=sum(1 for r in runs if len(r) > 1),
            command=f"uvx nox -s faults -- -k {mode}-after-accept",
        )
    )
    assert injected >= count // every  # the faults did happen
    assert len(accepted) == count, f"Slurm accepted {len(accepted)} jobs for {count}"
    assert all(len(r) == 1 for r in runs), runs
    # the handle's id is the job that ran, and it ended as its command did
    assert [h.native_id for h in handles] == [r[0] for r in runs]
    assert [(s.state, s.exit_code) for s in statuses] == [
        (JobState.FAILED, 3) if i % 4 == 3 else (JobState.SUCCEEDED, 0) for i in range(count)
    ]
    assert all((out / f"out.{i}").read_text() == "ok\n" for i in range(count))
    assert backend.calls["sbatch"] == count  # no job was sent twice
