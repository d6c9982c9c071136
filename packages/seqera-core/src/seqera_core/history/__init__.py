"""What finished tasks used: one table every engine writes and every resolver reads.

A row is one attempt of one task: the process it ran, what it asked for, what it used
(peak resident memory, cpu as percent of one core, wall time, input bytes) and how it
ended. Failed attempts are kept, flagged ``out_of_memory``/``time_limit`` with their
``cause``, and never count as a peak: a task killed at its limit says only that the limit
was too small.

:class:`History` is the protocol; :class:`SqliteHistory` (the embedded default) and
:class:`PostgresHistory` (a team's shared store, the ``postgresql`` extra) are its
siblings over one module of shared SQL, and :func:`open_history` picks one from a
location. Each keeps, beside the attempts, a summary of every process folded in as they
are written (:mod:`._tally`), so a learner reads what it sizes, not what the history
holds. Stores raise :class:`~seqera_core.errors.HistoryError`, never a driver's own
exception.
"""

from ._open import open_history
from ._protocol import History
from ._records import CAUSES, CpuUse, ProcessStats, TaskRecord, cause_of
from ._sqlite import SqliteHistory
from ._tally import Fed, Summary, Tally, Totals

#: The one default home of the task history: every engine's entry point records there
#: when no history is configured, ``seqera report`` and the sidecar read it by default.
DEFAULT_HISTORY = "~/.seqera/history.db"

__all__ = [
    "CAUSES",
    "DEFAULT_HISTORY",
    "CpuUse",
    "Fed",
    "History",
    "ProcessStats",
    "SqliteHistory",
    "Summary",
    "Tally",
    "TaskRecord",
    "Totals",
    "cause_of",
    "open_history",
]
