"""Log retention as snakemake-executor-plugin-slurm does it: a successful job's log goes at
once, a run's end deletes the logs older than N days, then the directories left empty."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from snakemake_executor_plugin_seqera._logs import LogRetention

DAY = 86400
NOW = 1_800_000_000.0


def _log(path: Path, age_days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("log\n")
    os.utime(path, (NOW - age_days * DAY, NOW - age_days * DAY))
    return path


def _left(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_a_successful_jobs_log_and_its_empty_directory_go(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    out = _log(logs / "a-1" / "run.1.log", 0)
    err = _log(logs / "a-1" / "run.1.err", 0)
    other = _log(logs / "b-2" / "run.1.log", 0)
    outside = _log(tmp_path / "elsewhere.log", 0)  # not written by the executor: never deleted
    warnings: list[str] = []
    LogRetention(logs).succeeded(
        [str(out), str(err), str(out), None, str(outside)], warnings.append
    )
    assert _left(logs) == ["b-2", "b-2/run.1.log"] and other.exists() and outside.exists()
    assert warnings == []


def test_keep_successful_keeps_them_and_sweeps_nothing(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    out = _log(logs / "a-1" / "run.1.log", 30)
    retention = LogRetention(logs, keep_successful=True)
    retention.succeeded([str(out)], print)
    assert retention.sweep(NOW, print) == 0
    assert out.exists()


def test_the_sweep_counts_days_of_modification_time(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _log(logs / "old-1" / "run.1.log", 10.01)
    _log(logs / "old-1" / "run.1.err", 11)
    _log(logs / "deep" / "er" / "run.1.log", 12)
    young = _log(logs / "young-2" / "run.1.log", 9.99)
    edge = _log(logs / "edge-3" / "run.1.log", 10)  # "older than": exactly 10 days stays
    other = _log(logs / "young-2" / "notes.txt", 50)  # not a log
    assert LogRetention(logs).sweep(NOW, print) == 3
    assert young.exists() and edge.exists() and other.exists()
    assert _left(logs) == ["edge-3", "edge-3/run.1.log", "young-2", "young-2/notes.txt",
                           "young-2/run.1.log"]  # fmt: skip
    assert LogRetention(logs, older_than_days=5).sweep(NOW, print) == 2
    assert _left(logs) == ["young-2", "young-2/notes.txt"]


@pytest.mark.parametrize("days", [0, -1])
def test_zero_or_less_deletes_nothing(tmp_path: Path, days: int) -> None:
    logs = tmp_path / "logs"
    old = _log(logs / "old-1" / "run.1.log", 400)
    (logs / "empty").mkdir()
    assert LogRetention(logs, older_than_days=days).sweep(NOW, print) == 0
    assert old.exists() and (logs / "empty").is_dir()


def test_no_log_directory_yet(tmp_path: Path) -> None:
    assert LogRetention(tmp_path / "logs").sweep(NOW, print) == 0


WORKFLOW = """
rule all:
    input: "ok1.txt", "ok2.txt", "bad.txt"

rule ok:
    output: "ok{i}.txt"
    resources: mem_mb=300
    shell: "echo fine; touch {output}"

rule bad:
    output: "bad.txt"
    resources: mem_mb=300
    shell: "echo about to fail; exit 3"
"""


def _run(workdir: Path, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SEQERA_", "SNAKEMAKE_"))}
    environ = {**clean, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path), **env}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "3",
         "--keep-going", *args],
        cwd=workdir, env=environ, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_local_run_keeps_only_the_failed_jobs_log_unless_asked(tmp_path: Path) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(WORKFLOW))
    logs = workdir / ".snakemake" / "seqera" / "logs"
    for name, days in (("seven", 7), ("three", 3)):  # what earlier runs left
        stale = _log(logs / f"{name}-9" / "x.1.log", 0)
        os.utime(stale, (time.time() - days * DAY,) * 2)
    done = _run(workdir, tmp_path, "--seqera-delete-logfiles-older-than", "5")
    assert done.returncode != 0 and (workdir / "ok1.txt").exists()
    left = sorted(p for p in logs.rglob("*") if p.is_file())
    assert [p.parent.name.split("-")[0] for p in left] == ["bad", "three"], left
    assert "about to fail" in left[0].read_text()
    assert "1 job logs older than 5 days deleted" in done.stderr
    # through the environment, as every setting: nothing is deleted
    for name in ("ok1.txt", "ok2.txt"):
        (workdir / name).unlink()
    done = _run(workdir, tmp_path, SNAKEMAKE_SEQERA_KEEP_SUCCESSFUL_LOGS="true")
    assert done.returncode != 0
    names = sorted(p.parent.name.split("-")[0] for p in logs.rglob("*.log"))
    assert names == ["bad", "bad", "ok", "ok", "three"], names
