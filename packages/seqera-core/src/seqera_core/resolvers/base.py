"""The resolver extension point: ``enabled()`` and ``resolve(request) -> response | None``."""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING

from ..models import ResourceRequest, ResourceResponse

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "DefaultResolver", "Resolver", "discover"]

ENTRY_POINT_GROUP = "seqera.resources_resolvers"

_LOG = logging.getLogger("seqera_core.resolvers")


class Resolver(abc.ABC):
    """Optimises a task's resources before it runs; the lowest ``priority`` wins.

    Returning ``None`` means "no opinion": the next resolver, then the declared
    values, are used. A resolver is never a gate: the chain treats any exception,
    timeout or malformed answer as a warning and uses the declared values. Classes
    registered under ``seqera.resources_resolvers`` are built with no arguments.
    """

    name: str = "resolver"
    priority: int = 0
    # True for a resolver that answers from this process (memory, a local database):
    # the chain calls it directly instead of from a thread with a timeout, which costs
    # milliseconds per call on a busy machine. Anything that waits on a network stays False.
    inline: bool = False

    def enabled(self) -> bool:
        """Whether this resolver takes part (e.g. its endpoint is configured)."""
        return True

    @abc.abstractmethod
    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """Effective resources for ``request``, or ``None`` for no opinion."""

    def close(self) -> None:  # noqa: B027 - most resolvers hold nothing to release
        """Release what the resolver holds (an HTTP client's connections)."""


class DefaultResolver(Resolver):
    """The no-op resolver that always exists: the declared values are used."""

    name = "default"
    # Anything registered with the base priority (0) or lower overrides it, as a
    # Nextflow plugin's @Priority(-10) overrides the default ResourcesResolver.
    priority = 1000

    def resolve(self, request: ResourceRequest) -> None:
        """No opinion."""
        return None


def _load(entry: EntryPoint) -> Resolver | None:
    try:
        resolver = entry.load()()
        if not isinstance(resolver, Resolver):
            raise TypeError(f"{type(resolver).__name__} is not a seqera_core Resolver")
        if isinstance(resolver.priority, bool) or not isinstance(resolver.priority, int):
            raise TypeError(f"priority {resolver.priority!r} is not an integer")
        return resolver if resolver.enabled() else None
    except Exception as exc:
        # A broken plugin must not stop a workflow; say so once and go on without it.
        _LOG.warning("resolver entry point %r (%s) skipped: %s: %s",
                     entry.name, entry.value, type(exc).__name__, exc)  # fmt: skip
        return None


def discover() -> list[Resolver]:
    """Enabled resolvers registered under ``seqera.resources_resolvers``, best (lowest) first.

    An entry point that fails to load, to build or to say whether it is enabled is skipped
    with a warning. The default resolver is always present.
    """
    # importlib.metadata (email, zipfile...) only when the plugins are looked for: the
    # report builds its one resolver without them
    from importlib.metadata import entry_points

    found = [r for r in map(_load, entry_points(group=ENTRY_POINT_GROUP)) if r is not None]
    if not any(isinstance(r, DefaultResolver) for r in found):
        found.append(DefaultResolver())
    return sorted(found, key=lambda r: r.priority)
