"""The routing backend's own settings as its constructor takes them: ``route.pin`` and
``route.overhead`` pairs, the ``cost-per-hour-saved`` ceiling, default overheads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import UsageError

__all__ = ["OVERHEAD", "ceiling_of", "pairs"]

# Seconds between submission and the engine seeing a job end that are not the job's
# own, by kind: a fork of the local fork server; a batch scheduler's cycle plus the
# route's poll of it (``scheduler_every``); a cloud task's image pull and start.
OVERHEAD = {"local": 0.3, "batch": 5.0, "cloud": 60.0}


def ceiling_of(value: float | str | None) -> float | None:
    """``route.max_cost_per_hour_saved`` as a number (None: not set)."""
    if value is None:
        return None
    try:
        ceiling = float(value)
    except (TypeError, ValueError):
        ceiling = -1.0
    if not ceiling >= 0 or ceiling == float("inf"):
        raise UsageError(f"route.max_cost_per_hour_saved: {value!r} is not a number >= 0")
    return ceiling


def pairs(values: Sequence[str] | Mapping[str, Any], what: str) -> dict[str, str]:
    """``NAME=VALUE`` items (or a mapping) of ``route.<what>`` as a mapping."""
    if isinstance(values, Mapping):
        return {str(k): str(v) for k, v in values.items()}
    found = {}
    for item in values:
        name, sep, value = str(item).partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UsageError(f"route.{what}: {item!r} is not NAME=VALUE")
        found[name.strip()] = value.strip()
    return found
