"""Containerised CWL on the real one-node Slurm: each job's container is started by the
runtime inside its own Slurm job (or inside a squashed allocation), with the job's request.

The ``docker`` shim (tests/cwltool_seqera/podman.py) logs ``$SLURM_JOB_ID`` with the
argv it runs, then execs rootful Podman: the job record (``sacct -c``) and the
container's own output (the image's marker, its cgroup's memory limit) are checked
against it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..cwltool_seqera.podman import (
    MARKER,
    Podman,
    command_shape,
    fake_singularity_env,
    podman_env,
    singularity_runs,
)
from .conftest import SlurmCluster

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "cwltool_seqera" / "data" / "containers"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")
WORDS = ["alpha", "beta", "gamma"]


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    """Podman configured once for this module, the test image imported."""
    return podman_env(tmp_path_factory.mktemp("podman"))


def _run(tmp_path: Path, env: dict[str, str]) -> tuple[str, list[str]]:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"words": WORDS}))
    done = subprocess.run(
        [COMMAND, "--executor", "slurm", "--outdir", str(tmp_path / "out"),
         str(DATA / "pipeline.cwl"), str(job)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    lines = Path(json.loads(done.stdout)["all"]["path"]).read_text().splitlines()
    # The container's own output: the marker only the image has, and the memory limit
    # (ramMin 96 MiB) its cgroup enforces.
    assert lines == [f"{w} {MARKER} mem={96 * 2**20}" for w in WORDS] + [f"gathered in {MARKER}"]
    return done.stderr, re.findall(r"submitted to slurm as (\S+)", done.stderr)


def _sacct(env: dict[str, str], job_id: str, fields: str) -> str:
    # jobcomp/filetxt records a job when it ends: a squashed allocation still draining
    # after cwltool-seqera exits shows up a little later, so wait for it.
    deadline = time.monotonic() + 90
    while True:
        shown = subprocess.run(
            ["sacct", "-c", "-n", "-P", "-X", "-j", job_id, "-o", fields],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if shown.stdout.strip() or time.monotonic() > deadline:
            return shown.stdout.strip()
        time.sleep(1)


def test_each_container_starts_inside_its_slurm_job_with_its_request(
    slurm: SlurmCluster, podman: Podman, tmp_path: Path
) -> None:
    env = {**podman.env, **slurm.env}
    before, calls_before = len(podman.runs()), len(podman.calls())
    _, ids = _run(tmp_path, env)
    assert len(ids) == 4, ids
    runs = podman.runs()[before:]
    # Nothing ran the runtime on the submit host: the image checks (the prelude's
    # `image inspect`) and the containers all happened inside the Slurm jobs.
    calls = podman.calls()[calls_before:]
    assert {c.split(" ", 1)[0] for c in calls} == {f"job={i}" for i in ids}, calls
    assert sum(" image inspect " in c for c in calls) == 4, calls
    # Every `docker run` was started by a job script inside one of the submitted Slurm
    # jobs, one container per job.
    started_in = sorted(re.match(r"job=(\S+) ", r).group(1) for r in runs)  # type: ignore[union-attr]
    assert started_in == sorted(ids), runs
    for run in runs:
        found = re.match(r"job=(\S+) cpus=(\d+) mem=(\d+) ", run)
        assert found is not None, run
        job_id, cpus, mem = found.groups()
        assert _sacct(env, job_id, "State,NCPUS") == f"COMPLETED|{cpus}"
        # The runtime was given what Slurm granted the job (--mem in MiB).
        assert f"--cpus={cpus} " in run and f"--memory={mem}m " in run, run
    assert sum("--memory=96m " in run for run in runs) == 3


def test_containers_run_in_a_squashed_allocation(
    slurm: SlurmCluster, podman: Podman, tmp_path: Path
) -> None:
    # Room for the three scattered jobs side by side: cwltool-seqera submits each job on
    # its own, and an allocation sized for one 300 s job has no room for a second.
    env = {**podman.env, **slurm.env, "SEQERA_SQUASH_MODE": "squash", "SEQERA_SQUASH_CPUS": "3"}
    before = len(podman.runs())
    _run(tmp_path, env)
    runs = podman.runs()[before:]
    assert len(runs) == 4, runs
    allocations = {re.match(r"job=(\S+) ", r).group(1) for r in runs}  # type: ignore[union-attr]
    # Four containers, fewer Slurm jobs: the launcher ran the same argv in its allocation.
    assert len(allocations) < 4, runs
    for job_id in allocations:
        assert _sacct(env, job_id, "JobName").startswith("squash-"), job_id


def test_singularity_runs_cwltools_command_line_inside_the_slurm_job(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    # Apptainer cannot be installed here: a stand-in logs what it is asked to run.
    env, log = fake_singularity_env(tmp_path)
    env = {**env, **slurm.env}
    tool = str(DATA / "greet.cwl")
    plain = subprocess.run(
        [str(Path(COMMAND).parent / "cwltool"), "--singularity", "--outdir",
         str(tmp_path / "plain"), tool, "--word", "hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    done = subprocess.run(
        [COMMAND, "--singularity", "--executor", "slurm", "--outdir", str(tmp_path / "out"),
         tool, "--word", "hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (job_id,) = re.findall(r"submitted to slurm as (\S+)", done.stderr)
    theirs, ours = singularity_runs(log)
    assert theirs.startswith("job=none ") and ours.startswith(f"job={job_id} ")
    assert command_shape(ours).split(" ", 1)[1] == command_shape(theirs).split(" ", 1)[1]
