"""The local backend on real processes: limits, budget, measurement, cancel and logs."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqera_core.backends import LocalBackend
from seqera_core.backends.base import JobHandle, JobSpec, JobState
from seqera_core.errors import ResourceError
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .conftest import wait

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

# Writes its start and end times (seconds since the epoch) to the file named in $OUT.
TIMED = ["sh", "-c", 'date +%s.%N >> "$OUT"; sleep "$NAP"; date +%s.%N >> "$OUT"']


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[LocalBackend]:
    local = LocalBackend(cpus=2, work_dir=tmp_path / "logs", kill_grace=0.3, sample_interval=0.05)
    yield local
    local.close()


def alive(pid: int) -> bool:
    # A killed orphan may stay a zombie if PID 1 does not reap: that is not running.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def dies(pid: int, within: float = 5) -> bool:
    """Whether ``pid`` is gone within ``within`` seconds: SIGKILL is sent, not awaited."""
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def read_pid(path: Path, limit: float = 5) -> int:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return int(text)
        time.sleep(0.01)
    raise AssertionError(f"{path} was never written")


def timed(tmp_path: Path, name: str, nap: float, **request: object) -> JobSpec:
    return JobSpec(
        name,
        TIMED,
        ResourceRequest(**request),  # type: ignore[arg-type]
        env={"OUT": str(tmp_path / f"{name}.times"), "NAP": str(nap)},
    )


def span(tmp_path: Path, name: str) -> tuple[float, float]:
    start, end = (float(line) for line in (tmp_path / f"{name}.times").read_text().split())
    return start, end


def test_exit_codes_and_states(backend: LocalBackend) -> None:
    handles = backend.submit(
        [
            JobSpec("ok", ["true"]),
            JobSpec("three", ["sh", "-c", "exit 3"]),
            JobSpec("signalled", ["sh", "-c", "kill -9 $$"]),
            JobSpec("missing", ["/nonexistent/command"]),
        ]
    )
    ok, three, signalled, missing = wait(backend, handles)
    assert (ok.state, ok.exit_code, ok.reason) == (JobState.SUCCEEDED, 0, None)
    assert (three.state, three.exit_code) == (JobState.FAILED, 3)
    assert (signalled.state, signalled.exit_code) == (JobState.FAILED, 128 + 9)
    assert signalled.reason == "killed by SIGKILL"
    assert (missing.state, missing.exit_code) == (JobState.FAILED, 127)
    assert "/nonexistent/command" in backend.logs(handles[3])
    assert backend.calls["spawn"] == 4


def test_never_oversubscribes_cores(backend: LocalBackend, tmp_path: Path) -> None:
    specs = [timed(tmp_path, f"job{i}", 0.3, cpus=1) for i in range(3)]
    wait(backend, backend.submit(specs))
    spans = [span(tmp_path, f"job{i}") for i in range(3)]
    for start, _ in spans:
        assert sum(1 for s, e in spans if s <= start < e) <= 2
    first, second, third = sorted(spans)
    assert second[0] < first[1], "two 1-cpu jobs should share a 2-cpu budget"
    assert third[0] >= min(first[1], second[1])


def test_never_oversubscribes_memory(tmp_path: Path) -> None:
    with LocalBackend(cpus=4, memory=1024 * MIB, work_dir=tmp_path) as local:
        specs = [timed(tmp_path, f"m{i}", 0.2, memory=600 * MIB) for i in range(2)]
        wait(local, local.submit(specs))
    (_, end0), (start1, _) = sorted(span(tmp_path, f"m{i}") for i in range(2))
    assert start1 >= end0


def test_a_job_that_can_never_fit_raises_at_submit(backend: LocalBackend) -> None:
    with pytest.raises(ResourceError) as cpus:
        backend.submit([JobSpec("ok", ["true"]), JobSpec("big", ["true"], ResourceRequest(cpus=3))])
    assert cpus.value.field == "cpus" and cpus.value.value == 3
    assert "at most 2 cores" in str(cpus.value)
    assert backend.calls["spawn"] == 0, "a refused submission queues none of its jobs"
    huge = backend.capacity_memory + 1
    with pytest.raises(ResourceError, match=f"memory: {huge}.*at most {huge - 1} bytes"):
        backend.submit([JobSpec("huge", ["true"], ResourceRequest(memory=huge))])


def test_backfill_never_delays_the_big_job(backend: LocalBackend, tmp_path: Path) -> None:
    handles = backend.submit(
        [
            timed(tmp_path, "long", 0.4, cpus=1, time=30),
            timed(tmp_path, "big", 0.2, cpus=2),
            timed(tmp_path, "short", 0.1, cpus=1, time=1),  # ends before "big" could start
            timed(tmp_path, "open", 0.1, cpus=1),  # no time limit: could delay "big"
        ]
    )
    wait(backend, handles)
    long, big, short, unbounded = (span(tmp_path, n) for n in ("long", "big", "short", "open"))
    assert short[0] < long[1], "a job that ends in time is backfilled"
    assert big[0] >= long[1] and big[0] >= short[1]
    assert unbounded[0] >= big[1], "a job without a time limit waits behind the big one"


def test_time_limit_kills_the_job_and_its_children(backend: LocalBackend, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    command = ["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"]
    (handle,) = backend.submit([JobSpec("slow", command, ResourceRequest(time=1))])
    child = read_pid(pidfile)
    (status,) = wait(backend, [handle], limit=5)
    assert status.state is JobState.FAILED and status.time_limit
    assert status.reason == "time limit of 1 s exceeded"
    assert status.exit_code == 128 + 15
    assert 1 <= status.wall_seconds < 2  # type: ignore[operator]
    assert dies(child)


def test_sigkill_follows_an_ignored_sigterm(backend: LocalBackend, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    command = ["sh", "-c", f"trap '' TERM; sleep 30 & echo $! > {pidfile}; wait; wait"]
    (handle,) = backend.submit([JobSpec("stubborn", command)])
    child = read_pid(pidfile)
    backend.cancel([handle])
    (status,) = wait(backend, [handle], limit=3)
    assert status.state is JobState.CANCELLED and status.exit_code == 128 + 9
    assert dies(child)


def test_cancel_kills_children_and_drops_queued_jobs(backend: LocalBackend, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    command = ["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"]
    running, queued = backend.submit(
        [JobSpec("run", command, ResourceRequest(cpus=2)), JobSpec("queued", ["true"])]
    )
    child = read_pid(pidfile)
    assert [s.state for s in backend.poll([running, queued])] == [
        JobState.RUNNING,
        JobState.PENDING,
    ]
    backend.cancel([running, queued])
    statuses = wait(backend, [running, queued], limit=3)
    assert [s.state for s in statuses] == [JobState.CANCELLED, JobState.CANCELLED]
    assert statuses[1].wall_seconds is None and statuses[1].exit_code is None
    assert dies(child)
    assert backend.calls["spawn"] == 1


def test_leftover_processes_die_with_the_job(backend: LocalBackend, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    (handle,) = backend.submit([JobSpec("bg", ["sh", "-c", f"sleep 30 & echo $! > {pidfile}"])])
    (status,) = wait(backend, [handle])
    assert status.state is JobState.SUCCEEDED
    assert dies(read_pid(pidfile))


ALLOCATE = "import time; block = b'x' * (100 * 2**20); time.sleep(0.2)"


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-c", ALLOCATE], ["sh", "-c", f'"{sys.executable}" -c "{ALLOCATE}"']],
    ids=["direct", "grandchild"],
)
def test_peak_memory_recorded(backend: LocalBackend, command: list[str]) -> None:
    (status,) = wait(backend, backend.submit([JobSpec("alloc", command)]))
    assert status.state is JobState.SUCCEEDED
    assert status.peak_memory_bytes is not None
    assert 100 * MIB <= status.peak_memory_bytes < 400 * MIB


def test_memory_over_the_request_is_killed(backend: LocalBackend) -> None:
    command = [sys.executable, "-c", "import time; b = b'x' * (200 * 2**20); time.sleep(5)"]
    request = ResourceRequest(memory=100 * MIB)
    (status,) = wait(backend, backend.submit([JobSpec("hog", command, request)]), limit=4)
    assert status.state is JobState.FAILED and status.out_of_memory
    assert status.exit_code == 128 + 9
    assert "out of memory" in (status.reason or "")


# Spins until it has used the CPU seconds asked (process time: the same however busy the
# machine is), then sleeps.
SPIN = "import time\nwhile time.process_time() < {cpu}: pass\ntime.sleep({nap})"


def test_cpu_time_recorded(backend: LocalBackend) -> None:
    alone = [sys.executable, "-c", SPIN.format(cpu=0.4, nap=0)]
    # two grandchildren, one still spinning after the leader has waited for the other
    pair = ["sh", "-c", f'"{sys.executable}" -c "{SPIN.format(cpu=0.3, nap=0)}" & '
                        f'"{sys.executable}" -c "{SPIN.format(cpu=0.3, nap=0)}"; wait']  # fmt: skip
    napper = [sys.executable, "-c", SPIN.format(cpu=0, nap=0.4)]
    specs = [JobSpec("one", alone), JobSpec("two", pair), JobSpec("nap", napper)]
    one, two, nap = wait(backend, backend.submit(specs), limit=20)
    assert one.cpu_seconds is not None and 0.4 <= one.cpu_seconds < 1.5
    assert two.cpu_seconds is not None and 0.6 <= two.cpu_seconds < 2.5
    # an interpreter's start-up and a sleep: a small fraction of its wall time
    assert nap.cpu_seconds is not None and nap.wall_seconds is not None
    assert nap.cpu_seconds < 0.4 <= nap.wall_seconds


def test_wall_time_recorded(backend: LocalBackend) -> None:
    handle, quick = backend.submit([JobSpec("nap", ["sleep", "0.5"]), JobSpec("q", ["true"])])
    nap, fast = wait(backend, [handle, quick])
    # No tight upper bound: a loaded CI machine may start a process a second late.
    assert nap.wall_seconds is not None and 0.5 <= nap.wall_seconds < 30
    assert fast.wall_seconds is not None and fast.wall_seconds < nap.wall_seconds


def test_logs_environment_labels_and_workdir(backend: LocalBackend, tmp_path: Path) -> None:
    script = 'echo out; echo err >&2; pwd; echo "$GREETING $SEQERA_LABEL_RUN_ID $SEQERA_CPUS"'
    merged, split = backend.submit(
        [
            JobSpec(
                "merged",
                ["sh", "-c", script],
                ResourceRequest(cpus=1.5),
                workdir=str(tmp_path),
                env={"GREETING": "hello"},
                labels={"run-id": "r42"},
            ),
            JobSpec(
                "split",
                ["sh", "-c", "echo out; echo err >&2"],
                stdout=str(tmp_path / "split.out"),
                stderr=str(tmp_path / "split.err"),
            ),
        ]
    )
    wait(backend, [merged, split])
    assert backend.logs(merged) == f"out\nerr\n{tmp_path}\nhello r42 2\n"
    assert (tmp_path / "split.out").read_text() == "out\n"
    assert (tmp_path / "split.err").read_text() == "err\n"
    assert backend.logs(split) == "out\nerr\n"


def test_logs_stream_while_running(backend: LocalBackend) -> None:
    (handle,) = backend.submit([JobSpec("talk", ["sh", "-c", "echo first; sleep 5"])])
    deadline = time.monotonic() + 3
    while backend.logs(handle) != "first\n" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert backend.logs(handle) == "first\n"
    assert backend.poll([handle])[0].state is JobState.RUNNING
    backend.cancel([handle])


def test_poll_many_handles_in_one_call(backend: LocalBackend) -> None:
    handles = backend.submit([JobSpec(f"t{i}", ["true"]) for i in range(40)])
    before = backend.calls["poll"]
    statuses = backend.poll(handles)
    assert backend.calls["poll"] == before + 1
    assert [s.handle for s in statuses] == handles
    final = wait(backend, handles)
    assert all(s.state is JobState.SUCCEEDED for s in final)
    assert backend.calls["spawn"] == backend.calls["reap"] == 40


def test_foreign_handles_are_unknown(backend: LocalBackend, tmp_path: Path) -> None:
    other = LocalBackend(cpus=1, work_dir=tmp_path)
    (handle,) = other.submit([JobSpec("elsewhere", ["true"])])
    slurm = JobHandle("slurm", "123")
    assert [s.state for s in backend.poll([handle, slurm])] == [JobState.UNKNOWN] * 2
    backend.cancel([handle, slurm])  # ignored, not an error
    wait(other, [handle])
    other.close()


def test_idle_backend_keeps_no_thread_or_descriptors(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    local = LocalBackend(cpus=1, work_dir=tmp_path)
    wait(local, local.submit([JobSpec("t", ["true"])]))
    local.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_backfill_never_delays_the_head_of_the_queue() -> None:
    # Pure policy: 4 cores; a running 2-core job ends in 100 s; the head needs 4 cores.
    from seqera_core.backends.local._backfill import backfill
    from seqera_core.backends.local._job import LocalJob

    def job(name: str, cpus: int, limit: int | None, started: float | None = None) -> LocalJob:
        request = ResourceRequest(cpus=cpus, time=limit)
        spec = JobSpec(name, ["true"], request)
        made = LocalJob(JobHandle("local", name), spec, cpus, 1)
        made.started = started
        return made

    running = [job("running", 2, 100, started=0.0)]
    head, short, long, spare = (
        job("head", 4, 10),
        job("short", 2, 50),
        job("long", 2, 500),
        job("x", 1, None),
    )
    chosen = backfill([head, short, long, spare], running, 4, 10**9, now=0.0, kill_grace=5.0)
    # short ends (55 s) before the head can start (105 s); long and the unlimited one would not.
    assert chosen == [short]
