"""Replaying a Nextflow trace against a memory predictor: waste, MAQ and retries.

The protocol (issue 11): per process with at least 34 runs, a seeded random 30 % of its
tasks is history and the other 70 % arrive online, all processes interleaved in one
random order. A task given less than its peak (``rss``) fails, is charged its whole
allocation x run time, is recorded as an out-of-memory attempt and is retried with what
the predictor then answers; a task given enough is charged (allocation - peak) x run time
and is learned. GB = 10^9 bytes, hours from ``realtime``; MAQ = used / (used + wasted).

Time limits are replayed the same way, apart (`evaluate_time`): a task whose limit is
below its ``realtime`` is killed, loses the limit's hours, is recorded as a time-limit
attempt and is retried; memory plays no part there.

A trace records no input sizes: ``rchar`` (bytes the task read, inputs and index alike)
stands in for them (:mod:`.trace`). Several traces can be replayed at once, and
:func:`leave_one_out` scores each with the right-sizer's settings chosen on the *other*
traces only (:data:`GRID`), so a result says how it does on a pipeline it was not tuned on.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

import attrs
from attrs import frozen

from seqera_core.errors import UsageError
from seqera_core.history import History, TaskRecord, open_history
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import MaximumResolver, PredictiveResolver, Resolver

from .trace import read_trace

__all__ = [
    "GRID",
    "PREDICTORS",
    "Held",
    "Score",
    "TimeScore",
    "add_arguments",
    "command",
    "evaluate",
    "evaluate_time",
    "leave_one_out",
    "split",
]

T = TypeVar("T")
R = TypeVar("R")

MIN_RUNS = 34
HISTORY_SHARE = 0.3
MAX_ATTEMPTS = 20
_GBH = 1e9 * 3600

Build = Callable[[History], Resolver]

# A predictor is built over the history it may read; ``None`` means the trace's presets.
PREDICTORS: dict[str, Build | None] = {
    "preset": None,
    "max": lambda h: MaximumResolver(h, margin=1.0, escalation=2.0),
    "max-1.2": lambda h: MaximumResolver(h, margin=1.2, escalation=2.0),
    "predictive": lambda h: PredictiveResolver(h),
}

# The right-sizer's settings a leave-one-out run chooses from: what a retry is worth (in
# typical tasks' use) and the highest miss rate a process may be sized at.
GRID: tuple[dict[str, float], ...] = tuple(
    {"retry_cost": cost, "alpha": alpha} for cost in (3.0, 10.0, 30.0) for alpha in (0.02, 0.05)
)


@frozen
class Score:
    """One predictor on one trace: waste in GB-h, MAQ, and retries among online tasks."""

    predictor: str
    tasks: int
    used_gbh: float
    wasted_gbh: float
    retries: int
    by_process: dict[str, float] = attrs.field(factory=dict, eq=False)

    @property
    def maq(self) -> float:
        """Memory allocation quality: used / (used + wasted)."""
        total = self.used_gbh + self.wasted_gbh
        return self.used_gbh / total if total else 1.0

    @property
    def retry_share(self) -> float:
        """Retried attempts as a share of online tasks."""
        return self.retries / self.tasks if self.tasks else 0.0


@frozen
class TimeScore:
    """One predictor's time limits on one trace: how much shorter, and what kills cost."""

    predictor: str
    tasks: int
    undeclared: int  # online tasks the trace gives no limit (never at risk of one)
    declared_hours: float  # the trace's own limits of the others, first attempts
    limit_hours: float  # the limits the tasks finished under (those with one)
    run_hours: float
    kills: int  # attempts killed at their time limit
    killed_twice: int  # tasks killed more than once
    lost_hours: float  # run time thrown away by kills

    @property
    def kill_share(self) -> float:
        """Killed attempts as a share of online tasks."""
        return self.kills / self.tasks if self.tasks else 0.0


def split(records: Sequence[TaskRecord], seed: int) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """The protocol's (history, online) split: online tasks in one seeded random order."""
    rng = random.Random(seed)
    groups: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in records:
        if record.peak_memory and record.realtime:
            groups[record.process].append(record)
    past: list[TaskRecord] = []
    online: list[TaskRecord] = []
    for process in sorted(groups):
        tasks = groups[process]
        if len(tasks) < MIN_RUNS:
            continue
        rng.shuffle(tasks)
        cut = round(len(tasks) * HISTORY_SHARE)
        past += tasks[:cut]
        online += tasks[cut:]
    rng.shuffle(online)
    return past, online


def _name(predictor: str | Build) -> str:
    return predictor if isinstance(predictor, str) else getattr(predictor, "name", "custom")


def _request(task: TaskRecord, attempt: int) -> ResourceRequest:
    return ResourceRequest(
        cpus=task.cpus,
        memory=task.memory,
        time=task.time or None,
        process=task.process,
        attempt=attempt,
        input_bytes=task.input_bytes,
        container=task.container,
    )


