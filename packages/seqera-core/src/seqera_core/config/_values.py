"""How each kind of config value is read: seconds, text, names, booleans, counts, cores,
bytes and amounts. Each error names the layer (``where``: a file, ``$VARIABLE``, ``command
line``), the key, the value and what was expected.

A count or number written with a run of more than 30 digits is refused by name before it
is parsed (``dialects._values.short_digits``, the rule every dialect keeps): no setting
needs one, and past 4,300 digits ``int()`` raises ValueError (``sys.get_int_max_str_digits``;
``documents.past_limits`` names the same fault in a document).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from ..dialects._values import LARGEST, short_digits
from ..dialects.human import SIZE_FORMS, parse_size
from ..errors import ResourceError

__all__ = [
    "boolean",
    "byte_size",
    "core_count",
    "cost_amount",
    "name_list",
    "nonempty_text",
    "timeout_seconds",
    "whole_count",
]

_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _positive(key: str, value: Any, where: str, expected: str) -> float:
    """A finite number > 0 from a number or its text; else ResourceError saying ``expected``."""
    short_digits(f"{where}: {key}", value, expected)
    number = -1.0
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):  # float(10**400)
            number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ResourceError(f"{where}: {key}", value, expected)
    return number


def timeout_seconds(value: Any, where: str, key: str = "resolver.timeout") -> float:
    return _positive(key, value, where, "a number of seconds > 0")


def nonempty_text(key: str, value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
        raise ResourceError(f"{where}: {key}", value, "a non-empty string")
    return str(value)


def name_list(key: str, value: Any, where: str) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ResourceError(f"{where}: {key}", value, "a list of names, or comma-separated text")
    cleaned = [i.strip() for i in items if i.strip()]
    if not cleaned:
        raise ResourceError(f"{where}: {key}", value, "at least one name")
    return cleaned


def boolean(key: str, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _BOOLEANS[value.strip().lower()]
    raise ResourceError(f"{where}: {key}", value, "true or false")


def _whole(text: str) -> int | None:
    # int() refuses more than 4,300 digits (ValueError); no count or size needs 20.
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > len(str(LARGEST)):
        return None
    number = int(text)
    return number if 0 < number <= LARGEST else None


def whole_count(key: str, value: Any, where: str) -> int:
    short_digits(f"{where}: {key}", value, "an integer >= 1")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value) if 0 < value <= LARGEST else value
    text = value.strip() if isinstance(value, str) else ""
    number = _whole(text)
    if number is None:
        digits = text.isascii() and text.isdigit() and int(text) > 0  # at most 30 digits
        expected = f"an integer >= 1, at most {LARGEST}" if digits else "an integer >= 1"
        raise ResourceError(f"{where}: {key}", value, expected)
    return number


def core_count(key: str, value: Any, where: str) -> float:
    return _positive(key, value, where, "a number of cores > 0, e.g. 4 or 0.5")


def byte_size(key: str, value: Any, where: str) -> int:
    short_digits(f"{where}: {key}", value, f"whole bytes, or {SIZE_FORMS}")
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= LARGEST:
        return value
    if isinstance(value, str) and (number := _whole(value.strip())) is not None:
        return number
    if isinstance(value, str) and not value.strip().isdigit():
        return parse_size(value, f"{where}: {key}")
    raise ResourceError(f"{where}: {key}", value, f"whole bytes, or {SIZE_FORMS}")


def cost_amount(key: str, value: Any, where: str) -> float:
    short_digits(f"{where}: {key}", value, "a number >= 0 (an amount per hour saved)")
    amount = -1.0
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            amount = float(value)
    if not (0 <= amount < math.inf):
        raise ResourceError(f"{where}: {key}", value, "a number >= 0 (an amount per hour saved)")
    return amount
