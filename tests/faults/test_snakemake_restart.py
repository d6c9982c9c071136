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
from pathlib import Path

import pytest

from .conftest import FaultRow, FaultTable, Outage, SlurmCluster
from .test_controller_restart import accepted_by_slurm

pytestmark = pytest.mark.integration

JOBS = int(os.environ.get("SEQERA_FAULTS_SNAKEMAKE_JOBS", "30"))
DOWN_SECONDS = 12.0
SNAKEFILE = f"""
N = range({JOBS})

rule all:
    input: expand("out/{{i}}.txt", i=N)

rule work:
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
    names = accepted_by_slurm("smk-work-")  # the executor's job names
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
