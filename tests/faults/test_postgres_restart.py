"""PostgreSQL restarted under four Snakemake runs that share it as their task history.

Four ``snakemake --executor seqera --seqera-history postgresql://...`` runs on the local
backend run 4, 8, 12 and 16 small jobs; every job appends a line to its own side-effect
file. When the smallest run starts its last job the server is stopped (``pg_ctl stop -m
fast``, which ends every session as a restart does), kept down ``DOWN_SECONDS`` and
started again: that run ends and closes its session while the server is away, and the
others keep finishing jobs before, during and after, recording them through
``Session.record`` as they go (rows wait in the session while the server is down).

Counted afterwards: every job ran once (its side-effect file has one line), every run
exited 0, and the table holds exactly one row per finished job of each run (none lost
while the server was away, none written twice when the waiting rows went in).

Reproduce: ``uvx nox -s faults -- -k postgres``
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import require
from ..postgres import PostgresServer, postgres_server
from .conftest import FaultRow, FaultTable, Outage

pytestmark = pytest.mark.integration

# Jobs per run: the smallest run ends while the server is down, the others go on past it.
SIZES = (4, 8, 12, 16)
RUNS, JOBS = len(SIZES), sum(SIZES)
DOWN_SECONDS = 5.0
SNAKEFILE = """
rule all:
    input: expand("out/{{i}}.txt", i=range({jobs}))

rule work:
    output: "out/{{i}}.txt"
    resources: runtime=1
    shell: "echo $$ >> runs/{{wildcards.i}}; sleep 0.5; echo {{wildcards.i}} > {{output}}"
"""


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


def _ran(workdir: Path, jobs: int) -> list[int]:
    """Per job, how many times it started (lines in its side-effect file)."""
    runs = workdir / "runs"
    return [
        len((runs / str(i)).read_text().split()) if (runs / str(i)).exists() else 0
        for i in range(jobs)
    ]


def test_four_runs_lose_no_row_across_a_restart(
    postgres: PostgresServer, tmp_path: Path, fault_table: FaultTable
) -> None:
    psycopg = require("psycopg", "the PostgreSQL history needs the postgresql extra")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEQERA_", "SNAKEMAKE_"))}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    workdirs = [tmp_path / f"wf{n}" for n in range(RUNS)]
    for workdir, size in zip(workdirs, SIZES, strict=True):
        (workdir / "runs").mkdir(parents=True)
        (workdir / "Snakefile").write_text(SNAKEFILE.format(jobs=size))
    # Down once the smallest run has started its last job: it ends (and closes its
    # session) while the server is away; the others finish jobs before, during, after.
    outage = Outage(lambda: all(_ran(workdirs[0], SIZES[0])), postgres.stop, postgres.start,
                    DOWN_SECONDS, within=120, poll=0.1).begin()  # fmt: skip
    command = [
        *(sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "4"),
        *("--seqera-history", postgres.url, "--seconds-between-status-checks", "1"),
    ]
    writers = []
    for workdir in workdirs:
        with (workdir / "stderr").open("w") as stderr:
            writers.append(subprocess.Popen(command, cwd=workdir, env=env, stderr=stderr,
                                            stdout=subprocess.DEVNULL))  # fmt: skip
    for writer in writers:
        try:
            writer.wait(timeout=300)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait()
    outage.join(60)
    errors = [(workdir / "stderr").read_text()[-3000:] for workdir in workdirs]
    ran = [n for workdir, size in zip(workdirs, SIZES, strict=True) for n in _ran(workdir, size)]
    # Jobs that finished while the server was down: their rows had to wait.
    during = sum(
        1
        for workdir in workdirs
        for out in (workdir / "out").glob("*.txt")
        if outage.window and outage.window[0] <= out.stat().st_mtime <= outage.window[1]
    )
    with psycopg.connect(postgres.url, autocommit=True) as db:
        rows = db.execute(
            "SELECT run_id, task_id, count(*), bool_and(succeeded) FROM task_history "
            "WHERE process = 'work' GROUP BY run_id, task_id"
        ).fetchall()
    per_run = Counter(run_id for run_id, *_ in rows)
    fault_table.rows.append(
        FaultRow(
            fault=f"PostgreSQL history down {DOWN_SECONDS:.0f} s under {RUNS} Snakemake runs "
            f"({during} jobs ended while down; submitted = rows stored)",
            injected=int(outage.window is not None),
            jobs=JOBS,
            submitted=sum(count for _, _, count, _ in rows),
            ran=sum(1 for n in ran if n),
            lost=sum(1 for n in ran if not n) + JOBS - len(rows),
            twice=sum(1 for n in ran if n > 1) + sum(1 for _, _, count, _ in rows if count > 1),
            command="uvx nox -s faults -- -k postgres",
        )
    )
    assert outage.window, "the server was never restarted"
    failed = [error for writer, error in zip(writers, errors, strict=True) if writer.returncode]
    # the failed runs' stderr alone: pytest cuts a long message in the middle
    assert [writer.returncode for writer in writers] == [0] * RUNS, "\n\n".join(failed)
    assert ran == [1] * JOBS, ran
    assert sorted(per_run.values()) == sorted(SIZES), per_run  # a row for every job
    assert all(count == 1 and ok for _, _, count, ok in rows), rows  # only one, succeeded
    assert during > 0, "no job finished while the server was down: the fault hit nobody"
