"""The resolver extension point: ``enabled()`` and ``resolve(request) -> response | None``."""

from __future__ import annotations

import abc
from importlib.metadata import entry_points

from ..models import ResourceRequest, ResourceResponse

__all__ = ["ENTRY_POINT_GROUP", "DefaultResolver", "Resolver", "discover"]

ENTRY_POINT_GROUP = "seqera.resources_resolvers"


class Resolver(abc.ABC):
    """Optimises a task's resources before it runs; the lowest ``priority`` wins.

    Returning ``None`` means "no opinion": the next resolver, then the declared
    values, are used. A resolver must never be a gate; the chain treats any
    exception, timeout or malformed answer as ``None``.
    """

    name: str = "resolver"
    priority: int = 0

    def enabled(self) -> bool:
        """Whether this resolver takes part (e.g. its endpoint is configured)."""
        return True

    @abc.abstractmethod
    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """Effective resources for ``request``, or ``None`` for no opinion."""


class DefaultResolver(Resolver):
    """The no-op resolver that always exists: the declared values are used."""

    name = "default"
    priority = 1000  # as Nextflow's default resolver: anything else overrides it

    def resolve(self, request: ResourceRequest) -> None:
        """No opinion."""
        return None


def discover() -> list[Resolver]:
    """Resolvers registered under ``seqera.resources_resolvers``, enabled ones, best first.

    An entry point that fails to load or construct is skipped: a broken plugin must not
    stop a workflow. The default resolver is always present.
    """
    found: list[Resolver] = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            resolver = entry.load()()
            if resolver.enabled():
                found.append(resolver)
        except Exception:
            continue
    if not any(isinstance(r, DefaultResolver) for r in found):
        found.append(DefaultResolver())
    return sorted(found, key=lambda r: r.priority)
