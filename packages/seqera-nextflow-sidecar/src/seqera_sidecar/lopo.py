"""Leave one pipeline out: each trace scored with the right-sizer's settings chosen on the
*other* traces only (:data:`GRID`), so a result says how it does on a pipeline it was not
tuned on (the issue's protocol for pipelines this project does not have).

The choice puts the goals first (fewest runs with more than 1 % retried or more waste
than the per-process maximum), then the least waste relative to the maximum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from attrs import frozen

from seqera_core.history import History, TaskRecord
from seqera_core.resolvers import PredictiveResolver, Resolver

from .evaluate import Build, Sample, Score, TimeScore, evaluate, evaluate_time

__all__ = ["GRID", "Held", "leave_one_out"]

T = TypeVar("T")
R = TypeVar("R")

# The right-sizer's settings a leave-one-out run chooses from: what a retry is worth (in
# typical tasks' use), the highest miss rate a process may be sized at, and the least
# margin over any prediction (how far apart two runs that used "the same" are measured).
GRID: tuple[dict[str, float], ...] = tuple(
    {"retry_cost": cost, "alpha": alpha, "resolution": resolution}
    for cost in (3.0, 10.0, 30.0)
    for alpha in (0.02, 0.05)
    for resolution in (0.005, 0.02)
)


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
    sample: Sample | None = None,
) -> list[Held]:
    """Each trace scored, seed by seed, with the settings of ``grid`` that did best on
    the other traces (with one trace alone, on itself: say so when reporting)."""
    names = sorted(traces)
    runs = [(i, t, s) for i in range(len(grid)) for t in names for s in seeds]
    builds = [_Settings(settings) for settings in grid]
    work = [(traces[t], s, builds[i], sample) for i, t, s in runs]
    with ProcessPoolExecutor(jobs) if jobs > 1 else _Inline() as pool:
        done = list(pool.map(_evaluate, work))
        maxima = dict(zip([(t, s) for t in names for s in seeds],
                          pool.map(_evaluate, [(traces[t], s, "max", sample) for t in names
                                               for s in seeds]), strict=True))  # fmt: skip
        scores = dict(zip(runs, done, strict=True))
        held: list[Held] = []
        chosen = {t: _choose(scores, maxima, [o for o in names if o != t] or [t], seeds,
                             len(grid)) for t in names}  # fmt: skip
        times = list(
            pool.map(
                _evaluate_time,
                [(traces[t], s, builds[chosen[t]], sample) for t in names for s in seeds],
            )
        )
    for (t, s), time in zip([(t, s) for t in names for s in seeds], times, strict=True):
        index = chosen[t]
        held.append(Held(t, s, builds[index].name, maxima[t, s], scores[index, t, s], time))
    return held


_Work = tuple[Sequence[TaskRecord], int, str | Build, Sample | None]


def _evaluate(work: _Work) -> Score:
    return evaluate(*work)


def _evaluate_time(work: _Work) -> TimeScore:
    return evaluate_time(*work)


class _Inline:
    """The executor's ``map`` in this process (``--jobs 1``)."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def map(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [function(item) for item in items]