def _replay(
    records: Sequence[TaskRecord], seed: int, predictor: str | Build
) -> tuple[list[TaskRecord], History, Resolver | None]:
    """The online tasks, and a history of the others with ``predictor`` over it."""
    build = PREDICTORS[predictor] if isinstance(predictor, str) else predictor
    past, online = split(records, seed)
    history = open_history(":memory:")
    history.record(past)
    return online, history, build(history) if build is not None else None


def evaluate(records: Sequence[TaskRecord], seed: int, predictor: str | Build) -> Score:
    """Replay ``records`` (one trace) with ``predictor`` (a name, or how to build one)."""
    online, history, resolver = _replay(records, seed, predictor)
    used = wasted = 0.0
    retries = 0
    by_process: dict[str, float] = defaultdict(float)
    for task in online:
        peak, seconds = task.peak_memory or 0, task.realtime or 0.0
        used += peak * seconds
        for attempt in range(1, MAX_ATTEMPTS + 1):
            declared = task.memory or peak
            if resolver is None:
                # nf-core's presets: memory * task.attempt
                allocation = declared * attempt
            else:
                answer = resolver.resolve(_request(task, attempt))
                allocation = declared if answer is None else answer.memory
            ok = allocation >= peak
            cost = (allocation - peak if ok else allocation) * seconds
            wasted += cost
            by_process[task.process] += cost / _GBH
            outcome = attrs.evolve(task, attempt=attempt, memory=allocation, succeeded=ok,
                                   out_of_memory=not ok)  # fmt: skip
            if not ok:
                outcome = attrs.evolve(outcome, peak_memory=None, realtime=None)
            history.record([outcome])
            if ok:
                break
            retries += 1
    history.close()
    name = _name(predictor)
    return Score(name, len(online), used / _GBH, wasted / _GBH, retries, dict(by_process))


def evaluate_time(records: Sequence[TaskRecord], seed: int, predictor: str | Build) -> TimeScore:
    """Replay the time limits of ``records`` (one trace) with ``predictor``, as for memory."""
    online, history, resolver = _replay(records, seed, predictor)
    declared_total = limits = runs = lost = 0.0
    kills = killed_twice = undeclared = 0
    for task in online:
        seconds = task.realtime or 0.0
        runs += seconds
        declared = task.time or math.inf
        declared_total += task.time or 0
        undeclared += not task.time
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if resolver is None:
                limit = declared * attempt  # nf-core's presets: time * task.attempt
            else:
                answer = resolver.resolve(_request(task, attempt))
                limit = declared if answer is None or answer.time is None else answer.time
            ok = limit >= seconds
            outcome = attrs.evolve(task, attempt=attempt, succeeded=ok, time_limit=not ok,
                                   time=None if math.isinf(limit) else int(limit))  # fmt: skip
            if not ok:
                outcome = attrs.evolve(outcome, peak_memory=None, realtime=None)
                lost += limit
                kills += 1
                killed_twice += attempt == 2
            history.record([outcome])
            if ok:
                limits += 0 if math.isinf(limit) else limit
                break
    history.close()
    return TimeScore(_name(predictor), len(online), undeclared, declared_total / 3600,
                     limits / 3600, runs / 3600, kills, killed_twice, lost / 3600)  # fmt: skip


class _Settings:
    """Builds the right-sizer with one of the :data:`GRID` settings (picklable, named)."""

    def __init__(self, settings: dict[str, float]) -> None:
        self.settings = settings
        self.name = "predictive(" + ", ".join(f"{k}={v:g}" for k, v in settings.items()) + ")"

    def __call__(self, history: History) -> Resolver:
        return PredictiveResolver(history, **self.settings)  # type: ignore[arg-type]


@frozen
class Held:
    """One trace and seed scored with the settings chosen on the other traces."""

    trace: str
    seed: int
    chosen: str
    maximum: Score
    score: Score
    time: TimeScore


def _feasible(ours: Score, maximum: Score) -> bool:
    return ours.retry_share <= 0.01 and ours.wasted_gbh < maximum.wasted_gbh


def _choose(
    scores: dict[tuple[int, str, int], Score],
    maxima: dict[tuple[str, int], Score],
    traces: Sequence[str],
    seeds: Sequence[int],
    settings: int,
) -> int:
    """The grid index that did best on ``traces``: most runs with fewer retries than 1 %
    and less waste than the maximum, then the least waste relative to the maximum."""

    def rank(index: int) -> tuple[int, float]:
        runs = [(scores[index, t, s], maxima[t, s]) for t in traces for s in seeds]
        failed = sum(not _feasible(ours, most) for ours, most in runs)
        relative = sum(ours.wasted_gbh / max(most.wasted_gbh, 1e-9) for ours, most in runs)
        return failed, relative / len(runs)

    return min(range(settings), key=rank)


