"""ECS throttling and spot interruptions against the moto emulator, counted in the emulator.

A run (a :class:`~seqera_core.session.Session` on the ``ecs`` backend, driven as an
engine adapter drives it: waves of submissions, one poll for every active job, finished
ones recorded) talks to moto over HTTP through a proxy that answers every Nth RunTask and
DescribeTasks with ``ThrottlingException``. Meanwhile the test reclaims running tasks as
AWS does: stopped with stopCode ``SpotInterruption`` ("Your Spot Task was interrupted.")
or with no stopCode and "Host EC2 (instance i-...) terminated.", zero to two times per
job at random (seed: ``$SEQERA_FAULT_SEED``).

Counted in moto, per submission (its submission key is the task's ``startedBy``; a
restart's is the key with ``-rN``): tasks RunTask created, tasks that ran to the end
(stopped without being reclaimed), and whether two of its tasks were ever alive at once.
Lost: a job that never reported a finished state or never ran to the end; run twice: one
that ran to the end twice, or had two tasks alive at once. Every reclaimed job must be
started again by the backend (one new task per reclaim, ``resubmissions`` on its status),
succeed, and reach the engine as one attempt: one history row, attempt 1.

Reproduce: ``SEQERA_FAULT_SEED=N uvx nox -s faults -- -k ecs``
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from seqera_core.backends import JobHandle, JobSpec, JobState, JobStatus
from seqera_core.config import Config
from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.session import Finished, Session
from seqera_core.units import GIB

from ..integration.conftest import aws, moto_server
from ..integration.ecs.conftest import emulator
from .conftest import FaultRow, FaultTable

if TYPE_CHECKING:
    from ..integration.ecs.emulator import Emulator

__all__ = ["aws", "emulator", "moto_server"]  # the ECS suite's fixtures, used here as they are

pytestmark = pytest.mark.integration

ROLE = "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"
WAVES, PER_WAVE = 3, 8
JOBS = WAVES * PER_WAVE
THROTTLE_EVERY = {"RunTask": 4, "DescribeTasks": 4}
SPOT_REASONS = (
    ("SpotInterruption", "Your Spot Task was interrupted."),
    (None, "Host EC2 (instance i-0abc12345) terminated."),
)


def _tasks(emulator: Emulator) -> list[Any]:
    return list(emulator.ecs_state.tasks.get("seqera", {}).values())


def _by_submission(emulator: Emulator, keys: dict[str, str]) -> dict[str, list[Any]]:
    """moto's tasks per handle, by submission key (``startedBy``, a restart's ``-rN``)."""
    found: dict[str, list[Any]] = {native: [] for native in keys}
    owner = {key: native for native, key in keys.items()}
    for task in _tasks(emulator):
        key = str(task.started_by)
        native = owner.get(key) or owner.get(key.rpartition("-r")[0])
        if native is not None:
            found[native].append(task)
    return found


def test_throttling_and_spot_interruptions_lose_nothing_and_run_nothing_twice(
    emulator: Emulator, tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = int(os.environ.get("SEQERA_FAULT_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    emulator.transitions(times=1)
    config = Config(
        {
            "backend": "ecs",
            "history": str(tmp_path / "history.db"),
            "ecs.cluster": "seqera",
            "ecs.execution_role": ROLE,
            "ecs.max_spot_attempts": 3,
        }
    )
    specs = [
        JobSpec(f"job{i}", ("echo", str(i)),
                ResourceRequest(process="work", container="ubuntu:24.04", cpus=1, memory=2 * GIB))
        for i in range(JOBS)
    ]  # fmt: skip
    planned = [rng.choice((0, 0, 1, 1, 2)) for _ in range(JOBS)]  # reclaims per job
    keys: dict[str, str] = {}  # handle's native id -> submission key
    reclaimed: Counter[str] = Counter()
    finished: dict[str, JobStatus] = {}
    overlapped: set[str] = set()
    handles: list[JobHandle] = []
    with emulator.throttling({}, every=THROTTLE_EVERY) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        with Session(config, "seqera-run") as session:
            deadline = time.monotonic() + 60
            while len(finished) < JOBS:
                assert time.monotonic() < deadline, (seed, len(finished), reclaimed)
                if len(handles) < JOBS:  # the next wave, as an engine's scheduler sends it
                    wave = specs[len(handles) : len(handles) + PER_WAVE]
                    handles += session.submit(wave)
                    keys |= {h.native_id: emulator.task(h.native_id).started_by
                             for h in handles[-len(wave):]}  # fmt: skip
                active = [h for h in handles if h.native_id not in finished]
                statuses = session.poll(active)
                session.record(
                    Finished(specs[handles.index(s.handle)].request, s, task_id=s.handle.name)
                    for s in statuses
                    if s.state.finished
                )
                finished |= {s.handle.native_id: s for s in statuses if s.state.finished}
                tasks = _by_submission(emulator, keys)
                for number, handle in enumerate(handles):
                    alive = [t for t in tasks[handle.native_id] if t.last_status != "STOPPED"]
                    if len(alive) > 1:
                        overlapped.add(handle.native_id)
                    wanted = planned[number] - reclaimed[handle.native_id]
                    if alive and wanted > 0 and rng.random() < 0.5:
                        code, reason = rng.choice(SPOT_REASONS)
                        emulator.stop(alive[-1].task_arn, exit_code=None, stop_code=code,
                                      reason=reason)  # fmt: skip
                        reclaimed[handle.native_id] += 1
                time.sleep(0.1)
    tasks = _by_submission(emulator, keys)
    # A task that stopped without being reclaimed ran its command to the end.
    ran = {n: len(tasks[n]) - reclaimed[n] for n in keys}
    lost = [n for n in keys if ran[n] < 1 or finished[n].state is not JobState.SUCCEEDED]
    twice = [n for n in keys if ran[n] > 1 or n in overlapped]
    rows = open_history(tmp_path / "history.db").records()
    fault_table.rows.append(
        FaultRow(
            fault=f"ECS: 1 in {THROTTLE_EVERY['RunTask']} RunTask/DescribeTasks throttled, "
            f"{sum(reclaimed.values())} spot interruptions (seed {seed}); submitted = tasks "
            "RunTask created",
            injected=sum(proxy.throttled.values()) + sum(reclaimed.values()),
            jobs=JOBS,
            submitted=sum(len(t) for t in tasks.values()),
            ran=sum(ran.values()),
            lost=len(lost),
            twice=len(twice),
            command=f"SEQERA_FAULT_SEED={seed} uvx nox -s faults -- -k ecs",
        )
    )
    assert sum(proxy.throttled.values()) > 0 and sum(reclaimed.values()) > 0, seed
    assert (lost, twice) == ([], []), (seed, finished, ran)
    # One new task per reclaim, counted on the job's status; one start per job otherwise.
    assert {n: len(t) for n, t in tasks.items()} == {n: 1 + reclaimed[n] for n in keys}, seed
    assert {n: s.resubmissions for n, s in finished.items()} == {n: reclaimed[n] for n in keys}
    # The engine saw one attempt per job: no engine retry was spent on a reclaimed host.
    assert sorted((r.task_id, r.attempt, r.succeeded) for r in rows) == sorted(
        (spec.name, 1, True) for spec in specs
    )
