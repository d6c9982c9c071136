"""``snakemake --executor seqera`` on the real one-node Slurm of the ``slurm`` fixture."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from snakemake.common.tests import TestWorkflowsLocalStorageBase

from snakemake_executor_plugin_seqera import ExecutorSettings

from .conftest import SlurmCluster

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _cluster(slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing from the developer's own seqera configuration may leak into the tests.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS"):
        monkeypatch.delenv(name, raising=False)


class TestSlurmBackend(TestWorkflowsLocalStorageBase):
    """Snakemake's own executor-plugin test base, every job through sbatch."""

    __test__ = True

    def get_executor(self) -> str:
        return "seqera"

    def get_executor_settings(self) -> ExecutorSettings:
        return ExecutorSettings(backend="slurm")


@pytest.fixture
def sbatch_log(tmp_path: Path, slurm: SlurmCluster) -> Iterator[Path]:
    """A PATH in front of the real sbatch that records each call, then runs it."""
    shims, log = tmp_path / "shims", tmp_path / "sbatch-calls"
    shims.mkdir()
    real = subprocess.run(["which", "sbatch"], capture_output=True, text=True, check=True)
    shim = shims / "sbatch"
    shim.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real.stdout.strip()} "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    log.touch()
    yield log


def _snakemake(workdir: Path, shims: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--seqera-backend", "slurm",
         "--jobs", "4", "--seconds-between-status-checks", "1", *args],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


RECORD = """
rule all:
    input: "record.txt"

rule recorded:
    output: "record.txt"
    threads: 2
    resources: mem_mb=2000, runtime=90
    shell: "scontrol show job $SLURM_JOB_ID > {output}"
"""


def test_the_schedulers_record_shows_what_the_rule_asked_for(
    tmp_path: Path, sbatch_log: Path
) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(RECORD))
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--seqera-labels", "project=demo")
    assert done.returncode == 0, done.stderr[-3000:]
    record = (workdir / "record.txt").read_text()
    # mem_mb counts 10^6 bytes and Slurm's M is 2^20: 2000 MB is 1907.35 MiB, rounded up.
    assert re.search(r"\bMinMemoryNode=1908M\b", record), record
    assert re.search(r"\bNumCPUs=2\b", record), record
    assert re.search(r"\bTimeLimit=01:30:00\b", record), record
    assert "snakemake/rule=recorded" in record and "project=demo" in record
    assert len(sbatch_log.read_text().splitlines()) == 1


PLATFORM = """
name: fixture
scheduler: slurm
default_queue: debug
queues:
  debug: {max_cpus: 16, max_memory: 8 GiB, max_walltime: 1d}
"""

IMPOSSIBLE = """
rule all:
    input: "huge.txt"

rule huge:
    output: "huge.txt"
    resources: mem_mb=20000
    shell: "touch {output}"
"""


def test_an_impossible_rule_is_rejected_before_any_sbatch(tmp_path: Path, sbatch_log: Path) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(IMPOSSIBLE))
    (workdir / "platform.yaml").write_text(PLATFORM)
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--seqera-platform", "platform.yaml")
    assert done.returncode != 0
    assert "not submitted, no queue can run it: memory 18.63 GiB exceeds" in done.stderr
    assert sbatch_log.read_text() == ""


WIDE = """
rule all:
    input: expand("out/{i}.txt", i=range(40))

rule wide:
    output: "out/{i}.txt"
    resources: mem_mb=300, runtime=2
    shell: "test {wildcards.i} != 13 && echo {wildcards.i} > {output}"
"""


@pytest.mark.parametrize("mode", ["array", "squash"])
def test_a_wide_workflow_with_one_failure_never_stalls(
    tmp_path: Path, sbatch_log: Path, mode: str
) -> None:
    # Far more ready jobs than --jobs: the Slurm plugin's array mode is known to leak job
    # slots here and hang. One job fails; its neighbours must not.
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(WIDE))
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--seqera-squash", mode,
                      "--keep-going", "--jobs", "6")  # fmt: skip
    assert done.returncode != 0
    outputs = sorted(int(p.stem) for p in (workdir / "out").glob("*.txt"))
    assert outputs == [i for i in range(40) if i != 13], done.stderr[-3000:]
    assert re.search(r"Error in rule wide:.*?output: out/13\.txt", done.stderr, re.S), done.stderr[
        -3000:
    ]
    calls = sbatch_log.read_text().splitlines()
    if mode == "squash":
        assert len(calls) <= 4, calls
        return
    # How many jobs an array takes is how many Snakemake handed over together, which
    # depends on how many ended between two status checks (22 to 32 sbatch calls in CI).
    # What does not depend on timing: the calls carry each of the 40 jobs exactly once,
    # some of them together.
    sizes = [_array_size(call) for call in calls]
    assert max(sizes) >= 2, calls
    assert sum(sizes) == 40, sizes


