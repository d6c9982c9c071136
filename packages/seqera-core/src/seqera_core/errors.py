"""Exceptions raised by seqera-core.

SeqeraError                 anything else, e.g. a scheduler failed (the CLI exits 1)
 ├── UsageError             invalid input, or a job that cannot run (the CLI exits 2)
 │    └── ResourceError     a resource value is malformed or out of range (ValueError)
 ├── HistoryError           the task history could not be read or written (never fails a job)
 └── WireError              a JSON document does not match the wire format (ValueError)
"""

from __future__ import annotations

import math

__all__ = ["HistoryError", "ResourceError", "SeqeraError", "UsageError", "WireError"]

_SHOWN = 200  # characters of a value an error message quotes


def _shown(value: object) -> str:
    """``repr(value)``, cut to its first characters when long. An int of more than 4,300
    digits has no repr (``sys.get_int_max_str_digits``): its digit count stands in."""
    if isinstance(value, int) and value.bit_length() > 14_000:  # over 4,200 digits
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        head = abs(value) // 10 ** (digits - 20)  # its first digits, without str() of it all
        return f"{'-' if value < 0 else ''}{head}... (an integer of about {digits} digits)"
    try:
        text = repr(value)
    except ValueError:  # an int of too many digits inside a list or mapping
        return f"<a {type(value).__name__} too large to show>"
    if len(text) > _SHOWN:
        return f"{text[: _SHOWN - 20]}... ({len(text)} characters)"
    return text


class SeqeraError(Exception):
    """Base class of every error seqera-core raises on purpose."""


class UsageError(SeqeraError):
    """Input that cannot be used, or a job that no configured platform can run."""


class ResourceError(UsageError, ValueError):
    """A resource value that cannot be used: names the field, the value and what was expected."""

    def __init__(self, field: str, value: object, expected: str) -> None:
        self.field = field
        self.value = value
        self.expected = expected
        super().__init__(f"{field}: {_shown(value)} is not valid; expected {expected}")


class HistoryError(SeqeraError):
    """The history store failed (locked, unreachable, dropped connection). Callers that
    record what a job used warn and carry on: the history informs, it never fails a job."""


class WireError(SeqeraError, ValueError):
    """A wire document that does not match the schema; ``problems`` lists each field's fault."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))
