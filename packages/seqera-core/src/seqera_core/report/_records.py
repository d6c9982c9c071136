"""Which history rows a report covers, and why each failed attempt failed.

A report covers the attempts of the runs asked for (every run when none is named), and
of those only the ones that finished at or after ``since`` when it is given (a row with
no finish time, such as a replayed trace's, is then left out). A run id the history does
not hold, or a selection with no attempt at all, is a :class:`UsageError` that says what
the history does hold: the CLI turns it into exit 2.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from ..errors import ResourceError, UsageError
from ..history import CAUSES, History, TaskRecord, cause_of

__all__ = ["CAUSES", "cause", "parse_since", "select"]

_SINCE_FORMS = (
    "an ISO date or time, e.g. 2026-11-24, 2026-11-24T13:00 (local time) or 2026-11-24T13:00Z"
)
_SHOWN_RUNS = 5


def cause(record: TaskRecord) -> str | None:
    """Why an attempt failed (one of :data:`CAUSES`), or ``None`` when it succeeded; an older
    row's cause is read from its out-of-memory and time-limit flags."""
    return cause_of(record)


def parse_since(text: str) -> float:
    """Epoch seconds of ``--since``: a date (midnight) or a date and time, local unless zoned."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ResourceError("--since", text, _SINCE_FORMS) from None
    try:
        return when.timestamp()  # a naive time is read as local time, as a user types it
    except (OverflowError, ValueError, OSError):
        # Past what the C library's mktime takes (0001-01-01 in a zone east of UTC): so
        # far back that the zone's hours cannot matter, counted from the epoch as UTC.
        aware = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
        return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds()


def select(
    history: History,
    run_ids: Sequence[str] = (),
    since: float | None = None,
    *,
    where: str = "the history",
) -> list[TaskRecord]:
    """The attempts of ``run_ids`` (all runs when empty) finished at or after ``since``.

    The table holds one row per attempt (a replayed one replaces itself), so the rows of
    the runs asked for are read once, by the run id (the key); when a run is not there,
    the latest runs are named from the newest attempts, never the whole table.
    """
    records = history.records(run_ids)
    found = {r.run_id for r in records}
    missing = [run for run in run_ids if run not in found]
    if missing or not records:
        known = history.recent_runs(_SHOWN_RUNS)
        if not known:
            raise UsageError(f"{where} holds no task yet: nothing to report")
        raise ResourceError(
            "--run", missing[0], f"a run id in {where}; its latest runs are {', '.join(known)}"
        )
    if since is not None:
        records = [r for r in records if r.finished is not None and r.finished >= since]
        if not records:
            raise UsageError(f"no task in {where} finished since the --since time")
    return records
