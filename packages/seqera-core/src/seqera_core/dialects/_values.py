"""Small checks on raw engine values, shared by the dialects."""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ResourceError

_NUMBER = re.compile(r"[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def number(field: str, value: Any, expected: str, *, integer: bool = False) -> float | int:
    """A finite, non-negative number from an int, float or numeric string; else ResourceError."""
    if isinstance(value, str):
        text = value.strip().strip("'\"")
        if not _NUMBER.fullmatch(text):
            raise ResourceError(field, value, expected)
        value = float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ResourceError(field, value, expected)
    if value < 0:
        raise ResourceError(field, value, f"{expected} (negative values are invalid)")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ResourceError(field, value, expected)
        return int(value)
    return value
