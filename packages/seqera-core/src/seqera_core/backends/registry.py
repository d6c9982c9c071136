"""The one registry of backends: every other module reads names and kinds from here.

Like psij's executor registry (``JobExecutor.get_instance('slurm')``), a backend is found
by name and built from one set of options; its module is imported only when asked for
(ECS brings boto3). No caller branches on a backend's name: what differs between them
(whether it is a batch scheduler, where its settings come from, whether it shares the
submit host's file system) is a field of its :class:`BackendEntry`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from ..errors import SeqeraError, UsageError
from ..models import ResourceRequest, Submission
from ..squash import SquashMode, SquashPolicy
from .base import Backend

if TYPE_CHECKING:
    from .local._forking import ForkServer

__all__ = ["BACKENDS", "BATCH", "GROUP", "BackendEntry", "entry", "open_backend"]

_LOG = logging.getLogger("seqera_core.backends")

if TYPE_CHECKING:
    #: Every backend's name, in the order the help lists them.
    BACKENDS: tuple[str, ...]
    #: The batch schedulers.
    BATCH: tuple[str, ...]


@frozen
class BackendEntry:
    """A backend's name, where its class lives and what kind of dispatcher it is."""

    name: str
    module: str
    cls: str
    #: A batch scheduler: jobs can share arrays and squashed allocations.
    batch: bool = False
    #: Jobs run where the submit host's files are (local, or a cluster's shared file system).
    shared_fs: bool = True
    #: The config section whose keys are the backend's settings (``ecs.*``), if any.
    section: str | None = None
    #: The settings class the constructor takes in one argument, instead of keywords.
    settings: str | None = None
    #: Constructor keywords fixed by the entry (PBS Pro vs Torque over one class).
    fixed: Mapping[str, Any] = field(factory=dict)
    #: ``module:function`` writing a request in the scheduler's own words (``explain``).
    dialect: str = ""
    #: Starts ``python -m`` jobs of the ``preload`` packages as forks of a preloaded process.
    forks: bool = False
    #: Sends arrays natively without being a batch scheduler (AWS Batch): squash mode
    #: ``array`` is allowed and the policy is passed as the ``squash`` keyword.
    arrays: bool = False
    #: Settings the backend cannot run without (``ecs.cluster``): said by name when missing.
    required: tuple[str, ...] = ()
    #: Runs jobs on other backends of this registry (routing): its constructor takes
    #: ``opener``, which opens one of them by name as the run would open it alone.
    composite: bool = False
    #: Keeps its jobs on disk under ``state`` (a directory), so the backend of the run
    #: after a crash takes them back and finds them by key (a scheduler needs none: it
    #: keeps them itself). A session with a resume ledger gives it one beside the ledger.
    readopts: bool = False

    def submission(
        self, request: ResourceRequest, settings: Mapping[str, Any] | None = None
    ) -> Submission:
        """What this backend would receive for ``request`` (flags, directives, payload);
        ``settings`` are the site's (Grid Engine's memory resource), for writers that take them."""
        module, _, function = self.dialect.partition(":")
        writer: Callable[..., Submission] = getattr(importlib.import_module(module), function)
        # A writer takes the site settings that change what it writes (Grid Engine's memory
        # resource); others of the section (Slurm's reservation, signal) act at submission.
        taken = inspect.signature(writer).parameters
        every = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in taken.values())
        keywords = {
            k: v for k, v in (settings or {}).items() if every or (k in taken and k != "request")
        }
        return writer(request, **keywords)


#: The entry-point group every backend registers under (this package's own among them).
GROUP = "seqera.backends"
# The help lists this package's own backends in this order, then others by name.
_OWN = ("local", "slurm", "pbs", "torque", "sge", "lsf", "ecs", "batch", "route")


@functools.cache
def _installed() -> Mapping[str, BackendEntry]:
    """Every installed backend, read once from the entry-point group :data:`GROUP`.

    Like Snakemake's executor plugins and psij's executors, a backend is found through
    the installed packages' metadata: a third-party package adds one by registering a
    :class:`BackendEntry` (a light object: its backend's module is imported only when a
    run opens it) without touching this package. A name registered twice keeps
    seqera-core's own entry, else the first, and says so.
    """
    found: dict[str, BackendEntry] = {}
    for point in sorted(metadata.entry_points(group=GROUP), key=_order):
        try:
            value = point.load()
        except Exception as exc:  # a broken plugin must not take the others down
            _LOG.warning("backend %r (%s) cannot be loaded: %s", point.name, point.value, exc)
            continue
        if not isinstance(value, BackendEntry) or value.name != point.name:
            _LOG.warning(
                "backend %r (%s) is not a BackendEntry named %r; ignored",
                point.name, point.value, point.name,
            )  # fmt: skip
            continue
        if point.name in found:
            _LOG.warning("backend %r is registered twice; %s ignored", point.name, point.value)
            continue
        found[point.name] = value
    return found


