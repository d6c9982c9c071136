"""Snakemake hands over jobs of two shapes; Slurm refuses one of them for good.

With ``--seqera-squash array`` the jobs of rule ``a`` go out as one array and rule ``b``'s
job alone; ``b`` is refused (an error that is not transient). Only ``b`` fails: every
``a`` runs once and its output is there, and the run exits non-zero.

Snakemake decides which jobs it hands over together and in what order, so this run does
not force one: with ``b`` handed over first the array still goes out after its refusal
(once, before that was fixed, every ``a`` failed unsent here), with the array first the
executor keeps what ``SubmitError.positions`` names; it guards the outcome.
``test_slurm.py::test_a_refused_job_does_not_keep_the_others_from_going`` forces the
refused-first order.

Reproduce: ``uvx nox -s faults -- -k refused``
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FaultRow, FaultTable, SlurmCluster, unavailable

pytestmark = pytest.mark.integration

SNAKEFILE = """
rule all:
    input: "b.txt", expand("a/{i}.txt", i=range(4))

rule b:
    output: "b.txt"
    threads: 2
    shell: "echo b > {output}"

rule a:
    output: "a/{i}.txt"
    shell: "echo $SLURM_JOB_ID >> runs.{wildcards.i}; echo {wildcards.i} > {output}"
"""
# sbatch refusing rule b's job for good (an error that is not transient)
REFUSE = """#!/bin/sh
case "$*" in *--job-name=smk-b-*)
    echo "sbatch: error: Batch job submission failed: Invalid account" >&2
    exit 1 ;;
esac
exec {real} "$@"
"""


def test_a_refused_job_fails_alone_and_the_jobs_sent_before_it_are_kept(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS"):
        monkeypatch.delenv(name, raising=False)
    real = shutil.which("sbatch")
    if real is None:
        unavailable("sbatch is not installed")
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "sbatch").write_text(REFUSE.format(real=real))
    (shims / "sbatch").chmod(0o755)
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE)
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend", "slurm",
         "--seqera-squash", "array", "--jobs", "10", "--keep-going",
         "--seconds-between-status-checks", "1"],
        cwd=workdir, env={**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    runs = [
        (workdir / f"runs.{i}").read_text().split() if (workdir / f"runs.{i}").exists() else []
        for i in range(4)
    ]
    fault_table.rows.append(
        FaultRow(
            fault="sbatch refuses one job of a batch sent as an array + a job (Snakemake)",
            injected=1,
            jobs=4,
            submitted=len({r[0] for r in runs if r}),
            ran=sum(1 for r in runs if r),
            lost=sum(1 for r in runs if not r),
            twice=sum(1 for r in runs if len(r) > 1),
            command="uvx nox -s faults -- -k refused",
        )
    )
    assert done.returncode != 0  # rule b could not be submitted
    assert "Invalid account" in done.stderr
    assert all(len(r) == 1 for r in runs), (runs, done.stderr[-3000:])
    assert all((workdir / "a" / f"{i}.txt").read_text() == f"{i}\n" for i in range(4))
    assert not (workdir / "b.txt").exists()
