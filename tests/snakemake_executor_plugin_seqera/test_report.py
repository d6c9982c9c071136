"""``seqera report`` of a real Snakemake run on the local backend, and its profile applied.

Snakemake runs the workflow with ``--executor seqera --seqera-history DB``; ``seqera
report --history DB`` reads what it recorded. The report's Snakemake snippet then goes
into a profile, and a second run with that profile asks for exactly the advice.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from seqera_core.units import MB, MIB
from snakemake_executor_plugin_seqera.resources import RUNNER_MEMORY

SNAKEFILE = """
SAMPLES = ["a", "b"]

rule all:
    input: "summary.txt"

rule make:
    output: "raw/{{s}}.txt"
    threads: 2
    resources: mem_mb=1000, runtime=10
    shell: "{python} hold.py 40 {{output}}"

rule sort:
    input: "raw/{{s}}.txt"
    output: "sorted/{{s}}.txt"
    resources: mem_mb=500, runtime=5
    shell: "{python} hold.py 20 {{output}}"

rule summary:
    input: expand("sorted/{{s}}.txt", s=SAMPLES)
    output: "summary.txt"
    resources: mem_mb=200, runtime=1
    shell: "cat {{input}} > {{output}}"
"""
# Holds N MiB resident (b"x" * n is written, so resident) for a moment, then writes OUTPUT.
HOLD = """
import sys, time
x = b"x" * (int(sys.argv[1]) * 2**20)
time.sleep(0.3)
open(sys.argv[2], "w").write("done\\n")
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment without the developer's own seqera or Snakemake settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SEQERA_", "SNAKEMAKE_"))}
    return {**clean, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip


def _snakemake(cwd: Path, env: dict[str, str], *args: str) -> None:
    done = _run([sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "4",
                 *args], cwd, env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def _rows(history: Path) -> list[tuple[str, float, int, int, bool]]:
    with sqlite3.connect(history) as db:
        return db.execute(
            "SELECT process, cpus, memory, time, succeeded FROM task_history ORDER BY process"
        ).fetchall()


def test_a_real_run_reported_and_its_profile_applied(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(SNAKEFILE.format(python=sys.executable)))
    (workdir / "hold.py").write_text(HOLD)
    history = tmp_path / "history.db"
    _snakemake(workdir, env, "--seqera-history", str(history))
    assert len(_rows(history)) == 5

    seqera = [sys.executable, "-m", "seqera_core.cli", "report", "--history", str(history)]
    done = _run([*seqera, "-o", "report.html"], workdir, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("5 tasks, no failure")
    assert done.stdout.splitlines()[-1] == f"report: {workdir / 'report.html'}"
    assert "Plotly.newPlot" in (workdir / "report.html").read_text()

    done = _run([*seqera, "--json"], workdir, env)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    totals = figures["summary"]
    assert totals["engines"] == ["snakemake"] and totals["tasks"] == 5
    processes = {p["process"]: p for p in figures["processes"]}
    assert set(processes) == {"make", "sort", "summary"}
    make = processes["make"]
    # 40 MiB held, the interpreter on top: measured, and far below the 1000 MB declared
    assert 40 * MIB < make["distributions"]["peak_memory"]["maximum"] < 1000 * MB
    assert make["memory"]["wasted"] > 0.5 * make["memory"]["requested"]
    assert make["advice"]["memory"] < 1000 * MB

    # The snippet as a profile: Snakemake itself reads it, and asks for exactly the advice.
    profile = tmp_path / "profile"
    profile.mkdir()
    snippet = figures["snippets"]["snakemake"]
    (profile / "config.yaml").write_text("executor: seqera\n" + snippet)
    fresh = tmp_path / "fresh.db"  # no history to size from: the profile's values go through
    _snakemake(workdir, env, "sorted/a.txt", "--forceall", "--profile", str(profile),
               "--seqera-history", str(fresh))  # fmt: skip
    advised = yaml.safe_load(snippet)
    assert [row[0] for row in _rows(fresh)] == ["make", "sort"]
    for process, cpus, memory, seconds, succeeded in _rows(fresh):
        assert succeeded, process
        assert cpus == advised["set-threads"][process]
        wanted = advised["set-resources"][process]
        # mem_mb is 10^6 bytes (Snakemake derives mem_mib from it, rounded up); the
        # executor raises anything below what a Snakemake job itself runs in
        least = max(wanted["mem_mb"] * MB, RUNNER_MEMORY)
        assert least <= memory < least + MIB, process
        assert seconds == wanted["runtime"] * 60, process
