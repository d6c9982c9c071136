"""Small checks on raw engine values, shared by the dialects."""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ResourceError

_NUMBER = re.compile(r"[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
# Larger than any resource (2^63 - 1, Slurm's and the kernel's int64): beyond it a value
# no longer fits a float (OverflowError) nor, past 4,300 digits, int() (ValueError).
LARGEST = 2**63 - 1
_LONG_DIGITS = re.compile(r"\d{31,}")


def short_digits(field: str, value: Any, expected: str) -> None:
    """Refuse text holding a run of more than 30 digits before it is parsed: no resource
    needs one, and int() raises ValueError past 4,300 (``sys.get_int_max_str_digits``)."""
    if isinstance(value, str) and _LONG_DIGITS.search(value):
        raise ResourceError(field, value, f"{expected} (numbers of at most 30 digits)")


def at_most_largest(field: str, written: Any, result: int, expected: str) -> int:
    """``result`` if it is at most :data:`LARGEST`; else ResourceError quoting ``written``."""
    if result > LARGEST:
        raise ResourceError(field, written, f"{expected}, at most {LARGEST}")
    return result


def number(field: str, value: Any, expected: str, *, integer: bool = False) -> float | int:
    """A finite, non-negative number from an int, float or numeric string, at most
    :data:`LARGEST`; else ResourceError (quoting the value as written: ``1e999``, not inf)."""
    written = value
    if isinstance(value, str):
        text = value.strip().strip("'\"")
        if not _NUMBER.fullmatch(text):
            raise ResourceError(field, value, expected)
        if any(c in text for c in ".eE"):
            value = float(text)
        elif len(text.lstrip("+0")) > len(str(LARGEST)):
            raise ResourceError(field, value, f"{expected}, at most {LARGEST}")
        else:
            value = int(text)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ResourceError(field, written, expected)
    if value < 0:
        raise ResourceError(field, written, f"{expected} (negative values are invalid)")
    if value > LARGEST or not math.isfinite(value):  # compared first: a huge int has no float
        raise ResourceError(field, written, f"{expected}, at most {LARGEST}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ResourceError(field, written, expected)
        return int(value)
    return value


def document_number(
    where: str, value: Any, *, integer: bool = False, positive: bool = False
) -> Any:
    """A number as written in a YAML/JSON document (no strings): finite, >= 0 (> 0 if
    ``positive``), at most :data:`LARGEST`, whole if ``integer``; else ResourceError
    naming ``where``."""
    kind = ("a whole number" if integer else "a number") + (" > 0" if positive else " >= 0")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > LARGEST:
        # checked before isfinite: a larger int has no float (OverflowError)
        raise ResourceError(where, value, f"{kind}, at most {LARGEST}")
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
