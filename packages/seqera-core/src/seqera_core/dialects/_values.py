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


def document_number(
    where: str, value: Any, *, integer: bool = False, positive: bool = False
) -> Any:
    """A number as written in a YAML/JSON document (no strings): finite, >= 0 (> 0 if
    ``positive``), whole if ``integer``; else ResourceError naming ``where``."""
    kind = ("a whole number" if integer else "a number") + (" > 0" if positive else " >= 0")
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
        or (integer and not isinstance(value, int))
    ):
        raise ResourceError(where, value, kind)
    return value