def leave_one_out(
    traces: Mapping[str, Sequence[TaskRecord]],
    seeds: Sequence[int],
    *,
    jobs: int = 1,
    grid: Sequence[dict[str, float]] = GRID,
) -> list[Held]:
    """Each trace scored, seed by seed, with the settings of ``grid`` that did best on
    the other traces (with one trace alone, on itself: say so when reporting)."""
    names = sorted(traces)
    runs = [(i, t, s) for i in range(len(grid)) for t in names for s in seeds]
    builds = [_Settings(settings) for settings in grid]
    work = [(traces[t], s, builds[i]) for i, t, s in runs]
    with ProcessPoolExecutor(jobs) if jobs > 1 else _Inline() as pool:
        done = list(pool.map(_evaluate, work))
        maxima = dict(zip([(t, s) for t in names for s in seeds],
                          pool.map(_evaluate, [(traces[t], s, "max") for t in names
                                               for s in seeds]), strict=True))  # fmt: skip
        scores = dict(zip(runs, done, strict=True))
        held: list[Held] = []
        chosen = {t: _choose(scores, maxima, [o for o in names if o != t] or [t], seeds,
                             len(grid)) for t in names}  # fmt: skip
        times = list(
            pool.map(
                _evaluate_time, [(traces[t], s, builds[chosen[t]]) for t in names for s in seeds]
            )
        )
    for (t, s), time in zip([(t, s) for t in names for s in seeds], times, strict=True):
        index = chosen[t]
        held.append(Held(t, s, builds[index].name, maxima[t, s], scores[index, t, s], time))
    return held


def _evaluate(work: tuple[Sequence[TaskRecord], int, str | Build]) -> Score:
    return evaluate(*work)


def _evaluate_time(work: tuple[Sequence[TaskRecord], int, str | Build]) -> TimeScore:
    return evaluate_time(*work)


class _Inline:
    """The executor's ``map`` in this process (``--jobs 1``)."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def map(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [function(item) for item in items]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``evaluate`` command's arguments."""
    parser.add_argument("trace", nargs="+",
                        help="trace files written with trace.raw = true (.csv/.gz)")  # fmt: skip
    parser.add_argument("--seed", type=int, action="append",
                        help="repeat for several (default: 0)")  # fmt: skip
    parser.add_argument("--predictor", action="append", choices=list(PREDICTORS),
                        help="repeat for several (default: all)")  # fmt: skip
    parser.add_argument("--leave-one-out", action="store_true",
                        help="score each trace with the right-sizer settings chosen on the "
                        "others (needs two traces or more)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="replays run at once")


def command(args: argparse.Namespace) -> int:
    """Replay each trace (or leave each out, ``--leave-one-out``) and print the tables."""
    seeds = args.seed or [0]
    traces = {Path(path).name.split(".")[0]: read_trace(path) for path in args.trace}
    if len(traces) < len(args.trace):
        raise UsageError("two traces have the same file name: rename one")
    if args.leave_one_out:
        if len(traces) < 2:
            raise UsageError("--leave-one-out needs two traces or more")
        _print_held(leave_one_out(traces, seeds, jobs=max(1, args.jobs)))
        return 0
    names = args.predictor or list(PREDICTORS)
    for trace, records in traces.items():
        for seed in seeds:
            print(f"{trace} (seed {seed})")
            print("| predictor | online tasks | used GB-h | wasted GB-h | MAQ | retries |")
            print("|---|---|---|---|---|---|")
            for name in names:
                score = evaluate(records, seed, name)
                print(f"| {name} | {score.tasks} | {score.used_gbh:.2f} | "
                      f"{score.wasted_gbh:.2f} | {score.maq:.3f} | "
                      f"{_retries(score)} |")  # fmt: skip
            print("\nTime limits\n" + _TIME_HEAD)
            for name in names:
                print(_time_row(name, evaluate_time(records, seed, name)))
            print()
    return 0


_TIME_HEAD = ("| predictor | online tasks | none declared | declared h | limits h | run h | kills "
              "| killed twice | lost h |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip


def _retries(score: Score) -> str:
    return f"{score.retries} ({score.retry_share:.2%})"


def _time_row(name: str, time: TimeScore) -> str:
    return (f"| {name} | {time.tasks} | {time.undeclared} | {time.declared_hours:.1f} | "
            f"{time.limit_hours:.1f} | {time.run_hours:.1f} | {time.kills} "
            f"({time.kill_share:.2%}) | {time.killed_twice} | {time.lost_hours:.2f} |")  # fmt: skip


def _print_held(held: Sequence[Held]) -> None:
    print("Leave one pipeline out: each trace scored with the settings chosen on the others.")
    print("| trace | seed | settings (chosen on the others) | online tasks | max: wasted GB-h, "
          "MAQ, retries | right-sizer: wasted GB-h, MAQ, retries | less waste |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for h in held:
        most, ours = h.maximum, h.score
        less = "yes" if ours.wasted_gbh < most.wasted_gbh else "NO"
        print(f"| {h.trace} | {h.seed} | {h.chosen} | {ours.tasks} | {most.wasted_gbh:.2f}, "
              f"{most.maq:.3f}, {_retries(most)} | {ours.wasted_gbh:.2f}, {ours.maq:.3f}, "
              f"{_retries(ours)} | {less} |")  # fmt: skip
    print("\nTime limits (same settings)\n" + _TIME_HEAD.replace("predictor", "trace, seed"))
    for h in held:
        print(_time_row(f"{h.trace}, {h.seed}", h.time))
