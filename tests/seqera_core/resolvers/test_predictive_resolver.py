"""The learning right-sizer: fallbacks, online learning, retries, floors, limits, and the
self-sizing guard."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any, cast

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from seqera_core.history import History, TaskRecord, open_history
from seqera_core.models import ResourceLimits, ResourceRequest
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import PredictiveResolver, resolve
from seqera_core.units import GIB, MIB


def _runs(process: str, pairs: list[tuple[int, int]], start: int = 0) -> list[TaskRecord]:
    return [
        TaskRecord("r", str(start + i), process, True, peak_memory=peak, input_bytes=size,
                   realtime=100.0, cpu_percent=150.0)
        for i, (size, peak) in enumerate(pairs)
    ]  # fmt: skip


def _history(pairs: list[tuple[int, int]]) -> History:
    history = open_history(":memory:")
    history.record(_runs("ALIGN", pairs))
    return history


def test_never_seen_process_has_no_opinion() -> None:
    resolver = PredictiveResolver(open_history(":memory:"))
    assert resolver.resolve(ResourceRequest(memory=GIB, process="ALIGN")) is None
    assert resolver.resolve(ResourceRequest(memory=GIB)) is None


def test_few_runs_fall_back_to_the_largest_peak() -> None:
    resolver = PredictiveResolver(_history([(GIB, 2 * GIB), (GIB, 3 * GIB)]), fallback_margin=1.0)
    answer = resolver.resolve(ResourceRequest(memory=16 * GIB, process="ALIGN", input_bytes=GIB))
    assert answer is not None and answer.memory == 3 * GIB


def test_sizes_from_input_bytes() -> None:
    # Peak = 2 x input: a small input gets far less than the largest peak.
    history = _history([(i * 100 * MIB, i * 200 * MIB) for i in range(1, 61)])
    resolver = PredictiveResolver(history, fallback_margin=1.0)
    small = resolver.resolve(ResourceRequest(memory=64 * GIB, process="ALIGN", input_bytes=GIB))
    assert small is not None
    assert 2 * GIB <= small.memory < 4 * GIB  # the largest peak is 11.7 GiB
    beyond = resolver.resolve(
        ResourceRequest(memory=64 * GIB, process="ALIGN", input_bytes=100 * GIB)
    )
    assert beyond is not None and 60 * 200 * MIB <= beyond.memory <= 60 * 220 * MIB


def test_learns_tasks_finished_after_it_was_built() -> None:
    history = _history([(GIB, GIB)])
    resolver = PredictiveResolver(history, fallback_margin=1.0)
    history.record(_runs("ALIGN", [(GIB, 5 * GIB)], start=10))
    answer = resolver.resolve(ResourceRequest(memory=GIB, process="ALIGN"))
    assert answer is not None and answer.memory == 5 * GIB


def test_a_replayed_attempt_is_learned_once() -> None:
    runs = _runs("ALIGN", [(i * GIB, 2 * i * GIB) for i in range(1, 3)])
    history = open_history(":memory:")
    history.record(runs)
    resolver = PredictiveResolver(history, fallback_margin=1.0)
    history.record(runs)  # the same weblog stream sent again
    resolver.refresh()
    assert resolver._models["ALIGN"].memory.runs == 2  # still too few to fit: no 3rd run


def test_time_and_cpus() -> None:
    history = _history([(GIB, GIB)] * 3)
    request = ResourceRequest(cpus=8, memory=GIB, time=7200, process="ALIGN")
    answer = PredictiveResolver(history, fallback_margin=1.0, floor_time=60).resolve(request)
    assert answer is not None
    assert 100 <= answer.time < 7200 and answer.cpus == 8  # cpus only on request
    # by default never below 10 minutes: a fast run's time leaves out a busy node's start-up
    default = PredictiveResolver(history, fallback_margin=1.0).resolve(request)
    assert default is not None and default.time == 600
    applied = PredictiveResolver(history, fallback_margin=1.0, apply_cpus=True).resolve(request)
    assert applied is not None and applied.cpus == 2


def test_time_limit_kill_escalates_time_only() -> None:
    history = _history([(GIB, GIB)] * 20)
    history.record([TaskRecord("r", "99", "ALIGN", False, time=150, time_limit=True)])
    answer = PredictiveResolver(history, fallback_margin=1.0).resolve(
        ResourceRequest(memory=GIB, time=7200, process="ALIGN", attempt=2)
    )
    assert answer is not None
    assert answer.time >= 7200  # never less than declared after a time-limit kill
    assert answer.memory < 2 * GIB
    first = PredictiveResolver(history).resolve(
        ResourceRequest(memory=GIB, time=7200, process="ALIGN", attempt=1)
    )
    assert first is not None and first.time < 7200


def test_oom_before_any_success_gets_more_than_the_failed_allocation() -> None:
    history = open_history(":memory:")
    history.record([TaskRecord("r", "1", "ALIGN", False, memory=GIB, out_of_memory=True)])
    answer = PredictiveResolver(history, fallback_margin=1.0).resolve(
        ResourceRequest(memory=GIB, process="ALIGN", attempt=2)
    )
    assert answer is not None and answer.memory == 2 * GIB


def test_bad_settings_are_refused() -> None:
    history = open_history(":memory:")
    for options in ({"escalation": 1.0}, {"fallback_margin": 0.5}, {"min_runs": 2},
                    {"alpha": 0.6}, {"retry_cost": -1.0}):  # fmt: skip
        try:
            PredictiveResolver(history, **options)  # type: ignore[arg-type]
        except ValueError:
            continue
        raise AssertionError(f"{options} accepted")


def test_a_self_sizing_tool_keeps_what_it_declared() -> None:
    # 20 runs that used 1 GiB: anything else is sized down to about that.
    history = _history([(GIB, GIB)] * 20)
    resolver = PredictiveResolver(history)
    request = ResourceRequest(memory=16 * GIB, process="ALIGN", input_bytes=GIB)
    plain = resolver.resolve(request)
    assert plain is not None and plain.memory < 2 * GIB
    guarded = resolver.resolve(attrs.evolve(request, self_sizing=True))
    assert guarded is not None and guarded.memory == 16 * GIB
    opted_in = PredictiveResolver(history, shrink_self_sizing=True).resolve(
        attrs.evolve(request, self_sizing=True)
    )
    assert opted_in == plain


def test_peaks_that_followed_the_allocation_guard_the_process() -> None:
    # A JVM given -Xmx from its allocation: first attempts given 16 GiB used 14, and
    # given 32 (a run that declared more) 29: 90 % of whatever it got.
    def history(attempt: int) -> History:
        runs = open_history(":memory:")
        runs.record(
            TaskRecord("r", str(i), "MARKDUP", True, memory=16 * GIB, peak_memory=14 * GIB,
                       input_bytes=GIB + i, realtime=100.0)
            if i < 20 else
            TaskRecord("r", str(i), "MARKDUP", True, memory=32 * GIB, peak_memory=29 * GIB,
                       input_bytes=GIB + i, realtime=100.0, attempt=attempt)
            for i in range(24)
        )  # fmt: skip
        return runs

    request = ResourceRequest(memory=16 * GIB, process="MARKDUP", input_bytes=GIB)
    resolver = PredictiveResolver(history(1))
    answer = resolver.resolve(request)
    assert answer is not None and answer.memory == 16 * GIB
    assert resolver.flagged == {"MARKDUP"}
    # The same peaks on retries are no evidence: a retried task was killed first, so it
    # needed more than its neighbours whatever the tool does (issue 31)
    resolver = PredictiveResolver(history(2))
    assert resolver.resolve(request) is not None and not resolver.flagged


def test_runs_of_the_requests_cpus_and_container_answer_when_there_are_enough() -> None:
    history = open_history(":memory:")
    history.record(
        TaskRecord("r", str(i), "SORT", True, cpus=cpus, peak_memory=cpus * GIB,
                   realtime=100.0, container="sort:1")
        for i, cpus in enumerate([1] * 30 + [8] * 10)
    )  # fmt: skip
    resolver = PredictiveResolver(history)
    one = resolver.resolve(ResourceRequest(cpus=1, memory=64 * GIB, process="SORT",
                                           container="sort:1"))  # fmt: skip
    eight = resolver.resolve(ResourceRequest(cpus=8, memory=64 * GIB, process="SORT",
                                             container="sort:1"))  # fmt: skip
    assert one is not None and eight is not None
    assert one.memory < 2 * GIB and 8 * GIB <= eight.memory < 10 * GIB


class _Reads:
    """A real history that counts the calls made on it (how a resolve reads it)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.history, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted


