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
- within them (and before ``min_runs``), with a net (memory), never further past the
  largest use than the plain maximum's record misses are expected to cost it:
  ``escalation / (runs + 1)`` of it (or ``resolution``);
- a retry after a kill: :mod:`seqera_core.sizing._retry`; what the model answered,
  scored against the plain maximum: :mod:`seqera_core.sizing._net`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence

from ._budget import Budget
from ._fit import LEVELS, Settings
from ._guard import Observed, tracked_at
from ._margin import MOST, RESOLUTION, t_quantile
from ._net import Net, Netted
from ._prior import Moments, Pool
from ._retry import KEPT_FAILURES, Retries
from ._window import Fit, Run, run

__all__ = ["KEPT_FAILURES", "Budget", "UsageModel"]


class UsageModel(Retries, Netted):
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
        self._window: deque[Run] = deque(maxlen=window)
        self._failed: deque[tuple[int | None, float]] = deque(maxlen=KEPT_FAILURES)
        self._fit: Fit | None = None
        self._stale = 0  # runs learned since the fit
        self._tracks: tuple[float | None] | None = None  # (floor,), cached until a run
        self.net = Net(alpha) if net else None
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
        kept = run(input_bytes, usage, weight, allocation, attempt)
        self._moments.add(kept.value)
        self._window.append(kept)
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
        self._window.append(run(input_bytes, usage, weight, allocation, attempt))
        self._stale += 1
        self._tracks = None

    @staticmethod
    def recalled(
        rows: Iterable[tuple[int | None, float, float, float | None, int]],
    ) -> list[Run]:
        """The runs :meth:`recall` would keep of ``rows`` (input bytes, usage, weight,
        allocation, attempt), for :meth:`recall_runs`: made once, they refill a process
        and a stratum that holds all of its runs alike (a window's runs are immutable)."""
        return [run(*row) for row in rows if row[1] > 0]

    def recall_runs(self, runs: Sequence[Run]) -> None:
        """:meth:`recall` of each run (oldest first) of :meth:`recalled`."""
        self._window.extend(runs)
        self._stale += len(runs)
        self._tracks = None

    def _fitted(self) -> Fit | None:
        if len(self._window) < self.min_runs:
            return None
        # One more run barely moves a fit of many: refit after a sixteenth of the window.
        if self._fit is None or self._stale > len(self._window) // 16:
            self._stale = 0
            penalty = self.retry_cost * self.budget.mean
            prior, jumps = (None, ()) if self.pool is None else self.pool.lent(self._moments)
            settings = Settings(self.levels, penalty, prior, self.resolution, jumps)
            self._fit = Fit(self._window, settings)
        return self._fit

    def own(self, input_bytes: int | None) -> float | None:
        """What the model (not the net) answers for a first attempt, or ``None`` before
        any run."""
        if not self._window:
            return None
        fit = self._fitted()
        if fit is None:
            return self._premium(self._few())
        bound = math.exp(fit.upper(input_bytes))
        return bound if fit.beyond(input_bytes) else self._premium(bound)

    def _premium(self, bound: float) -> float:
        """``bound``, but never more over the largest use than the plain maximum's misses
        are expected to cost it per task (for a model with a net: memory, not time).

        Within the inputs seen, a bound past the largest use insures only against a new
        record, and every task that fits under the maximum wastes the premium. The plain
        maximum misses the next run 1 time in ``runs + 1`` (the rank argument of
        :mod:`seqera_core.sizing._fit`: runs alike in any order), and a miss costs it the
        attempt lost and its retry's excess, about ``escalation`` x the largest use. A
        premium past ``escalation / (runs + 1)`` of the largest use is then expected to
        waste more than the maximum on that process, whatever the pipeline and however
        a retry is priced; below it the model's calibrated margin stands. Nor less than
        ``resolution`` past it: a run that used the same as the largest reads up to that
        much more (a record of the measurement, not of the use)."""
        if self.net is None:
            return bound
        premium = max(math.exp(self.resolution), 1 + self.escalation / (self.runs + 1))
        return min(bound, self.largest * premium)

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
