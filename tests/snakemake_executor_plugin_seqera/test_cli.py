"""``snakemake --executor seqera`` as a user types it: profiles, env vars, platforms, failures."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ..processes import ends

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment without the developer's own seqera or Snakemake settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SEQERA_", "SNAKEMAKE_"))}
    return {**clean, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


def _workflow(directory: Path, snakefile: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Snakefile").write_text(textwrap.dedent(snakefile))
    return directory


def _snakemake(
    directory: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SNAKEMAKE, "--executor", "seqera", "--jobs", "4", *args],
        cwd=directory, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


LABELS = """
rule all:
    input: "labels.txt"

rule labelled:
    output: "labels.txt"
    resources: mem_mb=300, runtime=2
    shell:
        "echo $SEQERA_LABEL_PROJECT ${{SEQERA_LABEL_TEAM:-none}} $SEQERA_LABEL_SNAKEMAKE_RULE"
        " > {output}"
"""


def test_settings_from_a_profile_and_seqera_config(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = _workflow(tmp_path / "wf", LABELS)
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(
        "executor: seqera\nseqera-backend: local\nseqera-labels: [project=demo]\n"
    )
    # Below the profile: seqera's own configuration, here from the environment.
    env = {**env, "SEQERA_LABELS": "team=genomics,project=overridden"}
    done = _snakemake(workdir, env, "--profile", str(profile))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (workdir / "labels.txt").read_text().split() == ["demo", "genomics", "labelled"]


def test_settings_from_snakemake_environment_variables(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = _workflow(tmp_path / "wf", LABELS)
    env = {**env, "SNAKEMAKE_SEQERA_BACKEND": "local", "SNAKEMAKE_SEQERA_LABELS": "project=viaenv"}
    done = _snakemake(workdir, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (workdir / "labels.txt").read_text().split()[0] == "viaenv"


PLATFORM = """
name: small
scheduler: local
default_queue: normal
queues:
  normal: {max_cpus: 4, max_memory: 8 GiB, max_walltime: 4h}
"""

IMPOSSIBLE = """
rule all:
    input: "small.txt", "huge.txt"

rule small:
    output: "small.txt"
    resources: mem_mb=300
    shell: "touch {output}"

rule huge:
    output: "huge.txt"
    resources: mem_mb=900000
    shell: "touch {output} ran-anyway"
"""


def test_an_impossible_rule_fails_before_submission_with_the_reason(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workdir = _workflow(tmp_path / "wf", IMPOSSIBLE)
    (workdir / "platform.yaml").write_text(PLATFORM)
    done = _snakemake(workdir, env, "--seqera-platform", "platform.yaml", "--keep-going")
    assert done.returncode != 0
    assert "Error in rule huge" in done.stderr
    assert "not submitted, no queue can run it" in done.stderr
    assert "memory 838.19 GiB exceeds every queue of small" in done.stderr
    assert (workdir / "small.txt").exists()  # its neighbour still ran
    assert not (workdir / "ran-anyway").exists()
    assert not list((workdir / ".snakemake" / "seqera" / "logs").glob("huge-*"))


def test_bad_units_fail_the_job_naming_the_field(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = _workflow(
        tmp_path / "wf",
        """
        rule bad:
            output: "x"
            resources: gpu="two"
            shell: "touch {output}"
        """,
    )
    done = _snakemake(workdir, env)
    assert done.returncode != 0
    assert "invalid resources: gpu: 'two'" in done.stderr
    assert not (workdir / "x").exists()


def test_a_failed_job_reports_its_exit_code_and_log(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = _workflow(
        tmp_path / "wf",
        """
        rule fails:
            output: "never"
            resources: mem_mb=300
            shell: "echo about to fail; exit 3"
        """,
    )
    done = _snakemake(workdir, env)
    assert done.returncode != 0
    # The job runs Snakemake around the rule's command: it exits 1 when the command fails.
    assert "local job" in done.stderr and "failed, exit code 1." in done.stderr
    logs = list((workdir / ".snakemake" / "seqera" / "logs").glob("fails-*/*.log"))
    assert len(logs) == 1 and "about to fail" in logs[0].read_text()
    assert str(logs[0]) in done.stderr  # handed to Snakemake as the job's aux log


# Holds 400 MB for two seconds: the local backend samples memory and kills a job over
# its request, as a cluster would.
HUNGRY = """
rule hungry:
    output: "fed"
    resources: mem_mb=300
    shell: "python3 -c 'import time; b = bytearray(400 * 10**6); time.sleep(2)' && touch {output}"
