"""A real run to report on: jobs on the local backend, measured and recorded in a history."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends import LocalBackend
from seqera_core.backends.base import JobSpec, JobStatus
from seqera_core.backends.route import Option, choose
from seqera_core.history import TaskRecord, open_history
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import finished_record
from seqera_core.platforms import CostRates, Platform, Queue
from seqera_core.units import GIB, MIB

RUN_ID = "local-run"


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


# bytes b"x" * n are written, so resident: bytes(n) would be calloc'ed and never touched
HOLD = "import time; x = b'x' * ({mb} * 2**20); time.sleep({nap})"
SPIN = (
    "import time; x = b'x' * ({mb} * 2**20)\n"
    "end = time.time() + {nap}\nwhile time.time() < end: pass"
)

# (process, command, cpus, memory, time limit): what each task of the run declares
JOBS = [
    *[("index", _python(HOLD.format(mb=30, nap=0.4)), 1, 512 * MIB, 60)] * 3,
    *[("align", _python(SPIN.format(mb=60, nap=0.5)), 2, GIB, 120)] * 4,
    ("align", _python(HOLD.format(mb=300, nap=2)), 2, 100 * MIB, 120),  # out of memory
    *[("call", _python(HOLD.format(mb=10, nap=0.3)), 1, 256 * MIB, 30)] * 2,
    ("call", ["sleep", "30"], 1, 256 * MIB, 1),  # killed at its time limit
    ("qc", ["sh", "-c", "exit 3"], 1, 64 * MIB, 30),  # fails on its own
]


@pytest.fixture(scope="session")
def local_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite history holding one real run (``RUN_ID``) of the jobs above."""
    root = tmp_path_factory.mktemp("local-run")
    backend = LocalBackend(cpus=8, work_dir=root / "logs", kill_grace=0.3, sample_interval=0.05)
    requests = [
        ResourceRequest(cpus=cpus, memory=memory, time=limit, process=process)
        for process, _, cpus, memory, limit in JOBS
    ]
    try:
        handles = backend.submit(
            [JobSpec(name=f"{job[0]}-{i}", command=job[1], request=request)
             for i, (job, request) in enumerate(zip(JOBS, requests, strict=True))]
        )  # fmt: skip
        deadline = time.monotonic() + 60
        statuses: list[JobStatus] = []
        while time.monotonic() < deadline:
            statuses = backend.poll(handles)
            if all(s.state.finished for s in statuses):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the local run did not end: {statuses}")
    finally:
        backend.close()
    history = open_history(root / "history.db")
    history.record(
        finished_record(request, status, run_id=RUN_ID, engine="seqera-run")
        for request, status in zip(requests, statuses, strict=True)
    )
    history.close()
    return root / "history.db"


ROUTED_RUN = "routed-run"
ROUTED_AT = 1_800_000_000.0  # when the routed run's first job started (epoch seconds)


def _why(objective: str = "finish", **options: tuple[float, float, float] | str) -> str:
    """The reason the routing backend writes, from its own policy (``choose``): each
    candidate as (start, run time, cost) or why it cannot run the job."""
    verdicts = [Option(name, value) if isinstance(value, str) else Option(name, None, *value)
                for name, value in options.items()]  # fmt: skip
    return choose(verdicts, objective).record


