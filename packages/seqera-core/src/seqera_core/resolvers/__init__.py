"""Resolvers: optimise a task's resources before it runs, never blocking it."""

from .base import ENTRY_POINT_GROUP, DefaultResolver, Resolver, discover
from .chain import Resolution, resolve
from .configured import close_all, configured
from .http import BATCH_LIMIT, HttpResolver
from .maximum import MaximumResolver
from .predictive import PredictiveResolver

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
