"""Resolvers: optimise a task's resources before it runs, never blocking it.

The names below are imported on first use (PEP 562): the report and a resolve read
``PredictiveResolver`` alone, and importing the HTTP resolver with it (the wire format's
converters, cattrs) would cost ``seqera report`` a sixth of a second of start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .base import ENTRY_POINT_GROUP, DefaultResolver, Resolver, discover
    from .chain import Resolution, resolve
    from .configured import close_all, configured
    from .http import BATCH_LIMIT, HttpResolver
    from .maximum import MaximumResolver
    from .predictive import PredictiveResolver

# each public name and the module that defines it
_HOMES = {
    "ENTRY_POINT_GROUP": "base",
    "DefaultResolver": "base",
    "Resolver": "base",
    "discover": "base",
    "Resolution": "chain",
    "resolve": "chain",
    "close_all": "configured",
    "configured": "configured",
    "BATCH_LIMIT": "http",
    "HttpResolver": "http",
    "MaximumResolver": "maximum",
    "PredictiveResolver": "predictive",
}

__all__ = [
    "BATCH_LIMIT",
    "ENTRY_POINT_GROUP",
    "DefaultResolver",
    "HttpResolver",
    "MaximumResolver",
    "PredictiveResolver",
    "Resolution",
    "Resolver",
    "close_all",
    "configured",
    "discover",
    "resolve",
]

__getattr__ = exports(__name__, _HOMES)