def _order(point: metadata.EntryPoint) -> tuple[int, str]:
    own = point.value.startswith("seqera_core.") and point.name in _OWN
    return (_OWN.index(point.name), "") if own else (len(_OWN), point.name)


def __getattr__(name: str) -> tuple[str, ...]:
    # BACKENDS and BATCH read the entry points when first asked for, not at import.
    if name == "BACKENDS":
        return tuple(_installed())
    if name == "BATCH":
        return tuple(e.name for e in _installed().values() if e.batch)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def entry(name: str) -> BackendEntry:
    """The registry's entry for ``name``.

    Raises:
        UsageError: no backend has that name.
    """
    found = _installed().get(name)
    if found is None:
        raise UsageError(f"backend: {name!r} is not one of {', '.join(_installed())}")
    return found


def open_backend(
    name: str,
    *,
    work_dir: str | Path | None = None,
    squash: SquashPolicy | None = None,
    preload: Sequence[str] = (),
    fork_server: ForkServer | None = None,
    **options: Any,
) -> Backend:
    """A new backend called ``name``: ``work_dir`` holds its job scripts and logs, and
    ``options`` are its constructor's keywords (for ECS, its ``ecs.*`` settings).

    ``squash`` puts jobs together on a batch scheduler: arrays, or squashed allocations
    (then the backend returned wraps the scheduler's, and ``preload`` names the Python
    entry points its launchers load once, see :class:`SquashBackend`); a backend that
    ``forks`` (local) loads them once in a fork server for all its jobs, or takes
    ``fork_server``, one the caller started earlier (any other backend closes it).

    Raises:
        UsageError: the name is unknown, the backend's module (or extra) is not
            installed, a setting is not one the backend takes, or squashing was asked of
            a backend that is not a batch scheduler.
    """
    found = entry(name)
    if fork_server is not None and not found.forks:
        fork_server.close()  # started on the chance that this backend would fork
        fork_server = None
    policy = squash or SquashPolicy()
    arrays_only = found.arrays and policy.mode is SquashMode.ARRAY
    if policy.mode is not SquashMode.OFF and not found.batch and not arrays_only:
        raise UsageError(
            f"squash: {policy.mode.value!r} needs a batch scheduler "
            f"({', '.join(e.name for e in _installed().values() if e.batch)}); "
            f"the {name} backend runs each job on its own (set squash to off)"
        )
    factory = _factory(found)
    if found.settings is not None:
        return _settings_object(found, factory, options, policy if found.arrays else None)
    keywords = {**found.fixed, **options}
    if work_dir is not None:
        keywords["work_dir"] = work_dir
    if found.batch:
        keywords["squash"] = policy
    if found.forks and preload:
        keywords["preload"] = preload
    if fork_server is not None:
        keywords["fork_server"] = fork_server
    try:
        backend: Backend = factory(**keywords)
    except SeqeraError:
        raise
    except (TypeError, ValueError) as exc:  # a keyword it does not take, or a bad value
        raise UsageError(f"backend {name}: {exc}") from None
    if policy.mode is SquashMode.SQUASH:
        from .squash._backend import SquashBackend

        return SquashBackend(backend, policy, preload=preload)
    return backend


def _factory(found: BackendEntry) -> Any:
    try:
        module = importlib.import_module(found.module)
    except ModuleNotFoundError as exc:
        if exc.name == found.module:
            raise UsageError(f"backend {found.name!r} is not available in this version") from None
        # A missing client library: name the extra that brings it.
        raise UsageError(
            f"backend {found.name!r} needs {exc.name}, which is not installed; "
            f"install seqera-core[{found.name}]"
        ) from None
    factory = getattr(module, found.cls, None)
    if factory is None:
        raise UsageError(f"backend {found.name!r} is not available: {found.module} has no "
                         f"{found.cls}")  # fmt: skip
    return factory


def _settings_object(
    found: BackendEntry, cls: Any, options: Mapping[str, Any], squash: SquashPolicy | None
) -> Backend:
    # ECS and AWS Batch take one settings object: the options are its fields (the config's
    # ecs.* or batch.* keys); AWS Batch also the squash policy, for its arrays.
    for key in found.required:
        if not options.get(key):
            raise UsageError(
                f"{found.section}.{key} is required for the {found.name} backend: set it in "
                f"seqera.yaml ({found.section}: {{{key}: ...}}) or as "
                f"$SEQERA_{str(found.section).upper()}_{key.upper()}"
            )
    module = importlib.import_module(cls.__module__)
    try:
        settings = getattr(module, str(found.settings))(**options)
        backend: Backend = cls(settings) if squash is None else cls(settings, squash=squash)
    except TypeError as exc:
        raise UsageError(f"{found.section} settings: {exc}") from None
    return backend
