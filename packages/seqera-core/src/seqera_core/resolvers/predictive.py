"""The learning right-sizer: each task sized from its input bytes and its process's history.

Per process, a :class:`~seqera_core.sizing.UsageModel` for peak memory (each run weighted
by its run time, so what it minimises is waste in GB-hours) and one for run time learn
every finished attempt the history holds. They are fed what a run needs, not what the
history holds: at the start, the history's totals and one summary row per process (what
the pipeline's processes lend each other); on a process's first request, its all-time
summary and the windows its models keep, by an index (:meth:`History.window`); then only
attempts stored since (a resolve costs one indexed query). The state is exactly the one
learning every row in order would give (:mod:`seqera_core.history._tally`).

Where a process ran with several cpu counts or containers, the runs of the request's own
(cpus, container) answer once there are ``min_runs`` of them. Each model
picks its own margin per process from its leave-one-out errors and how many runs it has
(:mod:`seqera_core.sizing._fit`), calibrated to miss ``alpha`` of tasks, and falls back to
the per-process maximum where that wastes less. A first attempt never gets more than it
declared unless the history has seen it use more.

The time model prices a miss 10 x higher than the memory model (a kill loses the run, a
longer limit holds nothing). A retry after an out-of-memory (time-limit) kill escalates
from how wrong the model has been (:meth:`UsageModel.retry`); after a time-limit kill it
gets at least what was declared, so no task is killed twice for time when its
declaration suffices.

Where the model has wasted clearly more than the plain per-process maximum over a
process's recent tasks (scored on what it answered, :mod:`seqera_core.sizing._net`), the
process gets the maximum until the model does better again. Tools that size themselves
from their allocation get, unless ``shrink_self_sizing``: their declared memory on a first
attempt, never less, when the request says so (``self_sizing``, set by the engine adapters
from :func:`seqera_core.sizing.references_memory`); the largest allocation their history
was seen tracking at, and a retry at ``escalation`` x what failed, when their peaks
followed the allocations more than once (:func:`seqera_core.sizing.tracked_at`;
:attr:`PredictiveResolver.flagged` names them). Cpus are left as declared unless
``apply_cpus``: then the most cores ever kept busy.
"""

from __future__ import annotations

import math
import threading

from ..history import History, Summary, TaskRecord
from ..models import ResourceRequest, ResourceResponse
from ..sizing import KEPT_FAILURES, Budget, Pool, UsageModel
from ..units import GIB, MIB
from .base import Resolver

__all__ = ["PredictiveResolver"]

_Key = str | tuple[str, float | None, str | None]

# A time-limit kill throws away the whole run (and its retry gets the declared limit),
# while a limit longer than needed holds no resource, only some backfill priority: a miss
# of the time model is priced this many times a memory miss.
_TIME_MISS = 10.0


class _Recalled:
    """A process's (or stratum's) windows as its models keep them, made once: a stratum
    that holds every run of its process is refilled from its process's."""

    __slots__ = ("memory", "out_of_memory", "time", "time_limit")

    def __init__(self, windows: dict[str, list[TaskRecord]]) -> None:
        self.memory = UsageModel.recalled(
            (r.input_bytes, r.peak_memory or 0, r.realtime or 1.0, r.memory, r.attempt)
            for r in windows["memory"]
        )
        self.time = UsageModel.recalled(
            (r.input_bytes, r.realtime or 0, 1.0, r.time, r.attempt) for r in windows["time"]
        )
        self.out_of_memory = windows["out_of_memory"]
        self.time_limit = windows["time_limit"]


