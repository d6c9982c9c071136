"""cwltool-seqera on the real one-node Slurm: a scatter whose jobs overlap, and the request
the scheduler recorded (cores, memory, time)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .conftest import SlurmCluster

DATA = Path(__file__).parents[1] / "cwltool_seqera" / "data"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")


def _stamps(path: str) -> tuple[float, float]:
    start, end = Path(path).read_text().split()
    return float(start), float(end)


def test_scatter_runs_concurrently_with_the_declared_request(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"pauses": [4, 4, 4]}))
    done = subprocess.run(
        [COMMAND, "--executor", "slurm", "--no-container", "--outdir", str(tmp_path / "out"),
         "--debug", str(DATA / "scatter.cwl"), str(job)],
        cwd=tmp_path, env={**os.environ, **slurm.env}, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    intervals = [_stamps(item["path"]) for item in json.loads(done.stdout)["stamps"]]
    assert max(s for s, _ in intervals) < min(e for _, e in intervals), intervals
    # Staging and outputs went under the working directory, never /tmp of a node.
    assert (tmp_path / "cwltool-seqera-work" / "jobs").is_dir()
    ids = re.findall(r"submitted to slurm as (\d+)", done.stderr)
    assert len(ids) == 3
    record = subprocess.run(
        ["sacct", "-c", "-n", "-P", "-j", ids[0], "-o", "NCPUS,ReqMem,Timelimit"],
        env={**os.environ, **slurm.env}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    shown = record.stdout + record.stderr
    scontrol = subprocess.run(
        ["scontrol", "show", "job", ids[0]],
        env={**os.environ, **slurm.env}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    shown += scontrol.stdout
    # stamp.cwl asks for 1 core, 64 MiB and 300 s (5 minutes).
    assert re.search(r"MinMemoryNode=64M|mem=64M|\b64M\b", shown), shown
    assert re.search(r"TimeLimit=00:05:00|\b00:05:00\b|\b5\b", shown), shown


def test_the_job_record_has_the_cores_asked_for_rounded_up(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    env = {**os.environ, **slurm.env}
    run = subprocess.Popen(
        [COMMAND, "--executor", "slurm", "--no-container", "--outdir", str(tmp_path / "out"),
         "--debug", str(DATA / "cores.cwl")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # The test cluster forgets a finished job after 2 s (MinJobAge): read the record while
    # the job still runs.
    records: list[str] = []
    while run.poll() is None and not records:
        shown = subprocess.run(
            ["scontrol", "--oneliner", "show", "job"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        records = [line for line in shown.stdout.splitlines() if "JobName=cores" in line]
        time.sleep(0.5)
    _, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-4000:]
    (record,) = records
    (job_id,) = re.findall(r"submitted to slurm as (\d+)", stderr)
    assert f"JobId={job_id} " in record
    # coresMin 2.5 becomes 3 whole cores in slurmctld's record of the job.
    assert re.search(r"\bNumCPUs=3\b", record), record
    assert re.search(r"\bCPUs/Task=3\b", record), record
