"""``snakemake --executor seqera`` on the local backend killed (``kill -9``) mid-run,
``--unlock``, and the same command again: the second run adopts the first run's local
jobs, which ran on, orphaned (their fork server records their ends in
``.snakemake/seqera/local-jobs``), instead of starting them a second time. Every job's
start line is written once, every output is right, and no job process is left.

The jobs wait at a gate the test opens once the second run is under way, so the first
run's jobs are still running when it looks for them, whatever the machine's load; then
each sleeps a second, as a short real job would.

Reproduce: ``uvx nox -s faults -- -k local_restart``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from .conftest import FaultRow, FaultTable, SlurmCluster, killed_and_run_again
from .test_snakemake_restart import left_in_squeue

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

JOBS = 20
PARALLEL = 4  # --jobs
# What runs at once: the local backend shares this machine's cores (one per job) too.
AT_ONCE = min(PARALLEL, len(os.sched_getaffinity(0)))
SNAKEFILE = f"""
rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))

# A rule name of its own: the Slurm variant shares a cluster with the other fault tests.
rule readopt:
    output: "out/{{i}}.txt"
    resources: runtime=5
    shell:
        "echo start {{wildcards.i}} $$ >> effects; "
        "n=0; while [ ! -e gate ] && [ $n -lt 300 ]; do sleep 0.2; n=$((n+1)); done; "
        "sleep 1; echo end {{wildcards.i}} >> effects; echo {{wildcards.i}} > {{output}}"
"""


def processes_under(directory: Path, limit: float) -> list[str]:
    """The processes (pid and command line) working in ``directory``, waiting up to
    ``limit`` s for there to be none: a job, its shell, or a fork server left behind."""
    deadline = time.monotonic() + limit
    while True:
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                cwd = os.readlink(f"/proc/{name}/cwd")
                state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
                command = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if state != "Z" and Path(cwd).is_relative_to(directory):
                found.append(f"{name} {command.decode(errors='replace')}")
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def _starts(effects: Path) -> int:
    text = effects.read_text() if effects.exists() else ""
    return sum(line.startswith("start") for line in text.splitlines())


def run_killed_and_again(argv: list[str], workdir: Path, logs: Path) -> tuple[int, int, str]:
    """Run ``argv`` in ``workdir``, kill -9 it once ``AT_ONCE`` jobs have started,
    ``--unlock``, run it again, open the gate once that run executes jobs; the second
    run's exit code, how many jobs had started when the first was killed, its log."""
    return killed_and_run_again(argv, workdir, logs, started=lambda: _starts(workdir / "effects"),
                                at_once=AT_ONCE, patience=300, settle=1)  # fmt: skip


def check_and_record(
    workdir: Path,
    code: int,
    started: int,
    text: str,
    fault_table: FaultTable,
    fault: str,
    command: str,
    left: list[str],
) -> None:
    lines = (workdir / "effects").read_text().splitlines()
    starts = [sum(1 for line in lines if line.split()[:2] == ["start", str(i)])
              for i in range(JOBS)]  # fmt: skip
    ended = [sum(1 for line in lines if line.split()[:2] == ["end", str(i)]) for i in range(JOBS)]
    fault_table.rows.append(
        FaultRow(
            fault=f"{fault} ({started} of {JOBS} jobs started), --unlock, same command again; "
            f"{len(left)} job processes left",
            injected=1,
            jobs=JOBS,
            submitted=sum(starts),
            ran=sum(1 for s in starts if s),
            lost=sum(1 for s in starts if not s),
            twice=sum(1 for s in starts if s > 1),
            command=command,
        )
    )
    assert code == 0, text[-4000:]
    assert started >= AT_ONCE, started
    assert starts == [1] * JOBS, (starts, text[-3000:])
    assert ended == [1] * JOBS, (ended, text[-3000:])
    assert all((workdir / "out" / f"{i}.txt").read_text() == f"{i}\n" for i in range(JOBS))
    assert not left, left


def _clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the default history goes there
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS",
                 "SEQERA_HISTORY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE)
    return workdir


def test_local_jobs_of_a_killed_run_are_adopted_not_run_again(
    tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = _clean_environment(tmp_path, monkeypatch)
    argv = [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", str(PARALLEL),
            "--seconds-between-status-checks", "1", "--latency-wait", "5"]  # fmt: skip
    code, started, text = run_killed_and_again(argv, workdir, tmp_path)
    left = processes_under(workdir, limit=10)
    check_and_record(workdir, code, started, text, fault_table,
                     "snakemake kill -9 mid-run, local backend (fork server)",
                     "uvx nox -s faults -- -k local_jobs_of_a_killed_run", left)  # fmt: skip
    assert "jobs an earlier run left are adopted" in text, text[-3000:]
    # the first run's jobs were forks of its fork server, which kept their records
    assert (workdir / ".snakemake" / "seqera" / "local-jobs").is_dir()


@pytest.mark.integration
def test_routed_jobs_of_a_killed_run_are_adopted_not_run_again(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = _clean_environment(tmp_path, monkeypatch)
    argv = [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend",
            "route", "--seqera-route-backends", "local", "slurm", "--jobs", str(PARALLEL),
            "--seconds-between-status-checks", "1", "--latency-wait", "5"]  # fmt: skip
    code, started, text = run_killed_and_again(argv, workdir, tmp_path)
    left = processes_under(workdir, limit=10) + left_in_squeue(tmp_path, limit=20)
    check_and_record(workdir, code, started, text, fault_table,
                     "snakemake kill -9 mid-run, route over local and slurm",
                     "uvx nox -s faults -- -k routed_jobs_of_a_killed_run", left)  # fmt: skip