class _Process:
    __slots__ = ("cpu_percent", "memory", "time")

    def __init__(
        self,
        budgets: tuple[Budget, Budget],
        pools: tuple[Pool, Pool],
        options: dict[str, float],
        lends: bool,
        floor: float,
    ) -> None:
        self.memory = UsageModel(budget=budgets[0], pool=pools[0], lends=lends, floor=floor,
                                 **options)  # type: ignore[arg-type]  # fmt: skip
        timing = {**options, "retry_cost": options["retry_cost"] * _TIME_MISS}
        # the net compares memory waste; a time limit longer than needed holds nothing
        self.time = UsageModel(budget=budgets[1], pool=pools[1], lends=lends, net=False,
                               **timing)  # type: ignore[arg-type]  # fmt: skip
        self.cpu_percent = 0.0


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
        # the settings leave-one-pipeline-out chooses on the three traces together
        # (`seqera-sidecar evaluate --leave-one-out`; lopo.GRID): the least waste with
        # no run over 1 % retried or wasting more than the per-process maximum
        alpha: float = 0.02,
        retry_cost: float = 3.0,
        window: int = 200,
        min_runs: int = 5,
        fallback_margin: float = 1.2,
        escalation: float = 2.0,
        resolution: float = 0.02,
        floor_memory: int = 64 * MIB,
        # a job's start-up on a busy node is not in a fast run's measured time; below a
        # few minutes a shorter limit wins nothing on a backfilling scheduler
        floor_time: int = 600,
        default_disk: int = 10 * GIB,
        apply_cpus: bool = False,
        shrink_self_sizing: bool = False,
        # False: learn the history as it was when the resolver was made and when each
        # process was first asked for, never what is stored after (a report's advice:
        # one state throughout, and no read of new attempts per task it sizes)
        follow: bool = True,
    ) -> None:
        self._options = {"alpha": alpha, "retry_cost": retry_cost, "window": window,
                         "min_runs": min_runs, "fallback_margin": fallback_margin,
                         "escalation": escalation, "resolution": resolution}  # fmt: skip
        # A retry is priced at what a typical task of the whole history uses.
        self._budgets = (Budget(), Budget())
        # What the processes of the history show of dispersion, lent to those with few runs
        self._pools = (Pool(), Pool())
        UsageModel(**self._options)  # type: ignore[arg-type]  # refuses bad settings now
        self.history = history
        self.min_runs = min_runs
        self.floor_memory = floor_memory
        self.floor_time = floor_time
        self.default_disk = default_disk
        self.apply_cpus = apply_cpus
        self.shrink_self_sizing = shrink_self_sizing
        self.follow = follow
        self._models: dict[_Key, _Process] = {}
        # Per process: the last attempt number its models hold, and whether its windows
        # and strata are loaded (a process first seen after the start is learned whole).
        self._through: dict[str, int] = {}
        self._loaded: set[str] = set()
        # Processes whose history showed peaks that follow allocations, at any resolve.
        self.flagged: set[str] = set()
        self._lock = threading.Lock()
        # The totals and every process's summary: the pool of what processes lend each
        # other (in the order they first came, as learning row by row makes it) and the
        # budget. No attempt is read until a process is asked for.
        totals, summaries = history.summaries()
        self._cursor = totals.last_seq
        self._budgets[0].runs, self._budgets[0].total = totals.memory_runs, totals.memory_total
        self._budgets[1].runs, self._budgets[1].total = totals.time_runs, totals.time_total
        for summary in summaries:
            self._resume(self._model(summary.process), summary)
            self._through[summary.process] = summary.last_seq

    def _model(self, key: _Key) -> _Process:
        model = self._models.get(key)
        if model is None:
            # a (cpus, container) stratum borrows, but its runs are its process's: lent once
            lends = isinstance(key, str)
            model = self._models[key] = _Process(self._budgets, self._pools, self._options, lends,
                                                 self.floor_memory)  # fmt: skip
        return model

    @staticmethod
    def _resume(model: _Process, summary: Summary) -> None:
        for usage, tally in ((model.memory, summary.memory), (model.time, summary.time)):
            usage.resume(tally.runs, tally.largest,
                         (tally.runs, tally.mean, tally.m2, tally.top, tally.second))  # fmt: skip
        model.cpu_percent = max(0.0, summary.cpu_percent or 0.0)

    def _load(self, process: str) -> None:
        """A process's summaries (its own and its strata's) and the windows its models keep,
        each read by an index up to the attempt its summary was read at. A stratum that
        holds every attempt of its process (one cpus count and one container, the usual
        case) has the process's own windows: they are read once."""
        _, summaries = self.history.summaries(process)
        window = int(self._options["window"])
        limits = {"memory": window, "time": window, "out_of_memory": KEPT_FAILURES,
                  "time_limit": KEPT_FAILURES}  # fmt: skip
        total = next(s for s in summaries if s.whole)
        read = _Recalled(self.history.windows(total, total.last_seq, limits))
        for summary in summaries:
            key: _Key = process if summary.whole else (process, summary.cpus, summary.container)
            model = self._model(key)
            self._resume(model, summary)
            alike = summary.attempts == total.attempts and summary.last_seq == total.last_seq
            self._refill(model, read if alike else _Recalled(self.history.windows(
                summary, summary.last_seq, limits)))  # fmt: skip
            if summary.whole:
                self._through[process] = summary.last_seq
        self._loaded.add(process)
        # Fit now, as a first request would: a (cpus, container) stratum that is all of
        # its process is never asked.
        whole = self._models[process]
        for key, model in self._models.items():
            if (key == process or (isinstance(key, tuple) and key[0] == process)) and (
                model is whole or model.memory.runs < whole.memory.runs
            ):
                model.memory.upper(None), model.time.upper(None)

    @staticmethod
    def _refill(model: _Process, windows: _Recalled) -> None:
        """The windows of one process or stratum, as learning its runs in order left them."""
        model.memory.recall_runs(windows.memory)
        model.time.recall_runs(windows.time)
        for r in windows.out_of_memory:
            assert r.memory is not None
            model.memory.fail(r.input_bytes, r.memory)
        for r in windows.time_limit:
            assert r.time is not None
            model.time.fail(r.input_bytes, r.time)

    def _learn(self, seq: int, record: TaskRecord) -> None:
        if record.succeeded and record.peak_memory:
            self._budgets[0].add(record.peak_memory, record.realtime or 1.0)
        if record.succeeded and record.realtime:
            self._budgets[1].add(record.realtime)
        process = record.process
        if seq <= self._through.get(process, 0):
            return  # loaded after the cursor passed it: in its summary already
        if process not in self._models:
            self._loaded.add(process)  # first seen now: every attempt of it comes here
        self._through[process] = seq
        models = [self._model(process)]
        if process in self._loaded:  # else its strata are read when it is loaded
            models.append(self._model((process, record.cpus, record.container)))
        x = record.input_bytes
        for model in models:
            if record.succeeded:
                if record.peak_memory:
                    model.memory.learn(x, record.peak_memory, weight=record.realtime or 1.0,
                                       allocation=record.memory,
                                       attempt=record.attempt)  # fmt: skip
                if record.realtime:
                    model.time.learn(x, record.realtime, allocation=record.time,
                                     attempt=record.attempt)  # fmt: skip
                if record.cpu_percent:
                    model.cpu_percent = max(model.cpu_percent, record.cpu_percent)
                continue
            self._failed(model, record)

    @staticmethod
    def _failed(model: _Process, record: TaskRecord) -> None:
        # A killed attempt tells only that its allocation was too small.
        if record.out_of_memory and record.memory:
            model.memory.fail(record.input_bytes, record.memory)
        if record.time_limit and record.time:
            model.time.fail(record.input_bytes, record.time)

    def refresh(self) -> None:
        """Learn every attempt the history gained since the last call. A replayed attempt
        (a weblog stream sent twice, a record rewritten) was learned when it first came."""
        with self._lock:
            while True:
                fed = self.history.feed(self._cursor)
                if not fed:
                    return
                for item in fed:
                    self._cursor = item.seq
                    if not item.replay:
                        self._learn(item.seq, item.record)

    def note_failure(self, record: TaskRecord) -> None:
        """Learn a killed attempt the history does not hold yet, without storing it.

        An engine may ask for a retry before the attempt that failed reaches the history
        (Nextflow submits the retry in ``TaskProcessor.finalizeTask`` and only then tells
        its observers, the weblog among them); without this the retry would be sized as
        the attempt that was just killed. When the attempt arrives it is learned again,
        which changes nothing: a kill is a lower bound, and the same bound twice is one.
        """
        if record.succeeded:
            raise ValueError("note_failure takes a failed attempt")
        with self._lock:
            process = record.process
            if process in self._models and process not in self._loaded:
                self._load(process)  # loading later would start its kills afresh
            if process not in self._models:
                self._loaded.add(process)  # first seen now: every attempt of it comes here
            for key in (process, (process, record.cpus, record.container)):
                self._failed(self._model(key), record)

    def _pick(self, request: ResourceRequest) -> _Process | None:
        assert request.process
        whole = self._models.get(request.process)
        if whole is None:
            return None  # no attempt of it as of the last refresh
        if request.process not in self._loaded:
            self._load(request.process)
        own = self._models.get((request.process, request.cpus, request.container))
        # The runs of the request's own cpus and container, once they are enough to
        # calibrate on and are not simply all of the process's runs.
        if own is not None and self.min_runs <= own.memory.runs < whole.memory.runs:
            return own
        return whole

    @staticmethod
    def _capped(model: UsageModel, size: float | None, declared: int | None) -> float | None:
        if size is not None and declared and model.largest <= declared:
            # No more than declared unless this process has been seen to use more.
            size = min(size, declared)
        return size

    def _first(self, model: UsageModel, input_bytes: int | None,
               declared: int | None) -> float | None:  # fmt: skip
        size = self._capped(model, model.upper(input_bytes), declared)
        if model.net is not None:
            # what the model would have given, scored against the maximum when it ends
            own = size if not model.net.behind else self._capped(
                model, model.own(input_bytes), declared)  # fmt: skip
            if own is not None:
                model.answered(input_bytes, max(own, self.floor_memory))
        return size

    def _memory(self, model: UsageModel, request: ResourceRequest) -> float | None:
        declared, x = request.memory, request.input_bytes
        failed = model.failed_at(x) if request.attempt > 1 else 0.0
        # What it sizes itself from, never less: its declared size when its command says
        # so; the largest allocation its history was seen following when that says so.
        floor = 0.0
        if not self.shrink_self_sizing:
            if request.self_sizing and declared is not None:
                floor = declared
            elif (tracked := model.tracked_at) is not None:
                assert request.process
                self.flagged.add(request.process)
                floor = tracked
        if failed:
            if floor and not request.self_sizing:
                # the peaks its history holds followed what it was given: retried as an
                # engine retries (escalation x what failed), not from those peaks
                return max(failed * model.escalation, floor)
            return max(model.retry(x, failed), floor)
        if floor:
            # its peaks followed what it was given: they say nothing of what it needs
            return floor
        return self._first(model, x, declared)

    def _time(self, model: UsageModel, request: ResourceRequest) -> float | None:
        declared, x = request.time, request.input_bytes
        failed = model.failed_at(x) if request.attempt > 1 else 0.0
        if failed:
            # Never killed twice for time: a task that finishes within what was declared
            # gets that on its retry, however short its history runs; without a
            # declaration, escalation^2 x the limit it was killed at (a second kill loses
            # all the first one did, and more).
            return max(model.retry(x, failed), declared or failed * model.escalation**2)
        return self._first(model, x, declared)

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """Effective resources from the process's model, or ``None`` for a process never seen."""
        if not request.process:
            return None
        if self.follow:
            self.refresh()
        with self._lock:  # a fit is cached in the model: one thread at a time
            model = self._pick(request)
            if model is None:
                return None
            memory = self._memory(model.memory, request)
            seconds = self._time(model.time, request)
            cpu_percent = model.cpu_percent
        if memory is None and seconds is None:
            return None
        cpus = request.cpus
        if self.apply_cpus and cpu_percent:
            used = max(1, math.ceil(cpu_percent / 100))
            cpus = used if cpus is None else min(cpus, used)
        return ResourceResponse(
            cpus=cpus or 1,
            memory=max(math.ceil(memory or request.memory or 0), self.floor_memory),
            disk=request.disk or self.default_disk,
            time=max(math.ceil(seconds or request.time or 0), self.floor_time),
        )
