"""The right-sizer fed from the history's summaries and windows answers exactly as one that
learned every attempt in the order it was stored, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import random

import attrs

from seqera_core.history import History, TaskRecord
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import PredictiveResolver
from seqera_core.units import GIB, MIB


def _mixed(seed: int, n: int) -> list[TaskRecord]:
    """Processes with strata (cpus, container), retries, kills of both kinds, allocations,
    unmeasured runs, and one process whose peaks followed its allocation twice."""
    rng = random.Random(seed)
    out: list[TaskRecord] = []
    for i in range(n):
        process = ("ALIGN", "SORT", "CALL", "TRACK")[i % 4]
        size = None if i % 17 == 0 else rng.randrange(1, 50) * 100 * MIB
        given = rng.choice((2, 4, 8)) * GIB
        if process == "TRACK":  # used what it was given on the largest allocation
            given, size = (8 * GIB if i % 40 == 3 else 4 * GIB), GIB
            peak = int(given * 0.95)
        else:
            peak = int((size or GIB) * rng.uniform(0.5, 1.5)) + rng.randrange(MIB)
        common = {
            "process": process,
            "input_bytes": size,
            "memory": given,
            "time": 7200,
            "cpus": rng.choice((1.0, 4.0)),
            "container": rng.choice((None, "img:1")),
        }
        if i % 23 == 5:  # killed for memory, then retried and passed
            out.append(TaskRecord("r", str(i), out_of_memory=True, succeeded=False, **common))  # type: ignore[arg-type]
            common["memory"] = 2 * given
            out.append(
                TaskRecord(
                    "r",
                    str(i),
                    attempt=2,
                    succeeded=True,
                    peak_memory=peak,
                    realtime=rng.uniform(10, 900),
                    **common,
                )
            )  # type: ignore[arg-type]
        elif i % 29 == 7:
            out.append(TaskRecord("r", str(i), time_limit=True, succeeded=False, **common))  # type: ignore[arg-type]
        else:
            out.append(
                TaskRecord(
                    "r",
                    str(i),
                    succeeded=True,
                    peak_memory=None if i % 31 == 0 else peak,
                    realtime=rng.uniform(10, 900),
                    cpu_percent=rng.uniform(50, 390),
                    **common,
                )
            )  # type: ignore[arg-type]
    return out


def _requests(seed: int) -> list[ResourceRequest]:
    rng = random.Random(seed)
    return [
        ResourceRequest(process=rng.choice(("ALIGN", "SORT", "CALL", "TRACK", "NEW")),
                        memory=rng.choice((GIB, 16 * GIB)), time=3600,
                        cpus=rng.choice((1.0, 4.0)), container=rng.choice((None, "img:1")),
                        input_bytes=rng.choice((None, rng.randrange(1, 60) * 100 * MIB)),
                        attempt=rng.choice((1, 1, 2)))
        for _ in range(200)
    ]  # fmt: skip


def test_summaries_and_windows_size_as_learning_every_row(store: tuple[History, str]) -> None:
    history, _ = store
    # built on the empty history: every attempt reaches it row by row, in order
    stepwise = PredictiveResolver(history)
    records = _mixed(11, 1200)  # windows of 200 full and rolled over
    history.record(records[:700])
    stepwise.refresh()
    midway = PredictiveResolver(history)  # summaries and windows, then the rows since
    history.record(records[700:])
    loaded = PredictiveResolver(history)  # summaries and windows alone
    for request in _requests(5):
        expected = stepwise.resolve(request)
        assert loaded.resolve(request) == expected, request
        assert midway.resolve(request) == expected, request
    assert stepwise.flagged == loaded.flagged == midway.flagged == {"TRACK"}


def test_a_kill_noted_before_its_process_is_read_is_kept(store: tuple[History, str]) -> None:
    history, _ = store
    history.record(_mixed(3, 400))
    resolver = PredictiveResolver(history)  # ALIGN known, its windows not read yet
    killed = TaskRecord("now", "1", "ALIGN", False, out_of_memory=True, memory=40 * GIB,
                        input_bytes=GIB)  # fmt: skip
    resolver.note_failure(killed)
    request = ResourceRequest(process="ALIGN", memory=GIB, input_bytes=GIB, attempt=2)
    retry = resolver.resolve(request)
    assert retry is not None and retry.memory > 40 * GIB
    # the same kill arriving through the history changes nothing
    history.record([killed])
    assert resolver.resolve(request) == retry
    assert resolver.resolve(attrs.evolve(request, attempt=1)) != retry
