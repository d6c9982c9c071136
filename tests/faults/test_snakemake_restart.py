"""A ``snakemake --executor seqera --seqera-backend slurm`` run while slurmctld is stopped
and started again: every job runs once, every output is there, exit 0.

CI runs 30 jobs (its time budget); ``SEQERA_FAULTS_SNAKEMAKE_JOBS=100`` runs the issue's
100 (about 4.5 minutes on a loaded two-core machine).

The controller goes down once a fifth of the jobs have started (counted by their side
effects), for long enough that the executor's ``sbatch`` calls time out and its status
checks get no answer.

Reproduce: ``SEQERA_FAULTS_SNAKEMAKE_JOBS=100 uvx nox -s faults -- -k survives``
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import FaultRow, FaultTable, Outage, SlurmCluster, killed_and_run_again
from .test_controller_restart import accepted_by_slurm

pytestmark = pytest.mark.integration

JOBS = int(os.environ.get("SEQERA_FAULTS_SNAKEMAKE_JOBS", "30"))
DOWN_SECONDS = 12.0
SNAKEFILE = f"""
N = range({JOBS})

rule all:
    input: expand("out/{{i}}.txt", i=N)

# A rule name of its own: Slurm's completion log is the cluster's, and the other fault
# tests' Snakemake runs (signals, kill -9) send rules named "work" to the same cluster.
rule survive:
    output: "out/{{i}}.txt"
    resources: runtime=5
    shell: "echo $SLURM_JOB_ID >> runs/{{wildcards.i}}; echo {{wildcards.i}} > {{output}}"
"""


def test_survives_a_controller_restart(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS"):
        monkeypatch.delenv(name, raising=False)
    workdir = tmp_path / "wf"
    (workdir / "runs").mkdir(parents=True)
    (workdir / "Snakefile").write_text(SNAKEFILE)
    outage = Outage(lambda: len(list((workdir / "runs").iterdir())) >= JOBS // 5,
                    slurm.stop_controller, slurm.start_controller, DOWN_SECONDS,
                    within=240, poll=0.2).begin()  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend", "slurm",
         "--jobs", "25", "--seconds-between-status-checks", "1", "--latency-wait", "5"],
        cwd=workdir, env=dict(os.environ), capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    outage.join(60)
    runs = [
        (workdir / "runs" / str(i)).read_text().split() if (workdir / "runs" / str(i)).exists()
        else [] for i in range(JOBS)
    ]  # fmt: skip
    names = accepted_by_slurm("smk-survive-")  # the executor's job names
    fault_table.rows.append(
        FaultRow(
            fault=f"slurmctld down {DOWN_SECONDS:.0f} s in a {JOBS}-job Snakemake run",
            injected=int(outage.window is not None),
            jobs=JOBS,
            submitted=sum(names.values()),
            ran=sum(1 for r in runs if r),
            lost=sum(1 for r in runs if not r),
            twice=sum(1 for r in runs if len(r) > 1),
            command=f"SEQERA_FAULTS_SNAKEMAKE_JOBS={JOBS} uvx nox -s faults -- -k survives",
        )
    )
    assert outage.window, "the controller was never stopped"
    assert done.returncode == 0, done.stderr[-4000:]
    assert all(len(r) == 1 for r in runs), runs
    assert sum(names.values()) == JOBS, names
    assert all((workdir / "out" / f"{i}.txt").read_text() == f"{i}\n" for i in range(JOBS))


# -- Snakemake itself killed (kill -9) mid-run and started again --------------------------

KILLED_JOBS = 20
PARALLEL = 8  # --jobs
# Every job waits at a gate the test opens only once the second run is under way: the
# first run's jobs are all still running when it starts, whatever the machine's load.
KILLED_SNAKEFILE = f"""
rule all:
    input: expand("out/{{i}}.txt", i=range({KILLED_JOBS}))

rule work:
    output: "out/{{i}}.txt"
    resources: runtime=5
    shell:
        "echo start $SLURM_JOB_ID >> runs/{{wildcards.i}}; "
        "n=0; while [ ! -e gate ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done; "
        "echo end $SLURM_JOB_ID >> runs/{{wildcards.i}}; echo {{wildcards.i}} > {{output}}"
"""


def left_in_squeue(under: Path, limit: float = 0.0) -> list[str]:
    """Ids of the jobs Slurm still lists (any state but finished) that run under ``under``
    (their working directory: a job directory, or a squashed allocation's) or carry it in
    their name, waiting up to ``limit`` s for the list to empty (drained allocations end
    on their own)."""
    deadline = time.monotonic() + limit
    patience = time.monotonic() + max(limit, 10.0)
    while True:
        argv = ["squeue", "-h", "-O", "JobID:|,Name:200|,WorkDir:1000"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            # a busy slurmctld times out a query now and then (Socket timed out on
            # send/recv): ask again, and fail with Slurm's words only if it keeps failing
            assert time.monotonic() < patience, f"squeue failed: {done.stderr}"
            time.sleep(0.5)
            continue
        listed = done.stdout
        ids = [line.split("|", 1)[0].strip() for line in listed.splitlines()
               if str(under) in line]  # fmt: skip
        if not ids or time.monotonic() >= deadline:
            return ids
        time.sleep(0.5)


def snakemake_argv(squash: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend",
            "slurm", "--seqera-squash", squash, "--jobs", str(PARALLEL),
            "--seconds-between-status-checks", "1", "--latency-wait", "5"]  # fmt: skip


@pytest.mark.parametrize("squash", ["off", "squash"])
def test_killed_and_started_again_runs_every_job_once(
    squash: str,
    slurm: SlurmCluster,
    tmp_path: Path,
    fault_table: FaultTable,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS",
                 "SEQERA_HISTORY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    workdir = tmp_path / "wf"
    runs = workdir / "runs"
    runs.mkdir(parents=True)
    (workdir / "Snakefile").write_text(KILLED_SNAKEFILE)
    argv = snakemake_argv(squash)
    # jobs held at the gate: killed once as many run as it may run at once
    code, started, text = killed_and_run_again(
        argv, workdir, tmp_path, started=lambda: len(list(runs.iterdir())), at_once=PARALLEL,
        patience=600, settle=3,
    )  # fmt: skip
    left = left_in_squeue(tmp_path, limit=20)
    lines = [(runs / str(i)).read_text().split("\n") if (runs / str(i)).exists() else []
             for i in range(KILLED_JOBS)]  # fmt: skip
    starts = [sum(1 for line in r if line.startswith("start")) for r in lines]
    command = f"uvx nox -s faults -- -k 'killed_and_started_again and {squash}'"
    fault_table.rows.append(
        FaultRow(
            fault=f"snakemake kill -9 mid-run ({started} of {KILLED_JOBS} jobs started), "
            f"--unlock, same command again; squash {squash}; {len(left)} left in squeue",
            injected=1,
            jobs=KILLED_JOBS,
            submitted=sum(starts),
            ran=sum(1 for s in starts if s),
            lost=sum(1 for s in starts if not s),
            twice=sum(1 for s in starts if s > 1),
            command=command,
        )
    )
    assert code == 0, text[-4000:]
    assert starts == [1] * KILLED_JOBS, (starts, text[-3000:])
    assert all((workdir / "out" / f"{i}.txt").read_text() == f"{i}\n"
               for i in range(KILLED_JOBS))  # fmt: skip
    assert not left, left
