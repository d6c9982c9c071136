"""An online model of one quantity (peak memory, run time) of one process against its input.

It keeps the last ``window`` successful runs (input size, use, weight, allocation) and the
all-time count and largest use; learning a run is O(1), so a history of 100,000 attempts
loads in a fraction of a second. When asked after new runs (a sixteenth of the window
since the last fit), it fits the candidates of :mod:`seqera_core.sizing._fit` to the
window, each at the miss rate (at most ``alpha``) where it costs least, a miss priced at
``retry_cost`` x what a typical task of the whole history uses (:class:`Budget`), and
keeps the cheapest:

- with no run it has no opinion; with fewer than ``min_runs``, the Student-t bound of
  its log-mean at ``alpha`` with the variance its pipeline's processes lend it
  (:mod:`seqera_core.sizing._prior`: as much as they are alike), never below its largest
  use; without a pipeline to borrow from (or with almost nothing to go by: a prior of
  less than one degree of freedom and one run), the largest use x ``fallback_margin``;
- within the inputs seen, never more than the calibrated per-process maximum; above
  them, at least the largest use seen (the plain maximum: the calibrated one's margin
  was priced on the inputs seen); below them, at least the nearest inputs' bound;
- a retry after a kill at ``failed`` gets the smallest of: the chosen candidate at the
  least miss rate (its error distribution's far tail), the calibrated maximum, the
  largest use seen, that exceeds ``failed`` by 5 % or more and by what the model's errors
  say a miss overshoots (the scale of their upper tail x ln(1/``alpha``): a second miss
  at most ``alpha`` of the time), and never more than
  ``escalation`` x the larger of ``failed`` and the largest use; past all of them (a
  use never seen), the failed allocation grown by the process's own spread (at least
  10 %; ``escalation`` before any run). A miss thus escalates from how wrong the model
  has been, not by a constant factor of the allocation that failed.
"""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

from ._fit import LEVELS, Candidate, Settings, fit_candidates
from ._guard import Observed, tracked_at
from ._margin import MOST, RESOLUTION, t_quantile, tail_scale
from ._net import Net, cost
from ._prior import Moments, Pool

__all__ = ["KEPT_FAILURES", "Budget", "UsageModel"]

# Kills remembered per model: the latest are the ones a retry asks about.
KEPT_FAILURES = 64

# A retry's allocation exceeds the one that failed by at least this much, and growing
# past everything seen by at least the second.
_RETRY_STEP = 1.05
_MIN_GROWTH = 1.1
# The share of a pipeline's record gaps a retry past every use seen covers.
_RECORDS = 0.9
# An input this far outside the sizes seen is not trusted to the candidate alone.
_OUTSIDE = math.log(1.05)
# Answers kept for the net until their tasks finish.
_ANSWERS = 4096
# A window's last runs the net scores before the first answer: enough to judge on, at a
# few refits (a sixteenth of the window each), so a process's first answer costs what
# its window holds, not its history.
_REHEARSED = 64
_LEARNT = 10


class Budget:
    """What a typical task uses (weight x use), over every process of a history: the scale
    at which a retry is priced, so retries go where they save the most waste."""

    __slots__ = ("runs", "total")

    def __init__(self) -> None:
        self.runs = 0
        self.total = 0.0

    def add(self, usage: float, weight: float = 1.0) -> None:
        """Count one successful run."""
        self.runs += 1
        self.total += usage * weight

    @property
    def mean(self) -> float:
        """The mean weight x use of a run (0 before any)."""
        return self.total / self.runs if self.runs else 0.0


class _Run(NamedTuple):
    input_bytes: int | None
    usage: float
    value: float  # log of the use
    weight: float
    allocation: float | None
    first: bool  # a first attempt (the guard reads no retry as evidence)


def _key(input_bytes: int) -> float:
    return math.log(max(input_bytes, 1))


def _best(candidates: list[Candidate], *kinds: str) -> Candidate:
    return next(c for c in candidates if c.kind in kinds and c.local is None)


