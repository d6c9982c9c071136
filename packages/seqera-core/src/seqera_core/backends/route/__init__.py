"""The routing backend: one run over several backends, each job where it ends first or
costs least (``--backend route`` and the config's ``route:`` section); see ``_backend``."""

from __future__ import annotations

from ._backend import RouteBackend
from ._policy import (
    OBJECTIVES,
    Choice,
    Limits,
    Load,
    Option,
    Unroutable,
    choose,
    refusal,
    said,
    saved_rate,
    start_after,
)

__all__ = [
    "OBJECTIVES",
    "Choice",
    "Limits",
    "Load",
    "Option",
    "RouteBackend",
    "Unroutable",
    "choose",
    "refusal",
    "said",
    "saved_rate",
    "start_after",
]
