"""Usage from Slurm accounting: a real slurmdbd cluster (conftest ``slurm_accounting``)
reports each plain sbatch job's peak memory and wall time, and the history built from
them sizes the next job of the same process below what it declared."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends._batch import CommandResult, RetryPolicy, run_command
from seqera_core.backends._slurm_usage import parse_usage
from seqera_core.backends.base import JobSpec, JobState, JobStatus
from seqera_core.backends.slurm import SlurmBackend
from seqera_core.history import finished_record, open_history
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import PredictiveResolver
from seqera_core.units import MIB

from .conftest import SlurmCluster

pytestmark = pytest.mark.integration

# Touches every page of N MiB, then holds them for S seconds.
ALLOCATE = (
    "import sys, time\n"
    "block = bytearray(int(sys.argv[1]) * 2**20)\n"
    "for i in range(0, len(block), 4096):\n"
    "    block[i] = 1\n"
    "time.sleep(float(sys.argv[2]))\n"
)
DECLARED = 1000 * MIB


class Recorder:
    """Runs each command for real and remembers which poll it belonged to."""

    def __init__(self) -> None:
        self.poll = 0
        self.log: list[tuple[int, CommandResult, float]] = []

    def __call__(
        self, argv: list[str], timeout: float, cwd: str | None, env: dict[str, str] | None
    ) -> CommandResult:
        result = run_command(argv, timeout, cwd, env)
        self.log.append((self.poll, result, time.monotonic()))
        return result


def job(name: str, megabytes: int, seconds: float, memory: int = DECLARED) -> JobSpec:
    request = ResourceRequest(process="allocate", memory=memory, cpus=1)
    command = [sys.executable, "-c", ALLOCATE, str(megabytes), str(seconds)]
    return JobSpec(name, command, request=request)


def run_all(
    backend: SlurmBackend, recorder: Recorder, specs: list[JobSpec]
) -> tuple[list[JobStatus], set[int]]:
    """Submit, poll every 0.5 s to the end; the statuses and the polls that saw a job end."""
    handles = backend.submit(specs)
    ended: set[int] = set()
    finished: set[str] = set()
    deadline = time.monotonic() + 180
    while True:
        recorder.poll += 1
        statuses = backend.poll(handles)
        now = {s.handle.native_id for s in statuses if s.state.finished}
        if now - finished:
            ended.add(recorder.poll)
        finished = now
        if len(finished) == len(handles):
            return statuses, ended
        assert time.monotonic() < deadline, statuses
        time.sleep(0.5)


@pytest.fixture
def accounted(slurm_accounting: SlurmCluster, tmp_path: Path) -> tuple[SlurmBackend, Recorder]:
    recorder = Recorder()
    backend = SlurmBackend(
        work_dir=tmp_path / "jobs",
        env=slurm_accounting.env,
        runner=recorder,  # type: ignore[arg-type]
        retry=RetryPolicy(attempts=10, first_delay=0.5, max_delay=4),
    )
    return backend, recorder


def test_plain_jobs_get_their_peak_and_wall_time_from_sacct(
    accounted: tuple[SlurmBackend, Recorder], tmp_path: Path, slurm_accounting: SlurmCluster
) -> None:
    backend, recorder = accounted
    shapes = [(200, 4.0), (120, 2.0), (60, 6.0)]
    statuses, ended = run_all(backend, recorder, [job(f"alloc-{mb}", mb, s) for mb, s in shapes])
    for status, (megabytes, seconds) in zip(statuses, shapes, strict=True):
        assert status.state is JobState.SUCCEEDED, backend.logs(status.handle)
        peak = status.peak_memory_bytes
        # the interpreter itself adds ~10-20 MiB; sampled once a second, never above it all
        assert peak is not None and megabytes * MIB <= peak <= (megabytes + 60) * MIB, status
        # Elapsed has whole seconds; the job also starts Python
        assert status.wall_seconds is not None and seconds <= status.wall_seconds <= seconds + 3
    assert backend.history == "sacct"
    sacct_polls = [poll for poll, result, _ in recorder.log if result.argv[0] == "sacct"]
    # one sacct per poll that saw jobs end (or waited for their record), never more
    assert len(sacct_polls) == len(set(sacct_polls))
    assert ended <= set(sacct_polls)
    assert all("-X" not in result.argv for _, result, _ in recorder.log)
    total = dict(backend.calls)
    print(f"\ncalls for {len(shapes)} jobs: {total}; polls that looked up usage: {sacct_polls}")

    # The history these rows make sizes the next job of the process below its declaration.
    history = open_history(tmp_path / "history.db")
    history.record(
        finished_record(spec.request, status, run_id="first", engine="test")
        for spec, status in zip([job("", mb, s) for mb, s in shapes], statuses, strict=True)
    )
    resolver = PredictiveResolver(history)
    sized = resolver.resolve(ResourceRequest(process="allocate", memory=DECLARED, cpus=1))
    largest = max(s.peak_memory_bytes or 0 for s in statuses)
    assert sized is not None and largest <= sized.memory < DECLARED / 2, sized
    [second], _ = run_all(backend, recorder, [job("second", 200, 1.0, memory=sized.memory)])
    assert second.state is JobState.SUCCEEDED and not second.out_of_memory
    shown = subprocess.run(
        ["scontrol", "show", "job", second.handle.native_id],
        env={**slurm_accounting.env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # what Slurm itself was asked for
    assert f"MinMemoryNode={-(-sized.memory // MIB)}M" in shown.split(), shown
    history.close()


def test_the_delay_until_usage_is_in_sacct(
    accounted: tuple[SlurmBackend, Recorder], slurm_accounting: SlurmCluster
) -> None:
    # How long after squeue first shows a job ended its final record is in slurmdbd.
    backend, _ = accounted
    [handle] = backend.submit([job("delay", 80, 2.0)])
    env = {**slurm_accounting.env, "PATH": "/usr/bin:/bin"}
    argv = ["squeue", "-h", "-t", "all", "-j", handle.native_id, "-o", "%T"]
    deadline = time.monotonic() + 120
    while subprocess.run(argv, env=env, capture_output=True, text=True).stdout.strip() not in (
        "COMPLETED", "FAILED"):  # fmt: skip
        assert time.monotonic() < deadline
        time.sleep(0.02)
    ended = time.monotonic()
    sacct = ["sacct", "-n", "-P", "-j", handle.native_id, "-o",
             "JobID,State,ExitCode,Elapsed,MaxRSS"]  # fmt: skip
    while True:
        out = subprocess.run(sacct, env=env, capture_output=True, text=True).stdout
        usage = parse_usage(out).get(handle.native_id)
        if usage is not None and usage.settled:
            break
        assert time.monotonic() - ended < 60, out
        time.sleep(0.02)
    delay = time.monotonic() - ended
    print(f"\nusage in sacct {delay:.3f} s after squeue showed the job ended")
    assert usage.peak_memory is not None and usage.peak_memory >= 80 * MIB


HOLD = "import time; b = bytearray({size}); time.sleep(3)"


def test_a_second_seqera_run_asks_for_what_the_first_used(
    slurm_accounting: SlurmCluster, tmp_path: Path
) -> None:
    db = tmp_path / "history.db"
    argv = [sys.executable, "-m", "seqera_core.cli", "run", "--backend", "slurm",
            "--history", str(db), "--name", "hold", "--memory", "4GB", "--time", "1h",
            "--", sys.executable, "-c", HOLD.format(size=200 * 10**6)]  # fmt: skip
    env = {**os.environ, **slurm_accounting.env}
    for _ in range(2):
        done = subprocess.run(
            argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False
        )
        assert done.returncode == 0, done.stderr
    _, (first, second) = open_history(db).attempts()
    assert first.memory == 4 * 10**9 and first.succeeded and second.succeeded
    assert first.peak_memory is not None and first.peak_memory >= 200 * 10**6
    # sized from the first run's accounted peak: 1.2 x (under 10 runs), far below 4 GB
    assert second.memory == -(-first.peak_memory * 12 // 10)
    # what Slurm itself holds for the job: slurmctld keeps it for MinJobAge (300 s); the
    # accounting row can still lack the job's request this soon after it ended
    shown = subprocess.run(
        ["scontrol", "show", "job", "-o", second.task_id],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    mib = -(-second.memory // MIB)
    assert f"MinMemoryNode={mib}M" in shown.split(), shown