def _array_size(call: str) -> int:
    found = re.search(r"--array=(\d+)-(\d+)", call)
    return int(found.group(2)) - int(found.group(1)) + 1 if found else 1


GROUPED = """
rule all:
    input: expand("b/{i}.txt", i=range(3)), expand("solo/{i}.txt", i=range(6))

rule a:
    output: "a/{i}.txt"
    group: "pair"
    resources: mem_mb=300, runtime=2
    shell: "echo a > {output}"

rule b:
    input: "a/{i}.txt"
    output: "b/{i}.txt"
    group: "pair"
    resources: mem_mb=300, runtime=2
    shell: "cat {input} > {output}; echo b >> {output}"

rule solo:
    output: "solo/{i}.txt"
    resources: mem_mb=300, runtime=2
    shell: "echo $SLURM_JOB_ID > {output}"
"""


def test_group_jobs_keep_working_beside_squashed_jobs(tmp_path: Path, sbatch_log: Path) -> None:
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(GROUPED))
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--seqera-squash", "squash")
    assert done.returncode == 0, done.stderr[-3000:]
    assert all((workdir / f"b/{i}.txt").read_text() == "a\nb\n" for i in range(3))
    allocations = {(workdir / f"solo/{i}.txt").read_text() for i in range(6)}
    assert len(allocations) < 6  # the solo jobs shared allocations
    assert len(sbatch_log.read_text().splitlines()) < 9


HISTORY = """
rule all:
    input: expand("sized/{i}.txt", i=range(3))

rule sized:
    output: "sized/{i}.txt"
    resources: mem_mb=2000, runtime=3
    shell: "python3 -c 'x = bytearray(50 * 10**6)'; scontrol show job $SLURM_JOB_ID > {output}"
"""


def test_a_second_run_requests_what_the_first_used(tmp_path: Path, sbatch_log: Path) -> None:
    # Run 1 is squashed: the launcher measures each job's peak memory and the plugin
    # records it. Run 2 (plain sbatch per job) is sized from that history.
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(HISTORY))
    history = str(tmp_path / "history.db")
    shims = sbatch_log.parent / "shims"
    first = _snakemake(workdir, shims, "--seqera-squash", "squash", "--seqera-history", history)
    assert first.returncode == 0, first.stderr[-3000:]
    rows = (
        sqlite3.connect(history)
        .execute("SELECT process, memory, peak_memory FROM task_history")
        .fetchall()
    )
    assert len(rows) == 3 and all(p == "sized" and m > 1900 * 2**20 and peak for p, m, peak in rows)
    peak = max(row[2] for row in rows)
    for path in (workdir / "sized").iterdir():
        path.unlink()
    second = _snakemake(workdir, shims, "--seqera-history", history, "--forceall")
    assert second.returncode == 0, second.stderr[-3000:]
    for i in range(3):
        record = (workdir / f"sized/{i}.txt").read_text()
        asked = int(re.search(r"\bMinMemoryNode=(\d+)M\b", record).group(1))  # type: ignore[union-attr]
        assert asked * 2**20 < 1000 * 10**6, record  # declared 2000 MB
        assert asked * 2**20 >= peak  # never below what the rule used


RETRIED = """
rule all:
    input: "big.txt"

rule big:
    output: "big.txt"
    resources: mem_mb=300, runtime=5
    shell:
        "echo $SLURM_JOB_ID >> attempts.txt; "
        "python3 -c 'import time; x = bytearray(450 * 10**6); time.sleep(3)'; "
        "scontrol show job $SLURM_JOB_ID > {output}"
"""


def test_a_retry_after_slurm_kills_for_memory_asks_for_twice_as_much(
    tmp_path: Path, sbatch_log: Path
) -> None:
    # No history: the failed attempt's own figures decide (cause-driven retries).
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(RETRIED))
    done = _snakemake(workdir, sbatch_log.parent / "shims", "--retries", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len((workdir / "attempts.txt").read_text().split()) == 2  # each attempt ran once
    calls = sbatch_log.read_text().splitlines()
    assert len(calls) == 2
    # 300 MB is 286.1 MiB, rounded up; the retry asks for twice what the first one had.
    assert "--mem=287M" in calls[0] and "--mem=574M" in calls[1], calls
    assert re.search(r"\bMinMemoryNode=574M\b", (workdir / "big.txt").read_text())
