"""The learning right-sizer: each task sized from its input bytes and its process's history.

Per process, a `UsageModel` for peak memory and one for run time learn every finished
attempt the history holds (read incrementally, so a resolve costs one indexed query).
A first attempt gets the model's prediction with its self-chosen margin, capped by the
per-process maximum x ``fallback_margin``; with too few runs or an input larger than any
seen, the per-process maximum x ``fallback_margin`` itself; with no run at all, no opinion
(the declared values). A retry after an out-of-memory (time-limit) kill gets at least the
largest use seen x ``fallback_margin`` and ``escalation`` x the allocation that failed;
for time, at least what was declared too.
Cpus are left as declared unless ``apply_cpus``: then the most cores ever kept busy.
"""

from __future__ import annotations

import math
import threading

from ..history import History, TaskRecord
from ..models import ResourceRequest, ResourceResponse
from ..sizing import UsageModel
from ..units import GIB, MIB
from .base import Resolver

__all__ = ["PredictiveResolver"]


class _Process:
    __slots__ = ("cpu_percent", "memory", "time")

    def __init__(self, min_runs: int) -> None:
        self.memory = UsageModel(min_runs=min_runs)
        self.time = UsageModel(min_runs=min_runs)
        self.cpu_percent = 0.0


# How a bulk load learns a run, per quantity: count it only, keep it, or keep and score it.
_COUNT, _KEEP, _SCORE = 0, 1, 2


def _modes(records: list[TaskRecord]) -> tuple[list[int], list[int]]:
    """Per record, how its memory (time) is learned so the models end as one by one.

    A model keeps the errors of its last ``errors`` sized runs and the last ``window``
    runs; scoring a run costs a prediction, and keeping it an insertion. A run whose error
    is pushed out is not scored; a run that leaves the window before the first kept error
    is scored is only counted. Doing all of it for 100,000 runs took most of a load.
    """
    probe = UsageModel()
    errors, window = probe.errors, probe.window
    modes = ([_COUNT] * len(records), [_COUNT] * len(records))
    for column in (0, 1):
        later: dict[str, tuple[int, int]] = {}  # runs after this one: all, sized
        earliest: dict[str, int] = {}  # "all later" of the earliest scored run
        ranks: list[tuple[int, str, int]] = []
        for index in range(len(records) - 1, -1, -1):
            record = records[index]
            used = record.peak_memory if column == 0 else record.realtime
            if not record.succeeded or not used:
                continue
            every, sized = later.get(record.process, (0, 0))
            if record.input_bytes is not None and sized < errors:
                earliest[record.process] = every
                modes[column][index] = _SCORE
            ranks.append((index, record.process, every))
            later[record.process] = (every + 1, sized + (record.input_bytes is not None))
        for index, process, every in ranks:
            if modes[column][index] != _SCORE and every <= earliest.get(process, -1) + window:
                modes[column][index] = _KEEP
    return modes


