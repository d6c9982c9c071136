"""How one run opens its backends: the run's own, and a routing backend's candidates.

Each backend is opened as the run would open it alone: the platform's settings (a routing
backend's: the platform's ``route:`` section) under the backend's config section, its work
directory (none for a cloud backend, which keeps nothing on this machine), squashing for a
batch scheduler (arrays alone for one that sends them, AWS Batch), the
``--seqera-backend-option`` pass-through for a batch scheduler, and, for a backend that
keeps its jobs on disk (local), a state directory beside the run's ledger, so the run
after a crash finds by key what this one started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from .backends.base import Backend, JobSpec
from .backends.registry import BackendEntry, entry, open_backend
from .config import Config
from .platforms import Platform
from .squash import SquashMode, SquashPolicy

if TYPE_CHECKING:
    from .backends.local._forking import ForkServer

__all__ = ["Opening", "WorkDir"]

#: Where a backend keeps job scripts and logs: a directory, or one per registry entry.
WorkDir = str | Path | Callable[[BackendEntry], str | Path | None] | None


@frozen
class Opening:
    """What a run opens its backends with (see the module's docstring)."""

    config: Config
    platform: Platform | None
    squash: SquashPolicy
    work_dir: WorkDir = None
    backend_options: Mapping[str, Any] = field(factory=dict)
    preload: tuple[str, ...] = ()
    ledger_dir: Path | None = None

    def directory(self, found: BackendEntry) -> Path | None:
        """Where ``found`` keeps job scripts and logs (``None``: its own default)."""
        if not found.shared_fs:
            return None  # a cloud backend keeps nothing on this machine
        chosen = self.work_dir(found) if callable(self.work_dir) else self.work_dir
        return None if chosen is None else Path(chosen)

    def settings(self, found: BackendEntry) -> dict[str, Any]:
        """The run's backend's settings: the platform's ``settings`` (the routing
        backend's: its ``route:``), then its config section."""
        if not found.section:
            return {}
        own: Mapping[str, Any] = {}
        if self.platform is not None:  # a route: section is the routing backend's own
            own = self.platform.route if found.composite else self.platform.settings
        return {**own, **self.config.section(found.section)}

    def state(self, found: BackendEntry) -> dict[str, Path]:
        """Where a backend that keeps its jobs on disk keeps them: beside the ledger (none
        without a ledger)."""
        if not found.readopts or self.ledger_dir is None:
            return {}
        return {"state": self.ledger_dir.parent / f"{found.name}-jobs"}

    def run_backend(
        self,
        found: BackendEntry,
        fork_server: ForkServer | None,
        expected: Callable[[JobSpec], float | None] | None,
    ) -> Backend:
        """The run's own backend; a routing one opens its candidates with :meth:`one`,
        estimating run times with ``expected``."""
        options = {**self.state(found), **self.settings(found), **self.backend_options}
        if found.composite:  # it opens its backends as this run would
            options = {**self.settings(found), "opener": self.one, "platform": self.platform,
                       "expected": expected}  # fmt: skip
        return open_backend(
            found.name,
            work_dir=self.directory(found),
            squash=None if found.composite else self.squash,
            preload=self.preload,
            fork_server=fork_server,
            **options,
        )

    def one(self, name: str, fork_server: ForkServer | None = None) -> Backend:
        """The backend ``name`` as this run would open it alone (a routing backend's
        candidates): its config section (and the platform's settings if it is the
        platform's scheduler), its work directory, squashing if it is a batch scheduler,
        the ``--seqera-backend-option`` pass-through too."""
        found = entry(name)
        own = self.platform.settings if self.platform and self.platform.scheduler == name else {}
        options = {**self.state(found), **own,
                   **(self.config.section(found.section) if found.section else {})}  # fmt: skip
        if found.batch:
            options.update(self.backend_options)
        return open_backend(
            name,
            work_dir=self.directory(found),
            # squashing for a batch scheduler; arrays alone for one that sends them (AWS Batch)
            squash=self.squash
            if found.batch or (found.arrays and self.squash.mode is SquashMode.ARRAY)
            else None,
            preload=self.preload,
            fork_server=fork_server,
            **options,
        )
