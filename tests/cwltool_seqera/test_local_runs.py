"""End to end: the real cwltool, driven by cwltool-seqera, on the local backend."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parents[2] / "examples" / "cwl"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")


@attrs.frozen
class Run:
    """One finished invocation."""

    code: int
    stdout: str
    stderr: str

    @property
    def outputs(self) -> Any:
        """The output object cwltool printed."""
        return json.loads(self.stdout)


def run_cwl(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> Run:
    """``cwltool-seqera ARGS`` in ``cwd``; outputs go to ``cwd/out``."""
    done = subprocess.run(
        [COMMAND, "--outdir", str(cwd / "out"), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def stamps(path: str) -> tuple[float, float]:
    """The start and end time a stamp.cwl job printed."""
    start, end = Path(path).read_text().split()
    return float(start), float(end)


def overlapping(intervals: list[tuple[float, float]]) -> bool:
    """Whether every interval overlaps every other one."""
    return max(start for start, _ in intervals) < min(end for _, end in intervals)


def test_the_example_workflow_counts_words(tmp_path: Path) -> None:
    run = run_cwl(
        ["--no-container", str(EXAMPLES / "wordcount.cwl"), str(EXAMPLES / "wordcount.yml")],
        tmp_path,
    )
    assert run.code == 0, run.stderr
    assert Path(run.outputs["total"]["path"]).read_text().strip() == "6"
    assert "submitted to local" in run.stderr


def test_scatter_jobs_run_at_the_same_time(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"pauses": [3, 3, 3]}))
    # Two declared cores of room would serialise nothing: give the backend room for three.
    run = run_cwl(
        ["--seqera-local-cpus", "3", "--no-container", str(DATA / "scatter.cwl"), str(job)],
        tmp_path,
    )
    assert run.code == 0, run.stderr
    intervals = [stamps(item["path"]) for item in run.outputs["stamps"]]
    assert len(intervals) == 3
    assert overlapping(intervals), intervals


def test_stdin_is_fed_and_the_environment_is_clean(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("abc\n")
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"text": {"class": "File", "path": "in.txt"}}))
    run = run_cwl(["--no-container", str(DATA / "stdin.cwl"), str(job)], tmp_path, {"LEAK": "1"})
    assert run.code == 0, run.stderr
    assert Path(run.outputs["upper"]["path"]).read_text() == "ABC\nhello clean\n"


def test_exit_codes_follow_the_tools_lists(tmp_path: Path) -> None:
    tool = str(DATA / "exit.cwl")
    success = run_cwl(["--no-container", tool, "--code", "5"], tmp_path)
    assert success.code == 0, success.stderr
    temporary = run_cwl(["--no-container", tool, "--code", "3"], tmp_path)
    assert temporary.code != 0
    assert "completed temporaryFail" in temporary.stderr
    permanent = run_cwl(["--no-container", tool, "--code", "4"], tmp_path)
    assert "completed permanentFail" in permanent.stderr


def test_a_time_limit_kill_is_reported_as_such(tmp_path: Path) -> None:
    began = time.monotonic()
    run = run_cwl(["--no-container", str(DATA / "slow.cwl")], tmp_path)
    assert run.code != 0
    assert "time limit" in run.stderr
    assert time.monotonic() - began < 30 + 60  # far from waiting for sleep 30 and more


def test_ecs_without_an_s3_prefix_is_refused_before_cwltool_starts(tmp_path: Path) -> None:
    run = run_cwl(["--executor", "ecs", str(DATA / "slow.cwl")], tmp_path)
    assert run.code == 2
    assert "--seqera-s3-prefix s3://BUCKET/PREFIX is required" in run.stderr


def test_cwltool_own_options_still_work(tmp_path: Path) -> None:
    run = run_cwl(["--validate", str(EXAMPLES / "wordcount.cwl")], tmp_path)
    assert run.code == 0, run.stderr
    assert "is valid CWL" in run.stdout + run.stderr
    assert "previously defined" not in run.stderr  # the README's example: no warning


def test_a_history_sizes_the_second_run_from_the_first(tmp_path: Path) -> None:
    """--seqera-history records each job (the local backend measures it) and sizes the next."""
    from seqera_core.history import open_history

    db = tmp_path / "history.db"
    data = tmp_path / "reads.fq"
    data.write_bytes(b"ACGT\n" * 20_000)
    job = tmp_path / "job.yml"
    job.write_text(
        json.dumps({"python": sys.executable, "data": {"class": "File", "path": str(data)}})
    )
    for _ in range(2):
        run = run_cwl(
            ["--seqera-history", str(db), "--no-container", str(DATA / "grab.cwl"), str(job)],
            tmp_path,
        )
        assert run.code == 0, run.stderr
    _, (first, second) = open_history(db).attempts()
    assert first.engine == second.engine == "cwltool" and first.succeeded and second.succeeded
    assert first.process == second.process == "grab"
    assert first.input_bytes == second.input_bytes == 100_000
    assert first.memory == 4000 * 2**20  # as declared
    assert first.peak_memory is not None and first.peak_memory >= 100_000_000
    # the second run asked for the first one's peak and a margin, not the declared 4000 MiB
    assert second.memory == max(math.ceil(first.peak_memory * 1.2), 64 * 2**20)


def test_ctrl_c_cancels_the_job_and_prints_no_traceback(tmp_path: Path) -> None:
    import signal

    tool = tmp_path / "slow.cwl"
    tool.write_text(
        "cwlVersion: v1.2\nclass: CommandLineTool\n"
        'baseCommand: [sh, -c, "echo start >> $0/started; sleep 30; echo end >> $0/ended"]\n'
        "arguments: [$(inputs.dir)]\ninputs:\n  dir: string\noutputs: []\n"
    )
    process = subprocess.Popen(
        [COMMAND, "--executor", "local", "--outdir", str(tmp_path / "out"), str(tool),
         "--dir", str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300  # a loaded 2-core CI runner
    while not (tmp_path / "started").exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends the foreground process
    _, stderr = process.communicate(timeout=180)
    assert process.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "interrupted; the run's jobs were cancelled" in stderr
    assert (tmp_path / "started").read_text() == "start\n"  # ran once
    # and was cancelled, not left to finish: no process holds its directory argument
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if str(tmp_path).encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
        except OSError:
            continue
    assert left == [], left


def test_a_routed_run_says_where_each_job_went_and_why(tmp_path: Path) -> None:
    """--executor route over the local machine and a Slurm client whose slurm.conf names
    no cluster (sinfo says so at once): every job runs locally, the reason in the log and
    the history's route column."""
    from seqera_core.history import open_history

    db = tmp_path / "history.db"
    conf = tmp_path / "slurm.conf"
    conf.touch()  # a Slurm client here gets no answer: never a candidate
    run = run_cwl(
        ["--executor", "route", "--seqera-history", str(db), "--no-container",
         str(EXAMPLES / "wordcount.cwl"), str(EXAMPLES / "wordcount.yml")],
        tmp_path, env={"SEQERA_ROUTE_BACKENDS": "local,slurm", "SLURM_CONF": str(conf)},
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert Path(run.outputs["total"]["path"]).read_text().strip() == "6"
    assert "submitted to local as" in run.stderr
    assert "(finish: local finish in" in run.stderr
    rows = open_history(db).attempts()[1]
    assert len(rows) == 4 and all(r.backend == "local" for r in rows)
    assert all("slurm cannot: sinfo did not answer" in r.route for r in rows), rows[0].route
