"""The local machine: jobs as processes of this host, sized to its free cores and memory.

``LocalBackend`` starts each job (``_launch``) as a process or as a fork of a fork server
that loaded the engine once (``_forking`` and ``_forkserver``), keeps what it started on
disk so a later process recovers it (``_records``), enforces limits (``_limits``), reaps
and measures (``_reap``, ``_procfs``) and backfills the machine (``_backfill``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ._backend import LocalBackend
    from ._forking import ForkServer

# each public name and the module that defines it
_HOMES = {
    "LocalBackend": "_backend",
    "ForkServer": "_forking",
}

__all__ = [
    "ForkServer",
    "LocalBackend",
]

__getattr__ = exports(__name__, _HOMES)
