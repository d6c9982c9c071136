"""``snakemake --executor seqera --seqera-backend route`` over the local machine and the real
one-node Slurm of the ``slurm`` fixture: every output right and written once, each job on
the backend the policy chose (the history's ``backend`` and ``route`` columns, and where
each job says it ran), a job too wide for the machine on the cluster, and a second run
that judges the small jobs by the seconds the history says they take."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from .conftest import SlurmCluster

pytestmark = pytest.mark.integration

SNAKEFILE = """
rule all:
    input: expand("small/{i}.txt", i=range(6)), expand("wide/{i}.txt", i=range(2))

# each run appends where it ran to runs/: one line per run, whatever the outputs say
MARK = "mkdir -p runs; W=${{SLURM_JOB_ID:-local}}; echo $W >> runs/{rule}-{wildcards.i}"

rule small:
    output: "small/{i}.txt"
    resources: runtime=5
    shell: MARK + "; sleep 1; echo $W > {output}"

rule wide:
    output: "wide/{i}.txt"
    threads: 4
    resources: runtime=5
    shell: MARK + "; sleep 2; echo $W > {output}"
"""


@pytest.fixture(autouse=True)
def _clean(slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS"):
        monkeypatch.delenv(name, raising=False)


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend", "route",
         "--seqera-route-backends", "local", "slurm", "--seqera-local-cores", "2",
         "--seqera-history", str(workdir.parent / "history.db"),
         "--jobs", "20", "--seconds-between-status-checks", "1", *args],
        cwd=workdir, env=dict(os.environ), capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip


def _where(workdir: Path) -> dict[str, Counter[str]]:
    """Per rule, how many outputs were made on each backend (what each job wrote)."""
    found: dict[str, Counter[str]] = {"small": Counter(), "wide": Counter()}
    for rule in found:
        for path in (workdir / rule).iterdir():
            ran = path.read_text().strip()
            found[rule]["local" if ran == "local" else "slurm"] += 1
    return found


def _history(workdir: Path, run: int) -> list[tuple[str, str, str]]:
    with sqlite3.connect(workdir.parent / "history.db") as db:
        runs = [r for (r,) in db.execute("SELECT DISTINCT run_id FROM task_history ORDER BY rowid")]
        return list(db.execute(
            "SELECT process, backend, route FROM task_history WHERE run_id = ? AND succeeded",
            (runs[run],),
        ))  # fmt: skip


def test_each_job_runs_once_where_the_policy_sent_it(tmp_path: Path) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    first = _snakemake(workdir)
    assert first.returncode == 0, first.stderr[-4000:]
    ran = _where(workdir)
    for path in (workdir / "runs").iterdir():  # every job ran exactly once
        assert len(path.read_text().splitlines()) == 1, path.name
    assert len(list((workdir / "runs").iterdir())) == 8
    # four threads do not fit the two local cores: the cluster, said so
    assert ran["wide"] == Counter(slurm=2)
    rows = _history(workdir, 0)
    assert Counter((p, b) for p, b, _ in rows) == Counter(
        {("small", b): n for b, n in ran["small"].items()} | {("wide", "slurm"): 2}
    )
    for process, backend, route in rows:
        decision = json.loads(route)  # the whole decision, its reason in words inside
        assert decision["backend"] == backend, route
        assert decision["reason"].startswith(f"finish: {backend} finish in"), route
        if process == "wide":
            assert "local cannot: 4 cores asked, its largest node has 2" in decision["reason"]
    assert ran["small"]["local"] >= 2  # the machine's free cores first: no queue, no poll

    # Again, from the history: a small job takes about a second, not its minute of runtime
    second = _snakemake(workdir, "--forceall")
    assert second.returncode == 0, second.stderr[-4000:]
    again = _where(workdir)
    for path in (workdir / "runs").iterdir():
        assert len(path.read_text().splitlines()) == 2, path.name
    assert again["wide"] == Counter(slurm=2)
    rows = _history(workdir, 1)
    assert Counter(b for p, b, _ in rows if p == "small") == again["small"]
    # every small job was judged by the seconds it took, not by its five declared minutes
    for process, _, route in rows:
        if process == "small":
            runtimes = [o["runtime"] for o in json.loads(route)["options"] if "runtime" in o]
            assert runtimes and max(runtimes) < 300, route
    assert again["small"]["local"] >= 2
