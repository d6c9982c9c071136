"""slurmctld stopped and started again in the middle of a run driven through the backend.

Jobs go out in waves while a second thread stops the controller (SIGTERM: it saves its
state) and starts it again some seconds later; submissions and polls in that window meet
"Unable to contact slurm controller". Each job appends its Slurm id to a file of its
own, so the count of side effects says how often each ran; Slurm's own completion log
(``sacct -c``, jobcomp/filetxt) says how many jobs it accepted under each name.

Reproduce: ``uvx nox -s faults -- -k controller_restart``
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from seqera_core.backends.base import JobHandle, JobSpec, JobState
from seqera_core.backends.batch._commands import CommandResult, RetryPolicy, run_command
from seqera_core.backends.batch.slurm import SlurmBackend

from .conftest import FaultRow, FaultTable, SlurmCluster, wait

pytestmark = pytest.mark.integration

JOBS = 40
WAVES = 4
DOWN_SECONDS = 12.0
# sbatch itself keeps trying to reach a stopped controller; a timeout shorter than the
# outage makes the backend give up on it: the outcome is unknown, the interesting case.
TIMEOUT = 4.0


def spec(out: Path, i: int) -> JobSpec:
    script = 'echo "$SLURM_JOB_ID" >> "$1/runs.$2"; sleep 2; echo ok > "$1/out.$2"; exit "$3"'
    code = 3 if i % 5 == 4 else 0
    return JobSpec(f"restart-{i}", ["sh", "-c", script, "sh", str(out), str(i), str(code)])


def accepted_by_slurm(prefix: str) -> Counter[str]:
    """How many jobs Slurm completed under each name (its jobcomp log)."""
    done = subprocess.run(
        ["sacct", "-c", "-n", "-P", "-o", "JobID,JobName"],
        capture_output=True,
        text=True,
        check=True,
    )
    names: Counter[str] = Counter()
    seen: set[str] = set()
    for line in done.stdout.splitlines():
        job_id, _, name = line.partition("|")
        if name.startswith(prefix) and job_id not in seen:  # a requeue repeats its id
            seen.add(job_id)
            names[name] += 1
    return names


def test_controller_restart_mid_run_runs_every_job_once(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    met: list[CommandResult] = []

    def runner(
        argv: Sequence[str], timeout: float, cwd: str | None, env: Mapping[str, str] | None
    ) -> CommandResult:
        # the real command; what the outage did to sbatch is counted for the table
        result = run_command(argv, timeout, cwd, env)
        if argv[0] == "sbatch" and not result.ok:
            met.append(result)
        return result

    backend = SlurmBackend(
        work_dir=tmp_path / "jobs",
        timeout=TIMEOUT,
        retry=RetryPolicy(attempts=40, first_delay=0.5, max_delay=2),
        runner=runner,
    )
    restarted = threading.Event()
    failures: list[BaseException] = []

    def restart() -> None:
        try:
            time.sleep(DOWN_SECONDS)
            slurm.start_controller()
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)
        finally:
            restarted.set()

    handles: list[JobHandle] = []
    size = JOBS // WAVES
    fault = threading.Thread(target=restart)
    for wave in range(WAVES):
        handles += backend.submit([spec(out, i) for i in range(wave * size, (wave + 1) * size)])
        if wave == 0:
            # down while the next waves go out (the first wave's jobs are queued or running)
            slurm.stop_controller()
            fault.start()
    fault.join(120)
    assert restarted.is_set() and not failures, failures
    statuses = wait(backend, handles, limit=240)
    runs = [(out / f"runs.{i}").read_text().split() if (out / f"runs.{i}").exists() else []
            for i in range(JOBS)]  # fmt: skip
    names = accepted_by_slurm("restart-")
    fault_table.rows.append(
        FaultRow(
            fault=f"slurmctld down {DOWN_SECONDS:.0f} s mid-run, {WAVES} waves (sbatch calls hit)",
            injected=len(met),  # sbatch calls the outage made time out or fail
            jobs=JOBS,
            submitted=sum(names.values()),
            ran=sum(1 for r in runs if r),
            lost=sum(1 for r in runs if not r),
            twice=sum(1 for r in runs if len(r) > 1),
            command="uvx nox -s faults -- -k controller_restart",
        )
    )
    assert all(len(r) == 1 for r in runs), runs
    assert names == Counter({f"restart-{i}": 1 for i in range(JOBS)})
    assert [(s.state, s.exit_code) for s in statuses] == [
        (JobState.FAILED, 3) if i % 5 == 4 else (JobState.SUCCEEDED, 0) for i in range(JOBS)
    ]
    assert all((out / f"out.{i}").read_text() == "ok\n" for i in range(JOBS))
    # the fault did meet the submissions, and none was sent twice for it
    assert met, "no submission met the outage"
