"""Where :class:`~._backend.RouteBackend` sends each job, and what the run has learned of
each backend to say so.

For a job, every candidate's :class:`~._probe.Probe` says whether it can run it (its
limits, the queue named, a pinned rule, the submit host's files) and how busy it is; the
job's start there is estimated from that load and the jobs already sent and not seen to
end (:func:`~._policy.start_after`), its run time is its expected one (the history's
longest run of its process, else the longest seen in this run, else its declared time
limit, else ``runtime``; once a job of its process went to that backend and started at
once, what it took there from submission to its end seen, which counts what the run time
does not: an interpreter starting inside a cluster job, the scheduler's cycle, the poll),
and its cost the platform's hourly rates over that time. :func:`~._policy.choose` picks
by the objective.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import attrs

from ...models import ResourceRequest
from ...platforms import CostRates, Platform
from ..base import Backend, JobHandle, JobSpec, JobState, JobStatus
from ._policy import Choice, Option, Unroutable, choose, refusal, start_after
from ._probe import Probe

__all__ = ["Choosing"]


class Choosing(Backend):
    """The choosing half of :class:`~._backend.RouteBackend`: each job's verdicts and
    choice, and what sent and ended jobs teach (``_sent`` after a submission, ``_ended``
    when a poll sees a job end). ``RouteBackend.__init__`` sets the attributes below;
    they are read and changed under ``_lock``."""

    objective: str
    ceiling: float | None
    pin: dict[str, str]
    staged: bool
    runtime: float
    platform: Platform | None
    expected: Callable[[JobSpec], float | None] | None
    backends: dict[str, Backend]
    probes: dict[str, Probe]
    _clock: Callable[[], float]
    _lock: threading.RLock
    # per backend, the jobs sent there not yet seen to end: native id -> (cores,
    # expected seconds, sent at, native id), in the order sent
    _out: dict[str, dict[str, tuple[float, float, float, str]]]
    # (backend, native id) -> its process, and when it was sent if it was to start at once
    _process: dict[tuple[str, str], tuple[str, float | None]]
    # (backend, process) -> seconds from submission to its end seen, a running mean
    _took: dict[tuple[str, str], float]
    _longest: dict[str, float]  # a process's longest run seen in this run
    _statuses: dict[tuple[str, str], JobStatus]

    def runtime_of(self, spec: JobSpec) -> float:
        """Seconds the job is expected to run (the history, this run, its time limit)."""
        process = spec.request.process or ""
        for guess in (
            self.expected(spec) if self.expected is not None else None,
            self._longest.get(process),
            spec.request.time,
            self.runtime,
        ):
            if guess is not None and guess > 0:
                return float(guess)
        return self.runtime

    def explain(self, specs: Sequence[JobSpec]) -> list[Choice]:
        """Where each job would go now, and why (nothing is submitted).

        Raises:
            Unroutable: a job no backend can run; the message names each one's reason.
        """
        with self._lock:
            return self._choose(specs)

    def verdicts(self, spec: JobSpec) -> list[Option]:
        """Each backend's verdict on ``spec`` now (refused and why, or its estimate)."""
        with self._lock:
            return self._options(spec, {n: [] for n in self.backends})

    def _options(
        self, spec: JobSpec, extra: Mapping[str, Sequence[tuple[float, float, float, str]]]
    ) -> list[Option]:
        request = spec.request
        runtime = self.runtime_of(spec)
        pinned = self.pin.get(request.process or "")
        staged = self.staged or spec.staged is not None
        options = []
        for name, probe in self.probes.items():
            asked = self._asked_of(name, request)
            why = refusal(probe.limits(asked.queue), asked, staged=staged)
            if why is None and pinned is not None and name != pinned:
                why = f"rule {request.process} is pinned to {pinned}"
            if why is not None:
                options.append(Option(name, why))
                continue
            sent = [*self._out[name].values(), *extra[name]]
            start = start_after(probe.load(asked.queue, sent), request.cpus or 1)
            took = self._took.get((name, request.process or ""))
            # what a job of this process took there, start to seen end, once it did
            there = runtime if took is None else max(0.1, took - probe.overhead)
            cost = self._rates(name, request.queue).hourly(
                request.cpus or 1, request.memory or 0,
                request.accelerator.count if request.accelerator else 0,
            ) * there / 3600  # fmt: skip
            options.append(Option(name, None, start, there, cost))
        return options

    def _asked_of(self, name: str, request: ResourceRequest) -> ResourceRequest:
        """The request as backend ``name`` judges it. The platform gives every job one of
        its scheduler's queues (the cheapest that fits, when none was named): that name
        says which queue the job gets there, not that it may run nowhere else, so another
        backend judges the job without it; a rule kept on the cluster is pinned there.
        A queue the platform does not list binds every backend."""
        platform = self.platform
        if (
            request.queue
            and platform is not None
            and name != platform.scheduler
            and platform.queue(request.queue) is not None
        ):
            return attrs.evolve(request, queue=None)
        return request

    def _choose(self, specs: Sequence[JobSpec]) -> list[Choice]:
        extra: dict[str, list[tuple[float, float, float, str]]] = {n: [] for n in self.backends}
        choices, refused = [], []
        for spec in specs:
            options = self._options(spec, extra)
            try:
                choice = choose(options, self.objective, self.ceiling)
            except Unroutable as exc:
                refused.append(f"job {spec.name}: {exc}")
                continue
            best = next(o for o in choice.options if o.backend == choice.backend)
            cores = spec.request.cpus or 1
            extra[choice.backend].append((cores, best.runtime, self._clock(), ""))
            choices.append(choice)
        if refused:
            raise Unroutable("; ".join(refused))
        return choices

    def _rates(self, name: str, queue: str | None) -> CostRates:
        platform = self.platform
        if platform is None or platform.scheduler != name:
            return CostRates()
        chosen = platform.queue(queue or platform.default_queue or "") or (
            platform.queues[0] if platform.queues else None)  # fmt: skip
        return chosen.cost if chosen is not None else CostRates()

    # -- learning -------------------------------------------------------------------------

    def _sent(
        self, spec: JobSpec, choice: Choice, handle: JobHandle, into: dict[int, JobHandle], n: int
    ) -> None:
        routed = attrs.evolve(handle, route=choice.record)
        into[n] = routed
        cores = spec.request.cpus or 1
        best = next(o for o in choice.options if o.backend == choice.backend)
        now = self._clock()
        self._out[choice.backend][handle.native_id] = (cores, best.runtime, now, handle.native_id)
        # a job expected to start at once measures the backend's turnaround for its process
        at_once = best.start <= self.probes[choice.backend].overhead + 0.5
        self._process[(handle.backend, handle.native_id)] = (
            spec.request.process or "", now if at_once else None)  # fmt: skip

    def _ended(self, handle: JobHandle, status: JobStatus) -> None:
        self._statuses.pop((handle.backend, handle.native_id), None)
        self._out.get(handle.backend, {}).pop(handle.native_id, None)
        process, sent = self._process.pop((handle.backend, handle.native_id), ("", None))
        if status.state is not JobState.SUCCEEDED or not process:
            return
        if status.wall_seconds:
            self._longest[process] = max(self._longest.get(process, 0.0), status.wall_seconds)
        if sent is not None:  # submission to the poll that saw it end: all it cost there
            took, key = self._clock() - sent, (handle.backend, process)
            self._took[key] = took if key not in self._took else (self._took[key] + took) / 2