class _Fit:
    """The candidates of one window: over its runs with an input size, and over all."""

    __slots__ = ("best_all", "best_sized", "high", "low", "neighbours", "quantile", "spread",
                 "tail")  # fmt: skip

    def __init__(self, runs: deque[_Run], settings: Settings) -> None:
        values = [r.value for r in runs]
        mean = sum(values) / len(values)
        self.spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        # how far past a high use the next higher one lands: the scale of the uses' own
        # upper tail (runs far below the top, a tiny input, play no part in it)
        self.tail = tail_scale(sorted(values))
        sized = sorted((_key(r.input_bytes), r.value, r.weight) for r in runs if r.input_bytes)
        self.best_sized: Candidate | None = None
        self.neighbours: Candidate | None = None
        self.low = self.high = 0.0
        if len(sized) >= 6:
            keys = [k for k, _, _ in sized]
            candidates = fit_candidates(
                keys, [v for _, v, _ in sized], [w for _, _, w in sized], settings
            )
            self.best_sized = candidates[0]
            self.low, self.high = keys[0], keys[-1]
            self.quantile = _best(candidates, "quantile")
            self.neighbours = next((c for c in candidates if c.kind == "median"
                                    and c.local is None), None)  # fmt: skip
        if len(sized) < len(runs) or self.best_sized is None:
            candidates = fit_candidates(None, values, [r.weight for r in runs], settings)
            self.quantile = _best(candidates, "quantile")
        # A request without an input size: the best of the candidates that need none.
        self.best_all = _best(candidates, "quantile", "mean")

    def upper(self, input_bytes: int | None) -> float:
        """The calibrated log allocation for a first attempt."""
        best = self.best_sized
        if input_bytes is None or best is None:
            return self.best_all.upper(None)
        key = _key(input_bytes)
        # Where the per-process maximum (calibrated) is less, it is the better bound.
        bound = min(best.upper(key), self.quantile.upper(None))
        if key > self.high + _OUTSIDE:
            # never below the largest use seen (what the plain maximum gives); the
            # calibrated maximum's margin is priced for the inputs seen, not past them
            bound = max(bound, self.quantile.intercept + self.quantile.resolution)
        elif key < self.low - _OUTSIDE and self.neighbours is not None:
            bound = max(bound, self.neighbours.upper(key))
        return bound


