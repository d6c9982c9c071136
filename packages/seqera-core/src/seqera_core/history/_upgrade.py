"""An older history's summaries, built by the database: set-based, not row by row.

A history written before the summaries existed (version 1: attempts only) gains them once,
when it is first opened. Folding its attempts one by one in Python cost ~30 us of CPU a
row (a record built per row, a stratum's key per row): 2,551 s for 10,000,000 rows on a
loaded machine, the history unusable meanwhile. Here the database aggregates instead:

1. a ``GROUP BY process, cpus, container`` of the successful attempts and one of the
   failed ones (each walks the stratum index: no sort) give, per stored group, every
   count and maximum a summary holds, its first and last attempt numbers, and each
   tally's runs, largest use and sum of log uses (with the totals' sums);
2. per group, one read by the stratum index gives each tally's squared deviations from
   that mean (two passes: no cancellation) and its second-largest use.

Groups whose stored cpus read as the same bounded value (TaskRecord's converters: a cpus
outside the contract reads as unknown) are merged, and each process's whole summary is
the merge of its strata (Chan et al.'s pairwise update of the moments). Counts, maxima,
attempt numbers and the two largest log uses are exactly what folding every row in order
(:func:`._tally.fold`) gives; the log mean, its squared deviations and the totals' sums
are the same sums in another order (equal to ~1e-15 of their size, as a replayed
attempt's own fold already is).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..bounds import MAX_BYTES, MAX_CPU_PERCENT, MAX_CPUS, MAX_SECONDS, within
from ._sql import CURSOR, stratum_clauses
from ._tally import Summary, Tally, Totals, stratum_key

__all__ = ["fold_table"]

Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def _bounded(column: str, maximum: int) -> str:
    # TaskRecord's converters (bounds.within): a NaN or an infinity fails both comparisons
    return f"(CASE WHEN {column} >= 0 AND {column} <= {maximum} THEN {column} END)"


_PEAK = _bounded("peak_memory", MAX_BYTES)
_REAL = _bounded("realtime", MAX_SECONDS)
_BUSY = _bounded("cpu_percent", MAX_CPU_PERCENT)
# succeeded as Python reads it (any value but 0 is true), and its complement
_OK, _FAILED = "succeeded <> FALSE", "succeeded = FALSE"
# the uses each tally counts (Tally.add: above 0; bounded, so 0 is the only one below)
_USES = {"memory": _PEAK, "time": _REAL}


def _ln(value: str, dialect: str) -> str:
    """The log of a use, NULL for 0 (PostgreSQL refuses ln(0)) or unknown."""
    real = "REAL" if dialect == "sqlite" else "DOUBLE PRECISION"
    return f"ln(CAST(NULLIF({value}, 0) AS {real}))"


def _groups(dialect: str) -> tuple[str, str]:
    """Pass 1: per stored (process, cpus, container), its successful attempts' and its
    failed attempts' aggregates (two queries: each aggregate of the first needs no test
    of the outcome, the row's costliest part at 10,000,000 rows). Both walk the stratum
    index in order, so the database groups without sorting."""
    cursor = CURSOR[dialect]
    head = f"SELECT process, cpus, container, MIN({cursor}), MAX({cursor}), COUNT(*)"
    tallies = []
    for use in _USES.values():
        # runs, sum of log uses (the largest is the group's maximum: the same value)
        tallies += [f"COUNT(NULLIF({use}, 0))", f"SUM({_ln(use, dialect)})"]
    succeeded = [
        f"MAX({_PEAK})", f"MAX({_BUSY})", f"MAX({_REAL})",
        f"COUNT({_BUSY})",  # successful attempts that report %cpu
        *tallies,
        # the totals (Totals.add): peak x run time (1 s when unknown), and run time; a
        # use of 0 adds 0
        f"SUM({_PEAK} * COALESCE(NULLIF({_REAL}, 0), 1.0))", f"SUM({_REAL})",
    ]  # fmt: skip
    failed = []
    for flag, given in (("out_of_memory", _bounded("memory", MAX_BYTES)),
                        ("time_limit", _bounded("time", MAX_SECONDS))):  # fmt: skip
        failed += [f"SUM(CASE WHEN {flag} = TRUE THEN 1 ELSE 0 END)",
                   f"MAX(CASE WHEN {flag} = TRUE THEN {given} END)"]  # fmt: skip
    by = "GROUP BY process, cpus, container"
    return (f"{head}, {', '.join(succeeded)} FROM task_history WHERE {_OK} {by}",
            f"{head}, {', '.join(failed)} FROM task_history WHERE {_FAILED} {by}")  # fmt: skip


def _spread(dialect: str, cpus: float | None, container: str | None) -> tuple[str, list[Any]]:
    """Pass 2 of one group, by the stratum index: per tally, the squared deviations of the
    log uses from a mean, how many uses equal a largest, and the largest below it.
    Parameters: per tally (mean, largest, largest), then the group's key."""
    param = "?" if dialect == "sqlite" else "%s"
    columns = []
    for use in _USES.values():
        columns += [f"SUM(power({_ln(use, dialect)} - {param}, 2))",
                    f"SUM(CASE WHEN {use} = {param} THEN 1 ELSE 0 END)",
                    f"MAX(CASE WHEN {use} > 0 AND {use} < {param} THEN {use} END)"]  # fmt: skip
    clauses = [f"process = {param}"]
    params: list[Any] = []
    clauses += stratum_clauses(cpus, container, param, params)
    clauses.append(_OK)
    return (f"SELECT {', '.join(columns)} FROM task_history "
            f"WHERE {' AND '.join(clauses)}"), params  # fmt: skip


