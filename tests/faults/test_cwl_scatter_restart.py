"""slurmctld stopped and started again in the middle of a ``cwltool-seqera --executor slurm``
scatter: every job runs once, every output is there, exit 0, one history row per job.

The workflow (``data/pairs.cwl``) scatters a two-job chain over 12 indices: ``first``
then ``second``. Eight chains' ``first`` jobs end at once, four pause ten seconds. Each
job appends one line to a file of its own in a directory outside cwltool's staging, so
the count of lines says how often each ran; Slurm's completion log (``sacct -c``) says
how many jobs it accepted under each name.

The controller goes down as soon as the first ``second`` job is being sent: the other
quick chains' ``second`` jobs are still being sent (one ``sbatch`` at a time) and meet
"Unable to contact slurm controller", the four long ``first`` jobs run on and end while
it is down (slurmd reports them once it is back), and the poller's status calls get no
answer for the whole outage.

Reproduce: ``uvx nox -s faults -- -k cwl_scatter``
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from .conftest import FaultRow, FaultTable, Outage, SlurmCluster
from .test_controller_restart import accepted_by_slurm
from .test_snakemake_restart import left_in_squeue

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")
PAUSES = [0] * 8 + [10] * 4  # seconds each chain's first job pauses
STEPS = ("first", "second")
DOWN_SECONDS = 12.0


def submit_times(cluster: SlurmCluster, prefix: str) -> dict[str, float]:
    """When slurmctld accepted each job named ``prefix...`` (epoch seconds), from its
    jobcomp/filetxt log (``sacct -c`` shows the start there, not the submission)."""
    conf = dict(line.split("=", 1) for line in cluster.conf.read_text().splitlines() if "=" in line)
    accepted: dict[str, float] = {}
    for record in Path(conf["JobCompLoc"]).read_text().splitlines():
        fields = dict(word.split("=", 1) for word in record.split() if "=" in word)
        if fields.get("Name", "").startswith(prefix) and "SubmitTime" in fields:
            stamp = time.strptime(fields["SubmitTime"], "%Y-%m-%dT%H:%M:%S")
            accepted[fields["Name"]] = time.mktime(stamp)
    return accepted


def test_cwl_scatter_survives_a_controller_restart(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS",
                 "SEQERA_HISTORY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    runs = tmp_path / "runs"
    runs.mkdir()
    chains = range(len(PAUSES))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"runs": str(runs), "indices": list(chains), "pauses": PAUSES}))
    history = tmp_path / "history.db"
    jobs = tmp_path / "cwltool-seqera-work" / "jobs"  # the backend's job directories
    long = {f"first.{i}" for i, pause in enumerate(PAUSES) if pause}

    def started() -> set[str]:
        return {path.name for path in runs.iterdir()}

    # A job's directory is written just before its sbatch: down as the first second job
    # goes out, while the other quick chains' are still to be sent, and the long first
    # jobs run.
    outage = Outage(lambda: any(jobs.glob("faultcwl_second*")) and long <= started(),
                    slurm.stop_controller, slurm.start_controller, DOWN_SECONDS,
                    within=240, poll=0.02).begin()  # fmt: skip
    done = subprocess.run(
        [COMMAND, "--executor", "slurm", "--seqera-history", str(history), "--no-container",
         "--outdir", str(tmp_path / "out"), str(DATA / "pairs.cwl"), str(job)],
        cwd=tmp_path, env={**os.environ, **slurm.env}, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    outage.join(60)
    (tmp_path / "cwltool-seqera.log").write_text(done.stderr)  # for a failure's reader
    lines = {
        (step, i): (runs / f"{step}.{i}").read_text().split()
        if (runs / f"{step}.{i}").exists() else []
        for step in STEPS for i in chains
    }  # fmt: skip
    names = accepted_by_slurm("faultcwl_")
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT task_id, succeeded FROM task_history").fetchall()
    # second jobs Slurm accepted only once it was back, less the long chains' (their first
    # jobs ended during the outage): the submissions the outage held up
    down = outage.window[0] if outage.window else math.inf  # wall-clock time of the stop
    accepted = submit_times(slurm, "faultcwl_second") if outage.window else {}
    hit = sum(1 for t in accepted.values() if t > down) - len(long)
    fault_table.rows.append(
        FaultRow(
            fault=f"slurmctld down {DOWN_SECONDS:.0f} s in a cwltool-seqera scatter "
            f"({hit} submissions held up, {len(long)} jobs ran through it)",
            injected=int(outage.window is not None),
            jobs=len(lines),
            submitted=sum(names.values()),
            ran=sum(1 for r in lines.values() if r),
            lost=sum(1 for r in lines.values() if not r),
            twice=sum(1 for r in lines.values() if len(r) > 1),
            command="uvx nox -s faults -- -k cwl_scatter",
        )
    )
    assert outage.window and not outage.failures, (
        outage.failures or "the controller was never stopped")  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert all(len(r) == 1 for r in lines.values()), lines
    # every job accepted by Slurm once, under the name cwltool gave it
    assert len(names) == len(lines) and set(names.values()) == {1}, names
    outputs = json.loads(done.stdout)
    for step in STEPS:
        texts = [Path(item["path"]).read_text() for item in outputs[step]]
        assert texts == [f"{step} {i}\n" for i in chains], texts
    # one row per job in the history, each a success: none lost, none doubled
    assert len(rows) == len(lines), rows
    assert Counter(task for task, _ in rows) == Counter(names), rows
    assert all(ok for _, ok in rows), rows


# -- cwltool-seqera itself killed (kill -9) mid-run and started again ---------------------

SCATTER = DATA / "scatter.cwl"  # every job waits at a gate the test opens
KILLED_JOBS = 8


def _scatter_run(tmp_path: Path, slurm: SlurmCluster, extra: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [COMMAND, "--executor", "slurm", "--no-container", *extra,
         "--outdir", str(tmp_path / "out"), str(SCATTER), str(tmp_path / "job.json")],
        cwd=tmp_path, env={**os.environ, **slurm.env}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _locked(status: Path) -> bool:
    """Whether someone holds cwltool's lock on a cache entry's status file."""
    with status.open("a+") as file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def _taken_over(tmp_path: Path, runs: Path, cache: bool) -> bool:
    """The second run has adopted every job (holds each cache entry's lock) or, without
    a cache, sent its own copy of each."""
    if not cache:
        return sum(_lines(runs, "job.")) >= 2 * KILLED_JOBS
    held = [_locked(p) for p in (tmp_path / "cache").glob("*.status")]
    return len(held) == KILLED_JOBS and all(held)


def _lines(runs: Path, prefix: str) -> list[int]:
    return [len((runs / f"{prefix}{i}").read_text().split()) if (runs / f"{prefix}{i}").exists()
            else 0 for i in range(KILLED_JOBS)]  # fmt: skip


@pytest.mark.parametrize("cache", [True, False], ids=["cachedir", "no-cachedir"])
def test_cwl_killed_and_started_again(
    cache: bool,
    slurm: SlurmCluster,
    tmp_path: Path,
    fault_table: FaultTable,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``--cachedir`` the second run adopts the first run's jobs: each runs once.
    Without it the second run runs every step again, as plain cwltool does, and the
    first run's jobs are cancelled when it starts: none reaches its end beside them."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS",
                 "SEQERA_HISTORY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    runs, gate = tmp_path / "runs", tmp_path / "gate"
    runs.mkdir()
    (tmp_path / "job.json").write_text(json.dumps(
        {"runs": str(runs), "indices": list(range(KILLED_JOBS)), "pause": 0, "gate": str(gate)}
    ))  # fmt: skip
    extra = ["--cachedir", str(tmp_path / "cache")] if cache else []
    first = _scatter_run(tmp_path, slurm, extra)
    second: subprocess.Popen[str] | None = None
    try:
        # a loaded two-core machine takes minutes to start eight jobs one sbatch at a time
        deadline = time.monotonic() + 600
        while sum(_lines(runs, "job.")) < KILLED_JOBS and first.poll() is None:
            assert time.monotonic() < deadline, "the first run's jobs did not start"
            time.sleep(0.05)
        first.kill()
        first.communicate()
        second = _scatter_run(tmp_path, slurm, extra)
        # the gate opens once the second run has taken over (adopted, or sent copies)
        while not _taken_over(tmp_path, runs, cache) and second.poll() is None:
            assert time.monotonic() < deadline + 600, "the second run did not take over"
            time.sleep(0.1)
        time.sleep(1)
        gate.touch()
        out, err = second.communicate(timeout=600)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    (tmp_path / "second.log").write_text(err)
    starts, ends = _lines(runs, "job."), _lines(runs, "end.job.")
    left = left_in_squeue(tmp_path, limit=15)
    fault_table.rows.append(
        FaultRow(
            fault=f"cwltool-seqera kill -9 mid-scatter, same command again, "
            f"{'with' if cache else 'without'} --cachedir; {len(left)} left in squeue",
            injected=1,
            jobs=KILLED_JOBS,
            submitted=sum(starts),
            ran=sum(1 for n in ends if n),
            lost=sum(1 for n in ends if not n),
            twice=sum(1 for n in (starts if cache else ends) if n > 1),
            command=f"uvx nox -s faults -- -k 'cwl_killed and {'no-' if not cache else ''}"
            "cachedir'",
        )
    )
    assert second.returncode == 0, err[-4000:]
    texts = [Path(item["path"]).read_text() for item in json.loads(out)["out"]]
    assert texts == [f"job {i}\n" for i in range(KILLED_JOBS)], texts
    # with the cache every job ran once; without, each ran twice and only one copy ended
    assert starts == [1 if cache else 2] * KILLED_JOBS, (starts, err[-3000:])
    assert ends == [1] * KILLED_JOBS, (ends, err[-3000:])
    assert not left, left
