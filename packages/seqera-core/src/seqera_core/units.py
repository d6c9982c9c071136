"""Canonical units and exact, round-up arithmetic shared by every dialect.

Inside the core memory and disk are bytes (int), time is seconds (int) and
cpus a number. Conversions go through :class:`fractions.Fraction` so a
fractional MiB or core never loses a byte to float rounding.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "GB",
    "GIB",
    "KB",
    "KIB",
    "MB",
    "MIB",
    "TIB",
    "ceil_scale",
    "format_bytes",
    "format_seconds",
]

KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4
KB = 1000
MB = 1000**2
GB = 1000**3


def ceil_scale(value: float | int | Fraction, factor: int | Fraction = 1) -> int:
    """``ceil(value * factor)`` computed exactly, so rounding never goes below the request."""
    return math.ceil(Fraction(value) * factor)


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer division rounding up."""
    return -(-numerator // denominator)


_BINARY = (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB))


def format_bytes(size: int) -> str:
    """A short binary size for people to read, e.g. ``1.5 GiB`` (display only, not a dialect)."""
    for name, factor in _BINARY:
        if size >= factor:
            text = f"{size / factor:.2f}".rstrip("0").rstrip(".")
            return f"{text} {name}"
    return f"{size} B"


def format_seconds(seconds: int) -> str:
    """A duration for people to read, e.g. ``1d 2h 3m 4s``."""
    if seconds == 0:
        return "0s"
    parts = []
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, length)
        if count:
            parts.append(f"{count}{unit}")
    return " ".join(parts)