def routed_records() -> list[TaskRecord]:
    """A routed run of 42 jobs on a 4-core machine and a Slurm cluster: short ``index``
    jobs locally (slurm's cycle makes them later there), wide ``align`` jobs on the
    cluster (too many cores for the machine), ``call`` jobs on the cluster while the
    machine was busy, one ``call`` killed for memory locally and retried on the cluster,
    then six short ``merge`` jobs one after another on the machine.
    Every reason is the routing policy's own (``seqera_core.backends.route.choose``), with
    the run time it would have expected: a process's time limit until one of its jobs had
    ended, then the longest seen (``RouteBackend.runtime_of``)."""
    records = []
    for n in range(24):  # 4 at a time, 1.2 s each
        start = ROUTED_AT + (n // 4) * 1.5
        guess = 60.0 if n < 4 else 1.2  # its time limit until one had ended
        records.append(TaskRecord(
            ROUTED_RUN, f"index-{n}", "index", True, engine="snakemake", cpus=1,
            memory=512 * MIB, time=60, peak_memory=90 * MIB, cpu_time=1.1, realtime=1.2,
            finished=start + 1.2, backend="local",
            route=_why(local=(0.3, guess, 0.0), slurm=(5.0, guess, 0.0002)),
        ))  # fmt: skip
    for n in range(6):  # 8 cores each: the machine has 4
        start = ROUTED_AT + 6 + n * 2
        records.append(TaskRecord(
            ROUTED_RUN, f"align-{n}", "align", True, engine="snakemake", cpus=8,
            memory=16 * GIB, time=3600, peak_memory=9 * GIB, cpu_time=4200.0, realtime=600.0,
            finished=start + 600, backend="slurm",
            route=_why(local="8 cores asked, its largest node has 4",
                       slurm=(6.0, 3600.0, 5.4)),
        ))  # fmt: skip
    for n in range(4):  # the machine busy with index jobs: later there than on the cluster
        start = ROUTED_AT + 7 + n
        records.append(TaskRecord(
            ROUTED_RUN, f"call-{n}", "call", True, engine="snakemake", cpus=2, memory=4 * GIB,
            time=600, peak_memory=3 * GIB, cpu_time=300.0, realtime=180.0,
            finished=start + 180, backend="slurm",
            route=_why(local=(190.0, 600.0, 0.0), slurm=(6.0, 600.0, 0.03)),
        ))  # fmt: skip
    records.append(TaskRecord(
        ROUTED_RUN, "call-4", "call", False, engine="snakemake", out_of_memory=True, cpus=2,
        memory=GIB, time=600, peak_memory=GIB, cpu_time=20.0, realtime=30.0,
        finished=ROUTED_AT + 40, backend="local", cause="out_of_memory",
        route=_why(local=(0.3, 600.0, 0.0), slurm=(5.0, 600.0, 0.03)),
    ))  # fmt: skip
    records.append(TaskRecord(
        ROUTED_RUN, "call-4", "call", True, attempt=2, engine="snakemake", cpus=2,
        memory=4 * GIB, time=600, peak_memory=3 * GIB, cpu_time=290.0, realtime=175.0,
        finished=ROUTED_AT + 50 + 175, backend="slurm",
        route=_why(local=(400.0, 600.0, 0.0), slurm=(6.0, 600.0, 0.03)),
    ))  # fmt: skip
    for n in range(6):  # one after another once the alignments are done: slurm's cycle each
        start = ROUTED_AT + 620 + n * 2.3
        guess = 60.0 if n == 0 else 2.0
        records.append(TaskRecord(
            ROUTED_RUN, f"merge-{n}", "merge", True, engine="snakemake", cpus=1,
            memory=GIB, time=60, peak_memory=200 * MIB, cpu_time=1.9, realtime=2.0,
            finished=start + 2.0, backend="local",
            route=_why(local=(0.3, guess, 0.0), slurm=(5.0, guess, 0.0001)),
        ))  # fmt: skip
    return records


#: The platform the routed run priced its cluster with (the machine has no rates).
_NORMAL = Queue("normal", max_cpus=64, max_memory=256 * GIB,
                cost=CostRates(core_hour=0.04, gib_hour=0.005))  # fmt: skip
ROUTED_PLATFORM = Platform("cluster", "slurm", (_NORMAL,), default_queue="normal")


@pytest.fixture(scope="session")
def routed_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite history holding the routed run, written through the history API."""
    path = tmp_path_factory.mktemp("routed-run") / "history.db"
    history = open_history(path)
    history.record(routed_records())
    history.close()
    return path
