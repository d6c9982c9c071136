"""SIGTERM and SIGHUP to each entry point while its jobs run on the real Slurm.

``seqera run`` and ``cwltool-seqera`` cancel what they submitted on either signal, as
Ctrl-C does, and exit 128+N. Snakemake keeps its own documented SIGTERM: no new job is
submitted and the running ones are waited for (its FAQ, "How do I exit a running
Snakemake workflow?"; ``exit_gracefully`` in snakemake/scheduling/job_scheduler.py);
SIGHUP, which killed it at once, now cancels as Ctrl-C does and ends with 129. Ctrl-C
sent twice (a terminal's to the group, and the copy ``uv run`` forwards) ends with one
line and 130, no traceback. Each case ends with no job of the run left in ``squeue``.

Reproduce: ``uvx nox -s faults -- -k signals``
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import FaultRow, FaultTable, SlurmCluster
from .test_cwl_scatter_restart import COMMAND, SCATTER
from .test_snakemake_restart import left_in_squeue

pytestmark = pytest.mark.integration

SEQERA = str(Path(sys.executable).parent / "seqera")
SIGNALS = [signal.SIGTERM, signal.SIGHUP]


def _wait_for(
    condition: Callable[[], bool], process: subprocess.Popen[str], limit: float = 600
) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert process.poll() is None, process.communicate()[1][-3000:]
        if time.monotonic() > deadline:
            process.kill()  # not left behind by a failed test
            raise AssertionError(f"the jobs did not start: {process.communicate()[1][-3000:]}")
        time.sleep(0.05)


def _row(fault_table: FaultTable, fault: str, jobs: int, ran: int, left: list[str]) -> None:
    row = FaultRow(
        fault=f"{fault}; {len(left)} left in squeue", injected=1, jobs=jobs, submitted=jobs,
        ran=ran, lost=0, twice=0, command="uvx nox -s faults -- -k signals",
    )  # fmt: skip
    fault_table.rows.append(row)


def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS",
                 "SEQERA_HISTORY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signals_cancel_a_seqera_run_job(
    signum: int, slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _clean(monkeypatch, tmp_path)
    started = tmp_path / "started"
    name = f"sig-{uuid.uuid4().hex[:8]}"
    run = subprocess.Popen(
        [SEQERA, "run", "--backend", "slurm", "--name", name, "--time", "5m", "--",
         "sh", "-c", f"touch {started}; exec sleep 120"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(started.exists, run)
    run.send_signal(signum)
    _, err = run.communicate(timeout=120)
    left = left_in_squeue(Path(name), limit=20)
    _row(fault_table, f"seqera run --backend slurm, {signal.Signals(signum).name}", 1, 1, left)
    assert run.returncode == 128 + signum, err
    assert "cancelling job" in err, err
    assert not left, left


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signals_cancel_a_cwltool_seqera_run(
    signum: int, slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _clean(monkeypatch, tmp_path)
    runs, jobs = tmp_path / "runs", 6
    runs.mkdir()
    (tmp_path / "job.json").write_text(json.dumps(
        {"runs": str(runs), "indices": list(range(jobs)), "pause": 0,
         "gate": str(tmp_path / "gate")}
    ))  # fmt: skip
    run = subprocess.Popen(
        [COMMAND, "--executor", "slurm", "--no-container", "--outdir", str(tmp_path / "out"),
         str(SCATTER), str(tmp_path / "job.json")],
        cwd=tmp_path, env={**os.environ, **slurm.env}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(lambda: len(list(runs.iterdir())) >= jobs // 2, run)
    run.send_signal(signum)
    _, err = run.communicate(timeout=180)
    left = left_in_squeue(tmp_path, limit=20)
    (tmp_path / "gate").touch()  # a job that survived would now run to its end
    time.sleep(2)
    ended = len(list(runs.glob("end.*")))
    _row(fault_table, f"cwltool-seqera scatter on slurm, {signal.Signals(signum).name}", jobs,
         ended, left)  # fmt: skip
    assert run.returncode == 128 + signum, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert not left, left
    assert ended == 0


SNAKEFILE = """
rule all:
    input: expand("out/{i}.txt", i=range(12))

rule work:
    output: "out/{i}.txt"
    resources: runtime=5
    shell:
        "echo start >> runs/{wildcards.i}; "
        "n=0; while [ ! -e gate ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done; "
        "echo {wildcards.i} > {output}"
"""


def _snakemake_at_work(tmp_path: Path, **popen: Any) -> tuple[Path, subprocess.Popen[str]]:
    """The workflow above through ``snakemake --executor seqera`` on Slurm, once its first
    four jobs have started (each waits for ``gate``): its directory and its process."""
    workdir = tmp_path / "wf"
    runs = workdir / "runs"
    runs.mkdir(parents=True)
    (workdir / "Snakefile").write_text(SNAKEFILE)
    run = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend",
         "slurm", "--jobs", "4", "--seconds-between-status-checks", "1"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
    )  # fmt: skip
    _wait_for(lambda: len(list(runs.iterdir())) >= 4, run)
    return workdir, run


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signals_to_snakemake(
    signum: int, slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """SIGHUP cancels the running jobs; SIGTERM submits nothing more and waits for them."""
    _clean(monkeypatch, tmp_path)
    workdir, run = _snakemake_at_work(tmp_path)
    run.send_signal(signum)
    if signum == signal.SIGTERM:
        time.sleep(3)  # still waiting for its four jobs, and sending no other
        assert run.poll() is None
        (workdir / "gate").touch()
    _, err = run.communicate(timeout=180)
    left = left_in_squeue(tmp_path, limit=20)
    outputs = len(list((workdir / "out").glob("*.txt"))) if (workdir / "out").exists() else 0
    started = len(list((workdir / "runs").iterdir()))
    _row(fault_table, f"snakemake --executor seqera on slurm, {signal.Signals(signum).name}",
         12, outputs, left)  # fmt: skip
    assert run.returncode != 0, err[-3000:]
    assert not left, left
    assert started == 4, err[-3000:]  # nothing submitted after the signal
    if signum == signal.SIGTERM:
        assert outputs == 4, err[-3000:]  # the four it had were waited for
        assert "Will exit after finishing currently running jobs" in err, err[-3000:]
    else:
        assert run.returncode == 129 and "seqera: SIGHUP; the run's 4 active" in err, err[-3000:]
        assert "Terminating processes on user request" in err, err[-3000:]
        (workdir / "gate").touch()  # a job that survived would now write its output
        time.sleep(2)
        assert not list(workdir.glob("out/*.txt")), err[-3000:]


def test_ctrl_c_twice_to_snakemake(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group's SIGINT, then a copy 0.1 s later (``uv run`` forwards one at once)."""
    _clean(monkeypatch, tmp_path)
    # a group of its own, as a terminal's job
    workdir, run = _snakemake_at_work(tmp_path, start_new_session=True)
    os.killpg(run.pid, signal.SIGINT)
    time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=180)
    left = left_in_squeue(tmp_path, limit=20)
    (workdir / "gate").touch()  # a job that survived would now write its output
    time.sleep(2)
    outputs = len(list((workdir / "out").glob("*.txt"))) if (workdir / "out").exists() else 0
    _row(fault_table, "snakemake --executor seqera on slurm, SIGINT twice", 12, outputs, left)
    assert run.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert err.count("seqera: interrupted; the run's 4 active jobs cancelled") == 1, err[-3000:]
    assert not left, left
    assert outputs == 0
