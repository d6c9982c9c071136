"""Squashed allocations: many jobs in few scheduler allocations, each run by a launcher.

``SquashBackend`` (``_backend``) wraps a batch backend; ``_plan`` packs jobs into
allocations, ``_alloc`` submits them, ``_state`` and ``_status`` keep and read the queue,
claims and results on disk, and ``_launcher`` (with ``_launcher_job`` and ``_protocol``,
the on-disk protocol both sides read; standard-library only: they are copied beside the
jobs) runs them inside the allocation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ._backend import SquashBackend
    from ._plan import Decision, allocation_size, explain, history_runtime, shape

# each public name and the module that defines it
_HOMES = {
    "SquashBackend": "_backend",
    "Decision": "_plan",
    "allocation_size": "_plan",
    "explain": "_plan",
    "history_runtime": "_plan",
    "shape": "_plan",
}

__all__ = [
    "Decision",
    "SquashBackend",
    "allocation_size",
    "explain",
    "history_runtime",
    "shape",
]

__getattr__ = exports(__name__, _HOMES)
