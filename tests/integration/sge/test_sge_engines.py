"""Snakemake, cwltool-seqera and squashed allocations on the real Grid Engine cell."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState, SquashBackend
from seqera_core.backends.batch.sge import SgeBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

from ..conftest import wait
from .conftest import SgeCell

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[3]
DATA = ROOT / "tests" / "cwltool_seqera" / "data"
CWLTOOL = str(Path(sys.executable).parent / "cwltool-seqera")


def _env(cell: SgeCell, tmp_path: Path) -> dict[str, str]:
    # nothing from the developer's own seqera configuration may leak into the tests
    env = {**os.environ, **cell.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS"):
        env.pop(name, None)
    return env


def _snakemake(cell: SgeCell, workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("snakemake", reason="the integration session installs snakemake")
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend", "sge",
         "--jobs", "4", "--seconds-between-status-checks", "1", *args],
        cwd=workdir, env=_env(cell, workdir), capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip


def _accounted(cell: SgeCell, name: str) -> list[str]:
    """Every qacct record of jobs called ``name``, oldest first."""
    shown = cell.run("qacct", "-j", name).stdout
    return [block for block in shown.split("=" * 62) if "jobname" in block]


def test_the_readme_example_runs_through_grid_engine(sge: SgeCell, tmp_path: Path) -> None:
    done = _snakemake(sge, tmp_path, "-s", str(ROOT / "examples" / "snakemake" / "Snakefile"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "results" / "summary.txt").read_text().split() == ["2", "2", "2"]
    (summary,) = _accounted(sge, "smk-summary-1")
    # mem="500MB" is 476.84 MiB, rounded up; runtime="10m"
    assert re.search(r"category\s+-l h_rt=600,h_vmem=477M\b", summary), summary


RETRY = """
rule all:
    input: "done.txt"

rule hungry:
    output: "done.txt"
    resources: mem_mb=300, runtime=5
    shell:
        "echo $JOB_ID >> attempts.txt; "
        "python3 -c 'b = bytearray(150 << 20); import time; time.sleep(5)' & "
        "python3 -c 'b = bytearray(150 << 20); import time; time.sleep(5)' & wait; "
        "touch {output}"
"""


def test_a_job_killed_for_memory_is_retried_with_more(sge: SgeCell, tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(textwrap.dedent(RETRY))
    done = _snakemake(sge, tmp_path, "--retries", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "out of memory" in done.stderr, done.stderr[-3000:]
    # two processes of 150 MiB each: over 300 MB (287 MiB, sge_execd adds them up and
    # kills the job), under the retry's twice that (574 MiB); each attempt ran once
    first, second = (tmp_path / "attempts.txt").read_text().split()
    killed, fitted = (sge.run("qacct", "-j", job).stdout for job in (first, second))
    assert re.search(r"failed\s+37\b", killed) and "h_vmem=287M" in killed, killed
    assert re.search(r"failed\s+0\b", fitted) and "h_vmem=574M" in fitted, fitted


def test_a_cwl_scatter_runs_through_grid_engine(sge: SgeCell, tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"pauses": [2, 2, 2]}))
    done = subprocess.run(
        [CWLTOOL, "--executor", "sge", "--no-container", "--outdir", str(tmp_path / "out"),
         "--debug", str(DATA / "scatter.cwl"), str(job)],
        cwd=tmp_path, env=_env(sge, tmp_path), capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert len(json.loads(done.stdout)["stamps"]) == 3
    ids = re.findall(r"submitted to sge as (\d+)", done.stderr)
    assert len(ids) == 3
    record = sge.run("qacct", "-j", ids[0]).stdout
    # stamp.cwl asks for 1 core, 64 MiB and 300 s
    assert re.search(r"category\s+-l h_rt=300,h_vmem=64M\b", record), record


def test_jobs_share_one_squashed_allocation(sge: SgeCell, tmp_path: Path) -> None:
    policy = SquashPolicy("squash", max_jobs=20, max_time=3600, cpus=2)
    inner = SgeBackend(work_dir=tmp_path / "jobs", env=sge.env)
    backend = SquashBackend(inner, policy, idle=3)
    log = tmp_path / "runs.log"
    request = ResourceRequest(cpus=1, memory=100 * MIB, time=60)
    specs = [
        JobSpec(f"j{i}", ["sh", "-c", f"echo j{i} >> {log}; echo out-j{i}; exit {i % 2}"], request)
        for i in range(6)
    ]
    handles = backend.submit(specs)
    assert inner.calls["qsub"] == 1
    statuses = wait(backend, handles)
    assert [s.exit_code for s in statuses] == [0, 1, 0, 1, 0, 1]
    assert [s.state is JobState.SUCCEEDED for s in statuses] == [True, False] * 3
    assert sorted(log.read_text().split()) == [f"j{i}" for i in range(6)]
    assert backend.logs(handles[4]) == "out-j4\n"
    assert all(s.wall_seconds is not None for s in statuses)
    backend.close()
