"""Exceptions raised by seqera-core.

SeqeraError                 anything else, e.g. a scheduler failed (the CLI exits 1)
 ├── UsageError             invalid input, or a job that cannot run (the CLI exits 2)
 │    └── ResourceError     a resource value is malformed or out of range (ValueError)
 ├── HistoryError           the task history could not be read or written (never fails a job)
 └── WireError              a JSON document does not match the wire format (ValueError)
"""

from __future__ import annotations

__all__ = ["HistoryError", "ResourceError", "SeqeraError", "UsageError", "WireError"]


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
        super().__init__(f"{field}: {value!r} is not valid; expected {expected}")


class HistoryError(SeqeraError):
    """The history store failed (locked, unreachable, dropped connection). Callers that
    record what a job used warn and carry on: the history informs, it never fails a job."""


class WireError(SeqeraError, ValueError):
    """A wire document that does not match the schema; ``problems`` lists each field's fault."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))
