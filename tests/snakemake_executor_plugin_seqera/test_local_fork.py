"""Real Snakemake runs on the local backend, whose jobs start as forks of a preloaded
Snakemake: outputs, isolation between jobs, a failing rule, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ..processes import ends

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "4"]

# `run:` blocks execute inside the job's own Snakemake process (the executor's jobs pass
# --force-use-threads), so what they do to the process is what a job does to its fork.
WORKFLOW = """
import os

HERE = os.path.abspath(".")

rule all:
    input: HERE + "/moved.txt", "after.txt", "shell.txt"

rule mover:
    # absolute, so that Snakemake finds it after the rule moved its job elsewhere
    output: HERE + "/moved.txt"
    resources: mem_mb=300
    run:
        parent = open(f"/proc/{os.getppid()}/comm", "rb").read()
        # forked from Snakemake itself (a fork keeps the command line), not a new interpreter
        engine = b"--executor" in open(f"/proc/{os.getppid()}/cmdline", "rb").read()
        os.chdir("/")
        os.environ["LEAK"] = "leaked"
        with open(output[0], "w") as out:
            print(parent == b"seqera-forks\\n", engine, file=out)

rule after:
    input: HERE + "/moved.txt"
    output: "after.txt"
    resources: mem_mb=300
    run:
        with open(output[0], "w") as out:
            print(os.getcwd(), os.environ.get("LEAK"), os.environ.get("SEQERA_JOB_NAME"), file=out)

rule shell:
    output: "shell.txt"
    resources: mem_mb=300
    shell: "echo $PWD > {output}"

rule fails:
    output: "never"
    resources: mem_mb=300
    shell: "echo about to fail; exit 3"
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment without the developer's own seqera or Snakemake settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SEQERA_", "SNAKEMAKE_"))}
    return {**clean, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


def _workflow(directory: Path, snakefile: str) -> Path:
    directory.mkdir(parents=True)
    (directory / "Snakefile").write_text(textwrap.dedent(snakefile))
    return directory


def test_forked_jobs_write_their_outputs_and_do_not_leak_into_the_next(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workdir = _workflow(tmp_path / "wf", WORKFLOW)
    done = subprocess.run(
        [*SNAKEMAKE, "--keep-going", "all", "never"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0, done.stderr[-3000:]  # `fails` failed; the rest ran
    # started by the fork server, which Snakemake forked while it started up
    assert (workdir / "moved.txt").read_text() == "True True\n"
    cwd, leak, name = (workdir / "after.txt").read_text().split()
    assert (cwd, leak) == (str(workdir), "None") and name.startswith("smk-after-")
    assert (workdir / "shell.txt").read_text() == f"{workdir}\n"
    # The job runs Snakemake around the rule's command: it exits 1 when the command fails.
    assert "failed, exit code 1." in done.stderr
    logs = list((workdir / ".snakemake" / "seqera" / "logs").glob("fails-*/*.log"))
    assert len(logs) == 1 and "about to fail" in logs[0].read_text()
    assert not (workdir / "never").exists()


SLEEPER = """
rule sleeper:
    output: "slept"
    resources: mem_mb=300
    run:
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "300"])
        parent = open(f"/proc/{os.getppid()}/comm", "rb").read()
        with open("pids.part", "w") as out:
            print(os.getpid(), child.pid, parent == b"seqera-forks\\n", file=out)
        os.rename("pids.part", "pids")
        time.sleep(300)
"""


def test_ctrl_c_ends_a_forked_job_and_its_children(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = _workflow(tmp_path / "wf", SLEEPER)
    process = subprocess.Popen(
        SNAKEMAKE, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    pids = workdir / "pids"
    deadline = time.monotonic() + 120
    while not pids.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the job did not start"
        time.sleep(0.2)
    job, child, forked = pids.read_text().split()
    assert forked == "True"
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    assert process.returncode != 0
    for pid in (int(job), int(child)):
        assert ends(pid, within=30.0), f"process {pid} still running after Ctrl-C"
    assert not (workdir / "slept").exists()