"""


def test_the_resolver_chain_gives_a_job_its_memory(tmp_path: Path, env: dict[str, str]) -> None:
    starved = _snakemake(_workflow(tmp_path / "starved", HUNGRY), env)
    assert starved.returncode != 0 and "out of memory" in starved.stderr
    # The test resolver plugin (entry point seqera.resources_resolvers) doubles memory.
    fed = _snakemake(_workflow(tmp_path / "fed", HUNGRY), {**env, "SEQERA_TEST_RESOLVER": "1"})
    assert fed.returncode == 0, fed.stderr[-3000:]


def test_ctrl_c_cancels_every_running_job(tmp_path: Path, env: dict[str, str]) -> None:
    workdir = _workflow(
        tmp_path / "wf",
        """
        rule all:
            input: expand("slept.{i}", i=range(2))

        rule sleeper:
            output: "slept.{i}"
            resources: mem_mb=300
            shell: "echo $$ > pid.{wildcards.i}; sleep 300; touch {output}"
        """,
    )
    process = subprocess.Popen(
        [*SNAKEMAKE, "--executor", "seqera", "--jobs", "4"],
        cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pids = [workdir / f"pid.{i}" for i in range(2)]
    deadline = time.monotonic() + 120
    while not all(p.exists() and p.read_text().strip() for p in pids):
        assert process.poll() is None and time.monotonic() < deadline, "jobs did not start"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0
    for path in pids:
        pid = int(path.read_text())
        assert ends(pid, within=30.0), f"job shell {pid} still running after Ctrl-C"
    assert "Cancelling" in stderr or "cancel" in stderr.lower()


SLEEPERS = """
onerror:
    shell("echo ran > onerror.ran")

rule all:
    input: expand("slept.{i}", i=range(2))

rule sleeper:
    output: "slept.{i}"
    resources: mem_mb=300
    shell: "echo $$ > pid.{wildcards.i}; sleep 300; touch {output}"
"""


@pytest.mark.parametrize("how", ["uv run", "twice"])
def test_ctrl_c_twice_is_one_line_130_and_no_job_left(
    tmp_path: Path, env: dict[str, str], how: str
) -> None:
    """A terminal's Ctrl-C reaches every process of the group; ``uv run`` (with no
    terminal) forwards its own copy to Snakemake: two SIGINTs. Without uv, the second is
    sent by hand, as an impatient user would."""
    workdir = _workflow(tmp_path / "wf", SLEEPERS)
    argv = [*SNAKEMAKE, "--executor", "seqera", "--jobs", "4"]
    if how == "uv run":
        uv = shutil.which("uv")
        if uv is None:
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail("uv is not on PATH")
            pytest.skip("uv is not on PATH")
        argv = [uv, "run", "--no-project", "--python", sys.executable, "python", *argv[1:]]
    process = subprocess.Popen(
        argv, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True,  # a group of its own, as a terminal's job
    )  # fmt: skip
    pids = [workdir / f"pid.{i}" for i in range(2)]
    deadline = time.monotonic() + 120
    while not all(p.exists() and p.read_text().strip() for p in pids):
        assert process.poll() is None and time.monotonic() < deadline, "jobs did not start"
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)
    if how == "twice":
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert stderr.count("seqera: interrupted; the run's 2 active jobs cancelled") == 1
    # as after Snakemake's own Ctrl-C: the workflow's onerror hook ran
    assert (workdir / "onerror.ran").read_text() == "ran\n"
    left = [int(p.read_text()) for p in pids if not ends(int(p.read_text()), within=30.0)]
    assert left == [], f"job shells still running after Ctrl-C: {left}"


# Snakemake with an exit hook that takes 3 s (longer than the local status cadence of
# 1 s), as a real environment's (logging, plotting libraries) may take a while: the
# window in which a status loop that Snakemake never shut down would run on.
SLOW_EXIT = (
    "import atexit, sys, time; atexit.register(time.sleep, 3); "
    "from snakemake.cli import main; sys.argv[0] = 'snakemake'; main()"
)


def test_a_run_with_nothing_to_do_is_quiet(tmp_path: Path, env: dict[str, str]) -> None:
    # Nothing to be done: Snakemake builds the executor but never shuts it down; the
    # status loop ran on into the interpreter's exit and printed `cannot schedule new
    # futures after shutdown` after the last line (issue 29).
    workdir = _workflow(tmp_path / "wf", ONE_JOB)
    first = _snakemake(workdir, env)
    assert first.returncode == 0, first.stderr[-3000:]
    again = subprocess.run(
        [sys.executable, "-c", SLOW_EXIT, "--executor", "seqera", "--jobs", "4"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    last = "Nothing to be done (all requested files are present and up to date)."
    assert again.stderr.strip().endswith(last), again.stderr[-2000:]


ONE_JOB = """
rule one:
    output: "one.txt"
    resources: mem_mb=300, runtime=2
    shell: "echo one > {output}"
"""


def test_every_run_prints_its_summary_and_seqera_report_finds_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # No --seqera-history: the run is recorded in the one default home, ~/.seqera/history.db
    # (here the test's own HOME), which `seqera report` reads by default (issue 29).
    workdir = _workflow(tmp_path / "wf", ONE_JOB)
    done = _snakemake(workdir, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\nseqera: " in done.stderr, done.stderr[-2000:]
    assert (Path(env["HOME"]) / ".seqera" / "history.db").is_file()
    seqera = str(Path(sys.executable).parent / "seqera")
    report = subprocess.run(
        [seqera, "report", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert report.returncode == 0, report.stderr
    assert "one" in report.stdout  # the rule's name
