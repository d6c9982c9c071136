"""What every task-history store answers: the protocol the resolvers, the report and the
session are written against (SQLite and PostgreSQL are its two siblings)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ._records import CpuUse, ProcessStats, TaskRecord
from ._tally import Fed, Summary, Totals

__all__ = ["History"]


@runtime_checkable
class History(Protocol):
    """A task history. Every method raises :class:`~seqera_core.errors.HistoryError` when
    the store fails (locked, unreachable); none raises a driver's own exception."""

    #: Where the store is (a path, or a URL with its password masked).
    path: str
    #: True when answers come from this machine: readers need no timeout.
    local: bool

    def record(self, records: Iterable[TaskRecord]) -> int:
        """Store finished attempts (a replayed one replaces itself); returns how many."""
        ...

    def stats(self, process: str) -> ProcessStats | None:
        """The process's history, or ``None`` if it never finished an attempt here."""
        ...

    def attempts(self, after: int = 0, limit: int = 100_000) -> tuple[int, list[TaskRecord]]:
        """Attempts stored after cursor ``after`` (oldest first) and the cursor to pass next.

        A replayed attempt comes back once more, as a new row. A learner reads the
        summaries and a window of each process it sizes instead (:meth:`feed` then
        follows what is new).
        """
        ...

    def feed(self, after: int = 0, limit: int = 10_000) -> list[Fed]:
        """Attempts numbered after ``after``, oldest first, each with its number and whether
        it replayed one stored before (then every summary has it already)."""
        ...

    def summaries(self, process: str | None = None) -> tuple[Totals, list[Summary]]:
        """The totals and every process's summary in the order processes first came
        (``process`` given: that process's and its strata's), read as of one moment."""
        ...

    def window(self, summary: Summary, kind: str, through: int, limit: int) -> list[TaskRecord]:
        """The newest ``limit`` attempts of ``summary``'s process or stratum numbered up to
        ``through`` that count in the right-sizer's ``kind`` window (``memory``, ``time``,
        ``out_of_memory``, ``time_limit``), oldest first; by an index."""
        ...

    def windows(
        self, summary: Summary, through: int, limits: Mapping[str, int]
    ) -> dict[str, list[TaskRecord]]:
        """:meth:`window` of each kind of ``limits`` (kind: its limit), the same rows, read
        together where one read serves several."""
        ...

    def first_declared(self, process: str) -> TaskRecord | None:
        """The earliest first attempt (``attempt == 1``) of ``process`` that was given
        cpus, memory or time (what the process declares), or ``None``; by an index."""
        ...

    def recent_runs(self, limit: int = 5) -> list[str]:
        """The ``limit`` runs that stored attempts last, the latest last."""
        ...

    def records(self, run_ids: Sequence[str] = (), since: float | None = None) -> list[TaskRecord]:
        """Every attempt of the runs named (all runs when none), finished at or after
        ``since`` (seconds since the epoch) when given, oldest first; by the run id or
        the finish time's index."""
        ...

    def cpu_use(self) -> list[CpuUse]:
        """Per process with successful runs that report both, the cores reserved and used."""
        ...

    def processes(self) -> list[str]:
        """Every process with at least one successful attempt, sorted."""
        ...

    def count(self) -> int:
        """How many attempts are stored."""
        ...

    def close(self) -> None:
        """Release the store's connection."""
        ...