class UsageModel:
    """Learns ``usage`` against ``input_bytes`` online; bounds it at a self-chosen margin."""

    def __init__(
        self,
        *,
        window: int = 200,
        alpha: float = 0.05,
        retry_cost: float = 10.0,
        budget: Budget | None = None,
        min_runs: int = 5,
        fallback_margin: float = 1.2,
        escalation: float = 2.0,
        resolution: float = RESOLUTION,
        pool: Pool | None = None,
        lends: bool = True,
        net: bool = True,
        floor: float = 0.0,
    ) -> None:
        """``resolution``: the least log margin over a prediction (two runs that used
        "the same" differ by about this much); ``pool``: the pipeline's processes, whose
        dispersion this one borrows while it has few runs, and (``lends``) adds its own to;
        ``net``: fall back to the per-process maximum where the model has done worse
        (:mod:`seqera_core.sizing._net`), both answers raised to ``floor`` (what the
        caller gives a task at least) when they are compared."""
        if (not 0 < alpha < 0.5 or retry_cost < 0 or min_runs < 3 or fallback_margin < 1
                or escalation <= 1 or not 0 <= resolution <= 1):  # fmt: skip
            raise ValueError(
                "alpha must be in (0, 0.5), retry_cost >= 0, min_runs >= 3, "
                "fallback_margin >= 1, escalation > 1 and resolution in [0, 1]"
            )
        self.alpha = alpha
        # the miss rates a window may choose, from the least
        self.levels = tuple(a for a in LEVELS if a <= alpha) or (alpha,)
        self.retry_cost = retry_cost
        self._own_budget = budget is None
        self.budget = Budget() if budget is None else budget
        self.min_runs = min_runs
        self.fallback_margin = fallback_margin
        self.escalation = escalation
        self.resolution = resolution
        self.runs = 0
        self.largest = 0.0  # over every run ever learned, not only the window
        self._window: deque[_Run] = deque(maxlen=window)
        self._failed: deque[tuple[int | None, float]] = deque(maxlen=KEPT_FAILURES)
        self._fit: _Fit | None = None
        self._stale = 0  # runs learned since the fit
        self._tracks: tuple[float | None] | None = None  # (floor,), cached until a run
        self.net = Net() if net else None
        self._rehearsed = False  # the net has scored the window (see _rehearse)
        # what the model answered for the tasks (by input size) not finished yet
        self._answers: dict[int | None, float] = {}
        self.floor = floor
        self.pool = pool
        # the all-time moments of log use: what this process lends its pipeline
        self._moments = pool.member() if pool is not None and lends else Moments()

    def learn(
        self,
        input_bytes: int | None,
        usage: float,
        *,
        weight: float = 1.0,
        allocation: float | None = None,
        attempt: int = 1,
    ) -> None:
        """Learn one successful run; ``weight`` scales what over-allocating it wastes."""
        if usage <= 0:
            return
        if self.net is not None and self.largest > 0:
            self._score(input_bytes, usage, weight)
        if attempt > 1 or usage > self.largest:
            # A run past what it was first given, or past every use: news the next task
            # must not wait a sixteenth of the window for (its neighbour may be alike).
            self._fit = None
        self.runs += 1
        self.largest = max(self.largest, usage)
        if self._own_budget:
            self.budget.add(usage, weight)
        value = math.log(usage)
        self._moments.add(value)
        self._window.append(_Run(input_bytes, usage, value, weight, allocation, attempt <= 1))
        self._stale += 1
        self._tracks = None

    def resume(
        self, runs: int, largest: float, moments: tuple[int, float, float, float, float]
    ) -> None:
        """Start again from a stored all-time state (``runs``, ``largest`` and the log
        moments ``(n, mean, m2, top, second)``, the history's summary), with an empty
        window: :meth:`recall` then refills it, so loading a process reads its window, not
        every run it ever had. The moments are updated in place: the pool keeps them."""
        self.runs, self.largest = runs, largest
        m = self._moments
        m.n, m.mean, m.m2, m.top, m.second = moments
        self._window.clear()
        self._failed.clear()
        self._fit, self._stale, self._tracks = None, 0, None
        self._rehearsed = False

    def recall(
        self,
        input_bytes: int | None,
        usage: float,
        *,
        weight: float = 1.0,
        allocation: float | None = None,
        attempt: int = 1,
    ) -> None:
        """Put one run back into the window after :meth:`resume` (it is in the all-time
        state already): :meth:`learn` without counting it again (nor scoring it: the net
        scores only what it answered in this process)."""
        if usage <= 0:
            return
        self._window.append(
            _Run(input_bytes, usage, math.log(usage), weight, allocation, attempt <= 1)
        )
        self._stale += 1
        self._tracks = None

    def _rehearse(self) -> None:
        """Score the window's last ``_REHEARSED`` runs for the net, once, before the first
        answer: what the model would have answered from the runs before each, against the
        largest use before it. So the net judges from the first task it sizes, on the
        process's own finished runs, not only on what it answered since, and the same
        whether the window came from the history's index or from learning every row.

        The window is refilled in order as it goes (the same runs, the same state); the
        largest use before it is the largest of the all-time two (the summary's) that no
        run of it accounts for, and when both are in it the window's own runs stand in
        for it (the maximum then looks, if anything, leaner)."""
        self._rehearsed = True
        runs = list(self._window)
        if self.net is None or len(runs) < 2:
            return
        largest, stale = self.largest, self._stale
        seen = self._before([r.usage for r in runs])
        # Only answers from ``_LEARNT`` runs or more: the first few (a fallback margin on a
        # handful, a maximum missed by every early record) say nothing of how either
        # does on a process it has learned.
        before = self.runs - len(runs)
        start = max(1, len(runs) - _REHEARSED, _LEARNT - before)
        self._window.clear()
        try:
            for i, run in enumerate(runs):
                if i >= start and seen > 0:
                    self.largest = seen  # what the model and the maximum knew then
                    self._fit = None if i == start else self._fit
                    own = self.own(run.input_bytes)
                    if own is not None:
                        self._score(run.input_bytes, run.usage, run.weight, own)
                self._window.append(run)
                self._stale += 1
                seen = max(seen, run.usage)
        finally:
            self.largest, self._stale = largest, stale
            self._fit, self._tracks = None, None  # fitted on part of it: fit the whole

    def _before(self, usages: list[float]) -> float:
        """The largest use before a window of ``usages`` (0 when unknown: see
        :meth:`recall_window`)."""
        if self.runs <= len(usages):
            return 0.0
        inside = sorted((math.log(u) for u in usages), reverse=True)
        for value in (self._moments.top, self._moments.second):
            if math.isinf(value):
                return 0.0
            if inside and inside[0] == value:  # this one is in the window
                inside.pop(0)
                continue
            # the all-time largest is kept exactly; the next only as its log
            return self.largest if value == self._moments.top else math.exp(value)
        return 0.0

    def fail(self, input_bytes: int | None, allocation: float) -> None:
        """Record an attempt killed at ``allocation``: a lower bound, never a use."""
        self._failed.append((input_bytes, allocation))

    def failed_at(self, input_bytes: int | None) -> float:
        """The allocation a task of this input was last killed at (0 if none was).

        The input size stands for the task: its retries read the same files. A kill
        recorded without a size counts for any task, as does any kill for a task without
        one.
        """
        for x, given in reversed(self._failed):
            if input_bytes is None or x is None or x == input_bytes:
                return given
        return 0.0

    def _kills(self, input_bytes: int) -> int:
        """How many kills of a task of this input size are remembered."""
        return sum(1 for x, _ in self._failed if x == input_bytes)

    def _fitted(self) -> _Fit | None:
        if len(self._window) < self.min_runs:
            return None
        # One more run barely moves a fit of many: refit after a sixteenth of the window.
        if self._fit is None or self._stale > len(self._window) // 16:
            self._stale = 0
            penalty = self.retry_cost * self.budget.mean
            prior, jumps = (None, ()) if self.pool is None else self.pool.lent(self._moments)
            settings = Settings(self.levels, penalty, prior, self.resolution, jumps)
            self._fit = _Fit(self._window, settings)
        return self._fit

    def answered(self, input_bytes: int | None, size: float) -> None:
        """Note what the model (not the net) answered, as the caller gave it (capped,
        floored), for a first attempt of a task of this input size: the net scores that."""
        if self.net is None:
            return
        self._answers.pop(input_bytes, None)
        self._answers[input_bytes] = size
        if len(self._answers) > _ANSWERS:  # tasks that never finished: forget the oldest
            del self._answers[next(iter(self._answers))]

    def _score(
        self, input_bytes: int | None, usage: float, weight: float, own: float | None = None
    ) -> None:
        """Score the model (``own``, or what it answered for this input) and the plain
        maximum on a finished run, before learning it."""
        assert self.net is not None
        if own is None:
            own = self._answers.pop(input_bytes, None)
        if own is None:  # a task it was not asked about (read from the history, say)
            return
        largest, floor = max(self.largest, self.floor), self.floor
        self.net.score(
            cost(max(own, floor), usage, weight,
                 lambda failed: max(self.retry(input_bytes, failed), floor)),
            cost(largest, usage, weight, lambda failed: max(largest, 2 * failed)),
        )  # fmt: skip

    def own(self, input_bytes: int | None) -> float | None:
        """What the model (not the net) answers for a first attempt, or ``None`` before
        any run."""
        if not self._window:
            return None
        fit = self._fitted()
        if fit is None:
            return self._few()
        return math.exp(fit.upper(input_bytes))

    @property
    def tracked_at(self) -> float | None:
        """The least allocation this quantity keeps because it follows the allocation it
        is given, or ``None`` when it does not (see :mod:`seqera_core.sizing._guard`)."""
        if self._tracks is None:
            self._tracks = (tracked_at([Observed(r.input_bytes, r.usage, r.allocation, r.first)
                                        for r in self._window]),)  # fmt: skip
        return self._tracks[0]

    @property
    def tracks_allocation(self) -> bool:
        """Whether this quantity follows the allocation (see :attr:`tracked_at`)."""
        return self.tracked_at is not None

    def upper(self, input_bytes: int | None) -> float | None:
        """The allocation for a first attempt, or ``None`` before any run: the plain
        per-process maximum while the model has done worse (the net), else the model's."""
        if not self._window:
            return None
        if self.net is not None and not self._rehearsed:
            self._rehearse()
        if self.net is not None and self.net.behind:
            return self.largest
        return self.own(input_bytes)

    def _few(self) -> float:
        """Fewer runs than ``min_runs``: the t bound of the log-mean, the variance its
        pipeline lends it (see the module's rules)."""
        values = [r.value for r in self._window]
        n = len(values)
        if not n:
            raise ValueError("no run learned: no bound to give")
        prior = None if self.pool is None else self.pool.prior(self._moments)
        if prior is None:  # a t bound on 1-3 dof alone is boundless: no better than this
            return self.largest * self.fallback_margin
        mean = sum(values) / n
        variance = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
        variance, dof = prior.posterior(variance, float(n - 1))
        if dof < 1:  # a prior of almost no weight and one run: nothing to go by
            return self.largest * self.fallback_margin
        bound = mean + t_quantile(1 - self.alpha, dof) * math.sqrt(variance * (1 + 1 / n))
        # never past MOST over the largest use: a t bound on one degree of freedom is boundless
        bound = min(bound, math.log(self.largest) + MOST)
        return max(self.largest * math.exp(self.resolution), math.exp(bound))

    def _record(self, fit: _Fit) -> float:
        """How far past the largest use a new record lands (log), as far as this process
        and its pipeline have shown: its uses' own upper tail (exponential: its scale x
        ln(1/alpha)), its own gap between its two largest uses, and the gap that 9 in 10
        of its pipeline's processes' records stayed within (one wild process's jump is no
        measure of the others')."""
        gaps = () if self.pool is None else self.pool.lent(self._moments)[1]
        lent = gaps[min(len(gaps) - 1, int(_RECORDS * len(gaps)))] if gaps else 0.0
        return max(self.resolution, self._moments.gap, lent, fit.tail * -math.log(self.alpha))

    def retry(self, input_bytes: int | None, failed: float) -> float:
        """The allocation for a retry after a kill at ``failed`` (see the module's rules)."""
        fit = self._fitted()
        least = failed * _RETRY_STEP
        # Only kills so far (no run has finished): no use to bound from, only the step.
        rungs = [self._few()] if fit is None and self._window else []
        spread = 0.0
        if fit is not None:
            best = fit.best_sized if input_bytes is not None and fit.best_sized else fit.best_all
            key = None if input_bytes is None else _key(input_bytes)
            rungs += [
                math.exp(best.upper(key, safe=True)),
                math.exp(fit.quantile.upper(None)),
                self.largest,
            ]
            spread = fit.spread
            # The kill says this run's error passed the margin the failed allocation stood
            # for. Past a margin, the model's errors run on by its tail's scale (an
            # exponential tail forgets where it was passed): the allocation a second miss
            # passes at most ``alpha`` of the time is that scale x ln(1/alpha) higher.
            least = max(least, failed * math.exp(best.overshoot(key) * -math.log(self.alpha)))
            if failed >= self.largest:
                # Killed at or past every use seen: this run is a new record, whatever the
                # allocation stood for (the net's maximum, say), and a record passes the
                # one before by a record's gap, not by the model's errors.
                least = failed * max(_MIN_GROWTH, math.exp(self._record(fit)))
                rungs.append(least)
        # Never past ``escalation`` x what is known: a tail fitted to few errors can
        # promise any size.
        most = max(failed, self.largest) * self.escalation
        if input_bytes is not None and self._kills(input_bytes) > 1:
            # Killed again: this task is past what the model's errors and records said a
            # miss overshoots, so they are no guide to it; escalate as an engine does.
            least = max(least, failed * self.escalation)
        above = [rung for rung in rungs if rung >= least]
        if above:
            return min(min(above), most)
        # Nothing learned yet: no spread to go by, so the full step.
        growth = self.escalation if fit is None else (
            min(self.escalation, max(_MIN_GROWTH, math.exp(2 * spread))))  # fmt: skip
        return max(min(least, most), max(failed, self.largest) * growth)
