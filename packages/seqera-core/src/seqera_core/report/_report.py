"""One report: the figures, the right-sizer's advice and the snippets, built from a history.

:func:`build` reads the history once; everything after it is a pure function of the
:class:`Report` (its JSON document, the short summary an engine prints, the HTML page).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs
from attrs import frozen

from ..history import History, TaskRecord
from ..platforms import Platform
from ..units import GIB, format_bytes, format_seconds
from ._advice import Advice, advise
from ._figures import Summary, summary
from ._records import select
from ._snippets import nextflow_config, nextflow_directives, snakemake_profile

__all__ = ["Report", "amount", "build", "document", "failures_text", "headline"]

_CAUSE_WORDS = {
    "out_of_memory": "out of memory",
    "time_limit": "time limit",
    "node_failure": "node failure",
    "preempted": "preempted",
    "cancelled": "cancelled",
    "other": "other",
}


_UNITS = {
    "memory": "GB-hours (10^9 bytes x hours)",
    "cpus": "core-hours",
    "time": "hours",
    "advice.memory": "bytes",
    "advice.time": "seconds",
}


@frozen
class Report:
    """Everything a report shows, for the HTML page, ``--json`` and an engine's summary."""

    source: str
    summary: Summary
    advice: dict[str, Advice]
    nextflow: str
    snakemake: str
    records: tuple[TaskRecord, ...]
    generated: float

    @property
    def saved_memory(self) -> float:
        """GB-hours the right-sizer would have saved on this selection."""
        return sum(a.saved_memory for a in self.advice.values())

    @property
    def saved_cpus(self) -> float:
        """Core-hours the right-sizer would have saved on this selection."""
        return sum(a.saved_cpus for a in self.advice.values())

    @property
    def saved_cost(self) -> float | None:
        """The saving at the platform's rates, when it has rates."""
        costs = self.summary.costs
        if costs is None:
            return None
        gib_hours = self.saved_memory * 1e9 / GIB
        return self.saved_cpus * costs.rates.core_hour + gib_hours * costs.rates.gib_hour


def build(
    history: History,
    run_ids: Sequence[str] = (),
    *,
    since: float | None = None,
    platform: Platform | None = None,
    source: str = "the history",
) -> Report:
    """The report of ``run_ids`` (every run when empty) in ``history``.

    Raises:
        UsageError: the history holds no task, a run id it does not hold, or no task
            finished since ``since``.
    """
    records = select(history, run_ids, since, where=source)
    advice = advise(history, records)
    return Report(
        source=source,
        summary=summary(records, platform),
        advice=advice,
        nextflow=nextflow_config(advice.values()),
        snakemake=snakemake_profile(advice.values()),
        records=tuple(records),
        generated=time.time(),
    )


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if attrs.has(type(value)):
        return {f.name: _plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
    return value


def document(report: Report) -> dict[str, Any]:
    """The report's figures as one JSON-ready document (what ``--json`` prints)."""
    figures = _plain(report.summary)
    for process in figures["processes"]:
        advice = report.advice.get(process["process"])
        process["advice"] = None if advice is None else {
            **_plain(advice), "nextflow": nextflow_directives(advice)
        }  # fmt: skip
    return {
        "source": report.source,
        "generated": report.generated,
        "units": _UNITS,
        **figures,
        "saving": {
            "memory": report.saved_memory,
            "cpus": report.saved_cpus,
            "cost": report.saved_cost,
        },
        "snippets": {"nextflow": report.nextflow, "snakemake": report.snakemake},
    }


def amount(value: float) -> str:
    """A figure for people: whole above 100, two decimals above 1, two digits below."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1 or value == 0:
        return f"{value:.2f}"
    return f"{value:.2g}"


def failures_text(failures: dict[str, int]) -> str:
    """``3 failed (2 out of memory, 1 other)`` or ``no failure``."""
    total = sum(failures.values())
    if not total:
        return "no failure"
    parts = ", ".join(f"{n} {_CAUSE_WORDS.get(c, c)}" for c, n in failures.items())
    return f"{total} failed ({parts})"


def headline(report: Report, limit: int = 3) -> list[str]:
    """A few lines for the end of a run: totals, the worst processes, the saving."""
    figures = report.summary
    memory, cpus = figures.memory, figures.cpus
    lines = [
        f"{figures.tasks} tasks, {failures_text(figures.failures)}; memory {amount(memory.used)} "
        f"of {amount(memory.requested)} GB-h used, {amount(memory.wasted)} wasted; cpus "
        f"{amount(cpus.used)} of {amount(cpus.requested)} core-h busy"
    ]
    if figures.costs is not None:
        lines[0] += f"; cost {amount(figures.costs.total)}, {amount(figures.costs.wasted)} wasted"
    for process in figures.processes[:limit]:
        if process.memory.wasted <= 0 and process.cpus.wasted <= 0:
            break
        text = f"  {process.process}: {amount(process.memory.wasted)} GB-h memory and " \
               f"{amount(process.cpus.wasted)} core-h wasted"  # fmt: skip
        peak = process.distributions.get("peak_memory")
        asked = process.distributions.get("memory")
        if peak is not None and asked is not None:
            text += f" (asks {format_bytes(int(asked.maximum))}, peaks at " \
                    f"{format_bytes(int(peak.maximum))})"  # fmt: skip
        advice = report.advice.get(process.process)
        if advice is not None and advice.memory is not None:
            text += f"; next time {format_bytes(advice.memory)}"
            if advice.time is not None:
                text += f", {format_seconds(advice.time)}"
        lines.append(text)
    if report.advice:
        lines.append(
            f"the right-sizer would have saved {amount(report.saved_memory)} GB-h of memory and "
            f"{amount(report.saved_cpus)} core-h on this run"
        )
    return lines