class PredictiveResolver(Resolver):
    """Sizes a task from a per-process online model of usage against input bytes."""

    name = "predictive"
    priority = 50

    @property
    def inline(self) -> bool:  # type: ignore[override]
        """Called without a thread when the history is local (a PostgreSQL one may wait)."""
        return self.history.local

    def __init__(
        self,
        history: History,
        *,
        fallback_margin: float = 1.2,
        ceiling: float = 1.2,
        escalation: float = 2.0,
        min_runs: int = 10,
        floor_memory: int = 64 * MIB,
        # a job's start-up on a busy node is not in a fast run's measured time; below a
        # few minutes a shorter limit wins nothing on a backfilling scheduler
        floor_time: int = 600,
        default_disk: int = 10 * GIB,
        apply_cpus: bool = False,
    ) -> None:
        if fallback_margin < 1 or ceiling < fallback_margin or escalation <= 1 or min_runs < 1:
            raise ValueError(
                "fallback_margin must be >= 1, ceiling >= fallback_margin, escalation > 1 "
                "and min_runs >= 1"
            )
        self.history = history
        self.fallback_margin = fallback_margin
        self.ceiling = ceiling
        self.escalation = escalation
        self.min_runs = min_runs
        self.floor_memory = floor_memory
        self.floor_time = floor_time
        self.default_disk = default_disk
        self.apply_cpus = apply_cpus
        self._models: dict[str, _Process] = {}
        self._cursor = 0
        # Hashes of the (run, task, attempt) keys learned: a replayed attempt (a weblog
        # stream sent twice, a record rewritten) comes back as a new row, once too many.
        self._learned: set[int] = set()
        self._lock = threading.Lock()
        # Read the history now: a first resolve that had to read 100,000 rows would
        # outlast the chain's timeout.
        self.refresh()

    def _learn(self, record: TaskRecord, memory: int = _SCORE, time: int = _SCORE) -> None:
        model = self._models.get(record.process)
        if model is None:
            model = self._models[record.process] = _Process(self.min_runs)
        if record.succeeded:
            if record.peak_memory:
                model.memory.learn(record.input_bytes, record.peak_memory,
                                   score=memory == _SCORE, keep=memory != _COUNT)  # fmt: skip
            if record.realtime:
                model.time.learn(record.input_bytes, record.realtime,
                                 score=time == _SCORE, keep=time != _COUNT)  # fmt: skip
            if record.cpu_percent:
                model.cpu_percent = max(model.cpu_percent, record.cpu_percent)
            return
        # A killed attempt tells only that its allocation was too small.
        if record.out_of_memory and record.memory:
            model.memory.fail(record.memory)
        if record.time_limit and record.time:
            model.time.fail(record.time)

    def refresh(self) -> None:
        """Learn every attempt the history gained since the last call."""
        with self._lock:
            while True:
                self._cursor, records = self.history.attempts(self._cursor)
                if not records:
                    return
                records = [r for r in records if self._first_time(r)]
                for record, memory, time in zip(records, *_modes(records), strict=True):
                    self._learn(record, memory, time)

    def _first_time(self, record: TaskRecord) -> bool:
        key = hash((record.run_id, record.task_id, record.attempt))
        if key in self._learned:
            return False
        self._learned.add(key)
        return True

    def _size(self, model: UsageModel, input_bytes: int | None, retry: bool) -> float | None:
        if model.runs == 0:
            if retry and model.failed:
                return model.failed * self.escalation
            return None
        predicted = model.predict(input_bytes)
        if predicted is None:
            size = model.largest * self.fallback_margin
        else:
            size = min(predicted, model.largest * self.ceiling)
        if retry:
            size = max(
                model.largest * self.ceiling, size * self.escalation, model.failed * self.escalation
            )
        return size

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """Effective resources from the process's model, or ``None`` for a process never seen."""
        if not request.process:
            return None
        self.refresh()
        model = self._models.get(request.process)
        if model is None:
            return None
        # A retry escalates what has been killed for this process, and only that.
        retry = request.attempt > 1
        memory = self._size(model.memory, request.input_bytes, retry and model.memory.failed > 0)
        time = self._size(model.time, request.input_bytes, retry and model.time.failed > 0)
        if memory is None and time is None:
            return None
        memory_bytes = request.memory if memory is None else math.ceil(memory)
        seconds = request.time if time is None else math.ceil(time)
        if retry and model.time.failed and request.time and seconds:
            # Never killed twice for time: a task that finishes within what was declared
            # gets that on its retry, however short its history runs.
            seconds = max(seconds, request.time)
        cpus = request.cpus
        if self.apply_cpus and model.cpu_percent:
            used = max(1, math.ceil(model.cpu_percent / 100))
            cpus = used if cpus is None else min(cpus, used)
        return ResourceResponse(
            cpus=cpus or 1,
            memory=max(memory_bytes or 0, self.floor_memory),
            disk=request.disk or self.default_disk,
            time=max(seconds or 0, self.floor_time),
        )
