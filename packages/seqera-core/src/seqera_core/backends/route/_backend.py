"""One run over several backends: each job sent where the objective says it is best.

:class:`RouteBackend` holds backends opened as the run would open each alone (local, a
batch scheduler, a cloud one; their own config sections, squashing, fork server). For
each job it asks every backend's :class:`~._probe.Probe` what it can run and how busy it
is, estimates when the job would end there and what it would cost (:mod:`._choosing`),
and submits it where the objective is best (:mod:`._policy`). A backend without the submit
host's files (ECS) takes only a job the engine can stage (``JobSpec.staged``, or every
job under ``staged``), and gets the staged form of it, built only then. A user's choice wins: a rule
pinned to a backend (``pin``) goes there, and a job naming a queue goes only to a
backend that has it. A batch with a job no backend can run is refused whole, before
anything is submitted, naming each backend's reason.

A handle is the chosen backend's own (``JobHandle.backend`` names it, so the history's
``backend`` column says where the job ran) with the decision in ``JobHandle.route`` (the
history's ``route`` column: :attr:`Choice.record`, JSON); the job's labels carry the
backend and the reason in words (``route-backend``, ``route-reason``). Polls, cancels
and logs go to the backend a handle names; :meth:`find` asks all of them, so a run after
a crash adopts a job wherever it went.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ...errors import UsageError
from ...platforms import Platform
from ..base import Backend, JobHandle, JobSpec, JobState, JobStatus, NoLookup
from ..batch import SubmitError
from ..local import LocalBackend
from ..registry import entry
from ._choosing import Choosing
from ._policy import OBJECTIVES, Choice
from ._probe import Probe
from ._settings import OVERHEAD, ceiling_of, pairs

__all__ = ["RouteBackend"]

#: Opens a backend of the registry by name as the run would (the fork server for one that forks).
Opener = Callable[..., Backend]


class RouteBackend(Choosing):
    """Several backends as one; each job goes where ``objective`` is best.

    Args:
        backends: the candidates' registry names (``route.backends``).
        opener: opens one of them as the run would (the session's).
        objective: ``finish`` (earliest estimated end), ``cost`` (cheapest) or
            ``cost-per-hour-saved`` (the cheapest unless a costlier one saves time for at
            most ``max_cost_per_hour_saved`` per hour saved).
        pin: ``RULE=BACKEND`` items: that process's jobs always go there.
        staged: every job needs no file of the submit host (or the engine stages them
            itself), so a backend without the shared file system (ECS) may run any;
            otherwise only a job with a ``JobSpec.staged`` form goes there.
        max_cost_per_hour_saved: the ceiling of ``cost-per-hour-saved``.
        overhead: ``BACKEND=SECONDS`` items over the defaults (local 0.3, batch 5, cloud 60).
        runtime: seconds a job is expected to run when nothing else says.
        platform: the run's platform: its queues' limits and cost rates for its scheduler.
        fork_server: given to the first backend that forks (local).
        scheduler_every: seconds a batch scheduler's status or load is reused.
    """

    name = "route"
    status_every = 0.5  # a local job's end is seen this soon; schedulers are asked less often

    def __init__(
        self,
        backends: Sequence[str] = ("local", "slurm"),
        *,
        opener: Opener,
        objective: str = "finish",
        pin: Sequence[str] | Mapping[str, str] = (),
        staged: bool = False,
        overhead: Sequence[str] | Mapping[str, str] = (),
        runtime: float = 60.0,
        max_cost_per_hour_saved: float | str | None = None,
        platform: Platform | None = None,
        fork_server: Any = None,
        scheduler_every: float = 3.0,
        expected: Callable[[JobSpec], float | None] | None = None,
        clock: Callable[[], float] = time.time,
        **ignored: Any,
    ) -> None:
        super().__init__()
        del ignored  # work_dir and the like: each backend has its own
        if objective not in OBJECTIVES:
            raise UsageError(
                f"route.objective: {objective!r} is not one of {', '.join(OBJECTIVES)}"
            )
        self.ceiling = ceiling_of(max_cost_per_hour_saved)
        if objective == "cost-per-hour-saved" and self.ceiling is None:
            raise UsageError(
                "route.max_cost_per_hour_saved: not set; the objective cost-per-hour-saved "
                "needs it (the most extra cost per hour of finish time saved, a number >= 0)"
            )
        names = list(dict.fromkeys(str(n) for n in backends))
        if not names or "route" in names:
            raise UsageError(f"route.backends: {names!r} must name one or more other backends")
        self.objective = objective
        self.pin = pairs(pin, "pin")
        for rule, name in self.pin.items():
            if name not in names:
                raise UsageError(f"route.pin: {rule}={name}: {name} is not one of route.backends")
        waits = {k: float(v) for k, v in pairs(overhead, "overhead").items()}
        self.staged = bool(staged)
        self.runtime = float(runtime)
        self.platform = platform
        self.expected = expected
        self._clock = clock
        self._every = scheduler_every
        self._lock = threading.RLock()
        self.backends: dict[str, Backend] = {}
        self.probes: dict[str, Probe] = {}
        try:
            for name in names:
                found = entry(name)
                server, fork_server = (fork_server, None) if found.forks else (None, fork_server)
                backend = opener(name, server) if found.forks else opener(name)
                self.backends[name] = backend
                kind = "local" if isinstance(backend, LocalBackend) else (
                    "batch" if found.batch else "cloud")  # fmt: skip
                wait = waits.get(name, OVERHEAD[kind])
                self.probes[name] = Probe(name, backend, found.shared_fs, wait, platform,
                                          scheduler_every, clock)  # fmt: skip
        except BaseException:
            if fork_server is not None:
                fork_server.close()
            self.close()
            raise
        if fork_server is not None:
            fork_server.close()  # no candidate forks
        # what the run learns of each backend (see Choosing), and when each was last polled
        self._out = {n: {} for n in names}
        self._process = {}
        self._took = {}
        self._longest = {}
        self._statuses = {}
        self._asked: dict[str, float] = {}

    @property
    def unshared(self) -> tuple[str, ...]:
        """The candidates without the submit host's files (ECS): an engine that can stage
        a job's files gives its jobs a staged form (``JobSpec.staged``) for them."""
        return tuple(name for name, probe in self.probes.items() if not probe.shared_fs)

    # -- the backend contract -------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Choose each job's backend (all of them first: a job none can run refuses the
        batch before anything is sent), then one submission per backend, in the engine's
        order. (Longest first was tried: a batch's 4-core jobs then took a squashed
        allocation whole while the short jobs and the longer ones the engine released a
        moment later waited behind them; benchmarks/route_snakemake.py ran slower.)"""
        with self._lock:
            choices = self._choose(jobs)
            groups: dict[str, list[int]] = {}
            for n, choice in enumerate(choices):
                groups.setdefault(choice.backend, []).append(n)
        # a job bound for a cloud backend uploads its files here (seconds for a large
        # input): outside the lock, so the engine's polls go on meanwhile
        ready = {n: self._labelled(spec, choice) for n, (spec, choice) in
                 enumerate(zip(jobs, choices, strict=True))}  # fmt: skip
        with self._lock:
            handles: dict[int, JobHandle] = {}
            for name, positions in groups.items():
                try:
                    sent = self.backends[name].submit([ready[n] for n in positions])
                except SubmitError as exc:
                    for k, handle in zip(exc.positions, exc.submitted, strict=True):
                        self._sent(jobs[positions[k]], choices[positions[k]], handle, handles,
                                   positions[k])  # fmt: skip
                    raise SubmitError(
                        str(exc), exc.result, [handles[n] for n in sorted(handles)],
                        positions=sorted(handles),
                        unknown=[positions[k] for k in exc.unknown],
                        errors={positions[k]: e for k, e in exc.errors.items()},
                    ) from exc  # fmt: skip
                except Exception as exc:
                    if handles:  # earlier backends took theirs: they run
                        raise SubmitError(
                            f"{name}: {exc}", None, [handles[n] for n in sorted(handles)],
                            positions=sorted(handles),
                        ) from exc  # fmt: skip
                    raise
                for n, handle in zip(positions, sent, strict=True):
                    self._sent(jobs[n], choices[n], handle, handles, n)
            return [handles[n] for n in range(len(jobs))]

    def _labelled(self, spec: JobSpec, choice: Choice) -> JobSpec:
        """The job as its backend gets it: the route's labels, and the staged form for a
        backend without the submit host's files (the same key: it is the same job)."""
        labels = {**spec.labels, "route-backend": choice.backend, "route-reason": choice.reason}
        if not self.probes[choice.backend].shared_fs and spec.staged is not None:
            staged = spec.staged()
            return attrs.evolve(staged, key=spec.key, labels={**staged.labels, **labels},
                                staged=None)  # fmt: skip
        return attrs.evolve(spec, labels=labels, staged=None)

    def _owner(self, handle: JobHandle) -> Backend | None:
        return self.backends.get(handle.backend)

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """One poll per backend; a batch scheduler is asked at most every
        ``scheduler_every`` seconds, or its own ``status_every`` if shorter (a squashed
        one reads files), its last answer standing in between."""
        with self._lock:
            result: dict[int, JobStatus] = {}
            now = self._clock()
            for name, backend in self.backends.items():
                mine = [(n, h) for n, h in enumerate(handles) if h.backend == name]
                if not mine:
                    continue
                local = self.probes[name].local
                fresh = [h for _, h in mine if (h.backend, h.native_id) not in self._statuses]
                # a squashed scheduler's poll reads files: as often as it says it is worth
                every = min(self._every, float(getattr(backend, "status_every", self._every)))
                if local or fresh or now - self._asked.get(name, 0.0) >= every:
                    self._asked[name] = now
                    for (_, h), status in zip(mine, backend.poll([h for _, h in mine]),
                                              strict=True):  # fmt: skip
                        self._statuses[(h.backend, h.native_id)] = status
                for n, h in mine:
                    status = attrs.evolve(self._statuses[(h.backend, h.native_id)], handle=h)
                    result[n] = status
                    if status.state.finished:
                        self._ended(h, status)
            for n, h in enumerate(handles):
                if n not in result:
                    result[n] = JobStatus(h, JobState.UNKNOWN,
                                          reason=f"no routed backend {h.backend!r}")  # fmt: skip
            return [result[n] for n in range(len(handles))]

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel on every backend that holds one of them; each is asked even if one fails."""
        failure: Exception | None = None
        for name, backend in self.backends.items():
            mine = [h for h in handles if h.backend == name]
            if not mine:
                continue
            try:
                backend.cancel(mine)
            except Exception as exc:  # the others are still cancelled
                failure = failure or exc
            with self._lock:
                for h in mine:
                    self._out[name].pop(h.native_id, None)
        if failure is not None:
            raise failure

    def logs(self, handle: JobHandle) -> str:
        """The job's output, from the backend that ran it."""
        owner = self._owner(handle)
        return "" if owner is None else owner.logs(handle)

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """The jobs carrying these keys on any of the backends (one lookup each).

        Raises:
            NoLookup: a key was found nowhere and a backend cannot look jobs up (it may
                hold it: the job must not be sent again blindly).
        """
        found: dict[str, JobHandle] = {}
        blind: list[str] = []
        for name, backend in self.backends.items():
            try:
                found.update(backend.find([k for k in keys if k not in found]))
            except NoLookup:
                blind.append(name)
        if blind and len(found) < len(set(keys)):
            raise NoLookup(f"the {', '.join(blind)} backend cannot look jobs up by submission key")
        return found

    def set_warn(self, warn: Callable[[str], None]) -> None:
        """Send each backend's notes to the engine's log."""
        for backend in self.backends.values():
            inner = getattr(backend, "inner", backend)
            if callable(method := getattr(inner, "set_warn", None)):
                method(warn)

    def close(self) -> None:
        """Close every backend (the local one ends its jobs; schedulers' jobs go on)."""
        for backend in getattr(self, "backends", {}).values():
            try:
                backend.close()
            except Exception:  # closing one must not leave the others open
                continue
