"""``seqera run --backend sge`` on the real Grid Engine cell, as a user types it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SgeCell

pytestmark = pytest.mark.integration


def _seqera(cell: SgeCell, cwd: Path, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, **cell.env, "XDG_CONFIG_HOME": str(cwd / "xdg")}
    return subprocess.Popen(
        [sys.executable, "-m", "seqera_core.cli", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
    )  # fmt: skip


def _job_id(stderr: str) -> str:
    found = re.search(r"submitted job (\d+) to sge", stderr)
    assert found, stderr
    return found[1]


def test_run_exits_with_the_jobs_code_and_qacct_shows_the_request(
    sge: SgeCell, tmp_path: Path
) -> None:
    run = _seqera(
        sge, tmp_path, "run", "-v", "--backend", "sge", "--cpus", "2", "--memory", "200MiB",
        "--time", "2m", "--label", "team=genomics", "--",
        "sh", "-c", "echo hello from $0 in $PWD; exit 3", "the job",
    )  # fmt: skip
    out, err = run.communicate(timeout=300)
    assert run.returncode == 3, err
    assert f"hello from the job in {tmp_path}" in out  # -wd: where seqera run was started
    record = sge.run("qacct", "-j", _job_id(err)).stdout
    # 200 MiB over 2 slots: h_vmem counts per slot (sge_execd multiplies it back)
    category = re.search(r"^category\s+(.*)$", record, re.M)
    assert category, record
    assert "h_vmem=100M" in category[1] and "h_rt=120" in category[1], record
    assert "-pe smp 2" in category[1], record
    assert re.search(r"^exit_status\s+3\b", record, re.M), record
    assert not list(Path.home().glob("*.o" + _job_id(err)))  # nothing written to $HOME


def test_ctrl_c_deletes_the_job(sge: SgeCell, tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    run = _seqera(
        sge, tmp_path, "run", "-v", "--backend", "sge", "--time", "5m", "--",
        "sh", "-c", f"echo started; sleep 120; touch {marker}",
    )  # fmt: skip
    assert run.stdout is not None
    # once the job runs (its output streams), Ctrl-C
    assert run.stdout.readline().strip() == "started"
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    job = _job_id(err)
    deadline = time.monotonic() + 60
    while job in sge.run("qstat", "-u", "*").stdout:
        assert time.monotonic() < deadline, "the job is still listed after Ctrl-C"
        time.sleep(0.5)
    record = sge.run("qacct", "-j", job).stdout  # it started, so it was accounted
    assert re.search(r"^failed\s+100\b", record, re.M), record  # qdel: "assumedly after job"
    assert not marker.exists()