def test_a_warm_resolve_reads_no_window_of_a_large_history() -> None:
    # How fast that is, with 10 million rows, is benchmarks/history_scale.py's to measure;
    # here: what a warm resolve asks of the store does not grow with the history.
    history = open_history(":memory:")
    history.record(
        _runs(f"P{i % 50}", [(i * 1000 + 1, (i % 97 + 1) * MIB)], start=i)[0] for i in range(20_000)
    )
    reads = _Reads(history)
    resolver = PredictiveResolver(cast(History, reads), fallback_margin=1.0)
    for i in range(50):  # a process's first request reads its window and fits it
        resolver.resolve(ResourceRequest(memory=GIB, process=f"P{i}"))
    assert reads.calls["windows"] > 0
    reads.calls.clear()
    for i in range(1000):
        resolver.resolve(ResourceRequest(memory=GIB, process=f"P{i % 50}", input_bytes=i * 7919))
    reading = {"window", "windows", "summaries", "records", "stats", "first_declared"}
    assert not reading & set(reads.calls), reads.calls
    assert reads.calls["feed"] <= 1000  # at most one look for newer rows per resolve


_peaks = st.lists(st.tuples(st.integers(0, 10**12), st.integers(1, 2**40)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    peaks=_peaks,
    input_bytes=st.none() | st.integers(0, 10**12),
    floor=st.integers(1, GIB),
    limit=st.integers(1, 2**41),
    attempt=st.integers(1, 4),
)
def test_never_below_floor_nor_above_limits(
    peaks: list[tuple[int, int]], input_bytes: int | None, floor: int, limit: int, attempt: int
) -> None:
    resolver = PredictiveResolver(_history(peaks), floor_memory=floor, floor_time=30)
    answer = resolver.resolve(
        ResourceRequest(memory=GIB, time=3600, process="ALIGN", attempt=attempt,
                        input_bytes=input_bytes)
    )  # fmt: skip
    assert answer is not None
    assert answer.memory >= floor and answer.time >= 30
    capped = resolve(
        ResourceRequest(memory=GIB, process="ALIGN", attempt=attempt, input_bytes=input_bytes,
                        resource_limits=ResourceLimits(memory=limit, time=600)),
        [resolver], defaults=DEFAULTS,
    )  # fmt: skip
    assert capped.effective.memory <= limit and capped.effective.time <= 600


@settings(max_examples=60, deadline=None)
@given(peaks=_peaks, input_bytes=st.none() | st.integers(0, 10**12), attempt=st.integers(1, 3))
def test_retry_after_oom_gets_more_than_the_failed_allocation(
    peaks: list[tuple[int, int]], input_bytes: int | None, attempt: int
) -> None:
    history = _history(peaks)
    resolver = PredictiveResolver(history, fallback_margin=1.0)
    request = ResourceRequest(memory=GIB, process="ALIGN", attempt=attempt, input_bytes=input_bytes)
    first = resolver.resolve(request)
    assert first is not None
    history.record([TaskRecord("r", "x", "ALIGN", False, attempt=attempt, memory=first.memory,
                               out_of_memory=True, input_bytes=input_bytes)])  # fmt: skip
    retry = resolver.resolve(
        ResourceRequest(memory=GIB, process="ALIGN", attempt=attempt + 1, input_bytes=input_bytes)
    )
    assert retry is not None
    largest = max(peak for _, peak in peaks)
    # more than what failed, and never past twice the larger of it and the largest use
    assert retry.memory >= math.floor(first.memory * 1.05)
    assert retry.memory <= math.ceil(max(first.memory, largest) * 2)


def test_a_bulk_load_sizes_exactly_as_learning_one_run_at_a_time() -> None:
    rng = random.Random(7)
    records = [
        TaskRecord("r", str(i), f"P{i % 3}", True, peak_memory=rng.randrange(1, 1000) * MIB,
                   input_bytes=None if i % 11 == 0 else rng.randrange(10**9),
                   realtime=float(rng.randrange(1, 600)))
        for i in range(1500)
    ]  # fmt: skip
    bulk = open_history(":memory:")
    bulk.record(records)
    online = open_history(":memory:")
    stepwise = PredictiveResolver(online)
    for record in records:
        online.record([record])
        stepwise.refresh()
    loaded = PredictiveResolver(bulk)
    for i in range(300):
        request = ResourceRequest(memory=GIB, process=f"P{i % 3}", input_bytes=i * 3331 % 10**9)
        assert loaded.resolve(request) == stepwise.resolve(request)


def _tracker(runs: list[tuple[int, int]], start: int = 0) -> list[TaskRecord]:
    """First attempts of about the same input given ``(allocation, peak)``."""
    return [
        TaskRecord("r", str(start + i), "SORT", True, memory=given, peak_memory=peak,
                   input_bytes=GIB + i, realtime=100.0)
        for i, (given, peak) in enumerate(runs)
    ]  # fmt: skip


def test_a_process_flagged_from_history_keeps_what_it_tracked_at_until_taken_back() -> None:
    # Sized down to 4 GiB by an earlier run, it used 3.8; given 8 (twice), it used 7.6:
    # it keeps 4 GiB, not the 16 it declares, and a retry doubles what failed.
    history = open_history(":memory:")
    history.record(_tracker([(4 * GIB, int(3.8 * GIB))] * 20 + [(8 * GIB, int(7.6 * GIB))] * 2))
    resolver = PredictiveResolver(history)
    request = ResourceRequest(memory=16 * GIB, process="SORT", input_bytes=GIB)
    first = resolver.resolve(request)
    assert first is not None and first.memory == 4 * GIB and resolver.flagged == {"SORT"}
    history.record([TaskRecord("r", "k", "SORT", False, attempt=1, memory=4 * GIB,
                               out_of_memory=True, input_bytes=GIB)])  # fmt: skip
    retry = resolver.resolve(attrs.evolve(request, attempt=2))
    assert retry is not None and retry.memory == 8 * GIB
    # Later runs given 8 GiB used what the others did: the flag is taken back.
    history.record(_tracker([(8 * GIB, int(3.8 * GIB))] * 3, start=100))
    later = resolver.resolve(request)
    # not held at the 8 GiB it tracked at: the largest use at most (its safety net has
    # scored its history, where the plain maximum held the 20 steady runs exactly)
    assert later is not None and later.memory <= math.ceil(7.6 * GIB)
    assert not resolver._pick(request).memory.tracks_allocation  # type: ignore[union-attr]


def test_a_single_outlier_never_flags_a_process() -> None:
    history = open_history(":memory:")
    history.record(_tracker([(4 * GIB, int(3.8 * GIB))] * 20 + [(8 * GIB, int(7.6 * GIB))]))
    resolver = PredictiveResolver(history)
    answer = resolver.resolve(ResourceRequest(memory=16 * GIB, process="SORT", input_bytes=GIB))
    assert answer is not None and answer.memory < 8 * GIB and not resolver.flagged
