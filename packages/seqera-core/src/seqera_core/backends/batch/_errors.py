"""What the batch backends raise when a scheduler command fails for good.

::

    SeqeraError
    └── SchedulerError        a command failed after any retries (``result`` says how)
        ├── SubmitError       a batch failed part-way: what went out, what is unknown
        └── Unsent            one submission given up on (internal to the submit path)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import SeqeraError
from ..base import JobHandle
from ._commands import CommandResult

__all__ = ["SchedulerError", "SubmitError", "Unsent"]


class SchedulerError(SeqeraError):
    """A scheduler command failed for good (after any retries)."""

    def __init__(self, message: str, result: CommandResult | None = None) -> None:
        self.result = result
        detail = f": {result.describe()}" if result is not None else ""
        super().__init__(message + detail)


class SubmitError(SchedulerError):
    """A batch submission that failed part-way. Keep what it carries: those jobs run.

    Attributes:
        submitted: the handles of the jobs the scheduler accepted before the failure;
            they run, so poll or cancel them like any other.
        positions: for each handle in ``submitted``, its job's index in the list given to
            ``submit`` (same length; ``range(len(submitted))`` when not known).
        unknown: indices of jobs whose outcome could not be learnt: the scheduler may
            have them, and could not be asked (it stayed unreachable). Every other index
            not in ``positions`` was not submitted.
        errors: for each job not submitted, by index, why: its own submission's error
            (two jobs refused in one batch each keep the scheduler's words about them).
    """

    def __init__(
        self,
        message: str,
        result: CommandResult | None,
        submitted: Sequence[JobHandle],
        *,
        positions: Sequence[int] | None = None,
        unknown: Sequence[int] = (),
        errors: Mapping[int, str] | None = None,
    ) -> None:
        self.submitted = tuple(submitted)
        self.positions = tuple(range(len(self.submitted)) if positions is None else positions)
        self.unknown = tuple(unknown)
        super().__init__(message, result)
        self.errors: dict[int, str] = dict(errors or {})

    def error_of(self, position: int) -> str:
        """Why the job at ``position`` was not submitted: its own error, else the batch's."""
        return self.errors.get(position, str(self))


class Unsent(SchedulerError):
    """A submission given up on; ``unknown`` when the scheduler could not be asked,
    ``refused`` when it answered no for this job's own reasons (account, option)."""

    def __init__(
        self, message: str, result: CommandResult | None, unknown: bool, refused: bool = False
    ) -> None:
        self.unknown = unknown
        self.refused = refused
        super().__init__(message, result)
