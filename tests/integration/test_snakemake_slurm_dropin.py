"""``snakemake --executor seqera --seqera-backend slurm`` as a drop-in for
snakemake-executor-plugin-slurm: an ordinary profile, an MPI rule, per-CPU memory, the
resources nothing reads, and each refused rule's own error (issue 32)."""

from __future__ import annotations

import os
import re
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import SlurmCluster
from .test_snakemake_slurm import _cluster, _snakemake, sbatch_log

pytestmark = pytest.mark.integration
__all__ = ["_cluster", "sbatch_log"]  # the fixtures, shared with test_snakemake_slurm

PROFILE = """
default-resources:
  mem_mb: 500
  runtime: 10
  slurm_partition: debug
  slurm_account: genomics
"""

WORKFLOW = """
rule all:
    input: "ranks.txt", "hybrid.txt"

rule ranks:
    output: "ranks.txt"
    resources: mpi="srun", tasks=2, color="blue"
    shell: "{resources.mpi} -n {resources.tasks} bash -c 'echo rank=$SLURM_PROCID' > {output}"

rule hybrid:
    output: "hybrid.txt"
    resources: tasks=2, cpus_per_task=2, mem_mb_per_cpu=200, gres="tmpspace:1G"
    shell: "scontrol show job $SLURM_JOB_ID > {output}"
"""


def test_an_ordinary_profile_runs_mpi_and_per_cpu_rules_to_the_end(
    tmp_path: Path, sbatch_log: Path, slurm: SlurmCluster
) -> None:
    workdir = tmp_path / "wf"
    (workdir / "profile").mkdir(parents=True)
    (workdir / "profile" / "config.yaml").write_text(textwrap.dedent(PROFILE))
    (workdir / "Snakefile").write_text(textwrap.dedent(WORKFLOW))
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--workflow-profile", "profile")
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = sorted((workdir / "ranks.txt").read_text().split())
    assert ranks == ["rank=0", "rank=1"]
    hybrid = (workdir / "hybrid.txt").read_text()
    # 200 MB per CPU is 190.7 MiB, rounded up; the node declares no TmpDisk
    fields = ("NumTasks=2", "CPUs/Task=2", "MinMemoryCPU=191M", "MinTmpDiskNode=0",
              "Partition=debug", "Account=genomics", "TresPerNode=gres:tmpspace:1G")  # fmt: skip
    for field in fields:
        assert field in hybrid, hybrid
    calls = sbatch_log.read_text()
    # Snakemake's default disk_mb never becomes a --tmp no node can meet
    assert "--tmp" not in calls and "--ntasks=2" in calls and "--mem-per-cpu=191M" in calls
    assert len(re.findall(r"disk not requested \(--tmp\)", done.stderr)) == 1, done.stderr
    # the resource nothing reads is named once for its rule
    assert len(re.findall(r"rule ranks: resources not sent .*color", done.stderr)) == 1


REFUSED = """
rule all:
    input: "gpu.txt", "part.txt"

rule gpu:
    output: "gpu.txt"
    resources: gres="nosuchgres:1"
    shell: "touch {output}"

rule part:
    output: "part.txt"
    resources: slurm_partition="nosuchpartition"
    shell: "touch {output}"
"""


def test_two_refused_rules_of_one_batch_each_show_their_own_sbatch_error(
    tmp_path: Path, sbatch_log: Path
) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(REFUSED))
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--keep-going")
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if "submission failed" in line]
    gpu = [line for line in errors if "smk-gpu" in line]
    part = [line for line in errors if "smk-part" in line]
    assert gpu and part, done.stderr[-3000:]
    assert all("gres" in line.lower() and "partition" not in line for line in gpu), gpu
    assert all("invalid partition" in line.lower() for line in part), part


LOGGED = """
rule all:
    input: "ok1.txt", "ok2.txt", "bad.txt"

rule ok:
    output: "ok{i}.txt"
    shell: "echo fine; touch {output}"

rule bad:
    output: "bad.txt"
    shell: "echo about to fail; exit 3"
"""


def _plant(logs: Path, name: str, days: float) -> Path:
    """A log an earlier run left ``days`` ago."""
    path = logs / name / "earlier.1.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("earlier\n")
    then = time.time() - days * 86400
    os.utime(path, (then, then))
    return path


def _logs_left(logs: Path) -> list[str]:
    return sorted(str(p.relative_to(logs).parent) for p in logs.rglob("*.log"))


def test_log_retention_as_the_slurm_plugin_keeps_its_logs(tmp_path: Path, sbatch_log: Path) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(LOGGED))
    shims = sbatch_log.parent / "shims"
    logs = workdir / ".snakemake" / "seqera" / "logs"
    _plant(logs, "eleven-days", 11)
    _plant(logs, "nine-days", 9)
    done = _snakemake(workdir, shims, "--keep-going")
    assert done.returncode != 0 and (workdir / "ok2.txt").exists(), done.stderr[-3000:]
    # the Slurm plugin's defaults: each successful job's log goes, the failed one's stays,
    # and the end of the run deletes what is older than 10 days
    left = _logs_left(logs)
    assert len(left) == 2 and left[0].startswith("bad-") and left[1] == "nine-days", left
    assert "about to fail" in next(logs.glob("bad-*/*.log")).read_text()
    assert len(sbatch_log.read_text().splitlines()) == 3