@attrs.define
class _Moments:
    """A tally's runs, largest use, log mean, squared deviations and two largest log uses,
    mergeable (Chan, Golub and LeVeque's pairwise update)."""

    runs: int = 0
    largest: float = 0.0
    mean: float = 0.0
    m2: float = 0.0
    top: tuple[float, ...] = ()  # the two largest uses, largest first

    def merge(self, other: _Moments) -> None:
        if not other.runs:
            return
        runs = self.runs + other.runs
        delta = other.mean - self.mean
        self.mean += delta * other.runs / runs
        self.m2 += other.m2 + delta * delta * self.runs * other.runs / runs
        self.runs = runs
        self.largest = max(self.largest, other.largest)
        self.top = tuple(sorted((*self.top, *other.top), reverse=True)[:2])

    def tally(self) -> Tally:
        # the logs as Tally.add takes them (math.log of the use itself): exactly its top two
        logs = [math.log(use) for use in self.top] + [-math.inf, -math.inf]
        return Tally(self.runs, self.largest, self.mean, self.m2, logs[0], logs[1])


def _merge(summary: Summary, other: Summary) -> None:
    """Fold ``other``'s counts and maxima into ``summary`` (its tallies apart)."""
    summary.first_seq = min(summary.first_seq, other.first_seq)
    summary.last_seq = max(summary.last_seq, other.last_seq)
    for name in ("attempts", "succeeded", "out_of_memory", "time_limit", "cpu_runs"):
        setattr(summary, name, getattr(summary, name) + getattr(other, name))
    for name in ("peak_memory", "cpu_percent", "realtime", "failed_memory", "failed_time",
                 "cpus_reserved", "cpus_busy"):  # fmt: skip
        values = [v for v in (getattr(summary, name), getattr(other, name)) if v is not None]
        setattr(summary, name, max(values) if values else None)


def _group(row: Sequence[Any], failed: Sequence[Any] | None) -> Summary:
    """One stored group's summary (its tallies apart) from its pass-1 rows."""
    process, cpus, container = row[:3]
    bounded = within(cpus, MAX_CPUS)
    peak, busy, realtime, busy_runs = row[6:10] if row[5] else (None, None, None, 0)
    oom, failed_memory, limit, failed_time = (0, None, 0, None) if failed is None else failed[6:]
    counted = bounded is not None and busy_runs > 0  # CpuUse: cpus and %cpu both known
    summary = Summary(
        process, stratum_key(bounded, container), None if bounded is None else float(bounded),
        container, row[3], row[4], row[5], row[5], peak, busy, realtime, oom or 0, limit or 0,
        failed_memory, failed_time, cpu_runs=busy_runs if counted else 0,
        cpus_reserved=bounded if counted else None, cpus_busy=busy if counted else None,
    )  # fmt: skip
    if failed is not None:
        summary.first_seq, summary.last_seq = min(row[3], failed[3]), max(row[4], failed[4])
        summary.attempts += failed[5]
    return summary


def fold_table(execute: Execute, dialect: str) -> tuple[Totals, list[Summary]]:
    """The totals and every summary (each process's and its strata's) of the attempts
    stored, as folding them in order gives (see the module's rules); in a transaction."""
    totals = Totals()
    succeeded, failed = (execute(query, ()) for query in _groups(dialect))
    # a group with no successful attempt: its failures alone (no use, no tally)
    kills = {tuple(row[:3]): row for row in failed}
    ran = {tuple(row[:3]) for row in succeeded}
    empty = [(*key, row[3], row[4], 0, None, None, None, 0, 0, None, 0, None, None, None)
             for key, row in kills.items() if key not in ran]  # fmt: skip
    strata: dict[tuple[str, str], tuple[Summary, dict[str, _Moments]]] = {}
    for row in [*succeeded, *empty]:
        process, cpus, container = row[:3]
        summary = _group(row, kills.get((process, cpus, container)))
        totals.last_seq = max(totals.last_seq, summary.last_seq)
        totals.attempts += summary.attempts
        moments = {}
        for index, name in enumerate(_USES):
            runs, logs = row[10 + 2 * index : 12 + 2 * index]
            # the largest use is the maximum of the uses: a use above 0 when there are runs
            largest = (summary.peak_memory, summary.realtime)[index] if runs else 0.0
            moments[name] = _Moments(runs, largest or 0.0, logs / runs if runs else 0.0)
        totals.memory_runs += moments["memory"].runs
        totals.memory_total += row[14] or 0.0
        totals.time_runs += moments["time"].runs
        totals.time_total += row[15] or 0.0
        if moments["memory"].runs or moments["time"].runs:
            query, params = _spread(dialect, cpus, container)
            means = [v for m in moments.values() for v in (m.mean, m.largest, m.largest)]
            (spread,) = execute(query, [*means, process, *params])
            for index, m in enumerate(moments.values()):
                squares, at_top, below = spread[3 * index : 3 * index + 3]
                if m.runs:
                    m.m2 = squares or 0.0
                    m.top = (m.largest, m.largest if at_top > 1 else below)[: min(m.runs, 2)]
        for key in ((process, summary.stratum), (process, "")):
            found = strata.get(key)
            if found is None:
                whole = key[1] == ""
                copy = attrs.evolve(summary, stratum="", cpus=None, container=None) if whole \
                    else summary  # fmt: skip
                strata[key] = (copy, {n: attrs.evolve(m) for n, m in moments.items()})
                continue
            _merge(found[0], summary)
            for name, m in moments.items():
                found[1][name].merge(m)
    summaries = []
    for summary, moments in strata.values():
        summary.memory, summary.time = moments["memory"].tally(), moments["time"].tally()
        summaries.append(summary)
    return totals, summaries
