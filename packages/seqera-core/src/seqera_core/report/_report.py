"""One report: the figures, the right-sizer's advice and the snippets, built from a history.

:func:`build` reads the history once; everything after it is a pure function of the
:class:`Report` (its JSON document, the short summary an engine prints, the HTML page).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

from ..history import History, TaskRecord
from ..units import GIB, format_bytes, format_seconds
from ._advice import Advice, advise
from ._backends import Routing, routing
from ._figures import GB_HOUR, Summary, Usage, summary
from ._records import select
from ._snippets import nextflow_config, nextflow_directives, snakemake_profile
from ._timeline import Span, spans
from ._units import BYTE_SECONDS, CORE_SECONDS, SECONDS, number, text

if TYPE_CHECKING:  # a platform file's reader (YAML, the catalogues): only with --platform
    from ..platforms import Platform

__all__ = [
    "Report",
    "build",
    "cpu_text",
    "document",
    "failures_text",
    "headline",
    "memory_text",
    "money",
]

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
    "declared.memory": "bytes",
    "declared.time": "seconds",
    "longest": "seconds",
    "limit_share": "run time / time limit",
    "advice.memory": "bytes",
    "advice.time": "seconds",
    "timeline": "epoch seconds",
    "routing.backends.run_hours": "hours",
    "routing.backends.cpus": "core-hours",
    "routing.backends.memory": "GB-hours (10^9 bytes x hours)",
    "routing.saving.finish": "seconds from the first submission to the last end, summed over runs",
    "routing.saving.alternatives.wait": "seconds",
    "routing.saving.alternatives.cores": "cores",
    "routing.saving.time_saved": "seconds (positive: routing finished sooner)",
    "routing.saving.cost_saved": "the platform's currency (positive: routing was cheaper)",
}
# The totals of the selection, under "summary" (``seqera report --json | jq .summary``).
_TOTALS = ("runs", "engines", "backends", "tasks", "attempts", "succeeded", "failures",
           "memory", "cpus", "run_hours", "limit_hours", "costs", "missing")  # fmt: skip


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
    timeline: tuple[Span, ...] = ()
    #: Per backend, and what routing saved; None when the selection ran on one backend.
    routing: Routing | None = None

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
    figures = summary(records, platform)
    return Report(
        source=source,
        summary=figures,
        advice=advice,
        nextflow=nextflow_config(advice.values()),
        snakemake=snakemake_profile(advice.values()),
        records=tuple(records),
        generated=time.time(),
        timeline=spans(records, len(figures.runs)),
        routing=routing(records, platform),
    )


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float):  # most of a report: leaves
        return value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if attrs.has(type(value)):
        return {f.name: _plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
    return value


def document(report: Report) -> dict[str, Any]:
    """The report's figures as one JSON-ready document (what ``--json`` prints): ``summary``
    (the selection's totals and what is not measured), ``processes`` (one entry each, with
    the right-sizer's ``advice``), ``timeline`` (every attempt placed in time), ``saving``,
    ``routing`` (per backend, and the estimate of what routing saved against each backend
    alone; null when one backend ran everything), ``snippets``; ``units`` names the unit
    of each figure."""
    figures = _plain(report.summary)
    processes = figures.pop("processes")
    for process in processes:
        advice = report.advice.get(process["process"])
        process["advice"] = None if advice is None else {
            **_plain(advice), "nextflow": nextflow_directives(advice)
        }  # fmt: skip
    assert set(figures) == set(_TOTALS), "every total is documented"
    return {
        "source": report.source,
        "generated": report.generated,
        "units": _UNITS,
        "summary": figures,
        "processes": processes,
        "timeline": _plain(report.timeline),
        "saving": {
            "memory": report.saved_memory,
            "cpus": report.saved_cpus,
            "cost": report.saved_cost,
        },
        "routing": _plain(report.routing),
        "snippets": {"nextflow": report.nextflow, "snakemake": report.snakemake},
    }


def memory_text(gb_hours: float) -> str:
    """A memory area (GB-hours) in the unit it reads best in, e.g. ``12.3 MB·s``."""
    return text(gb_hours * GB_HOUR, BYTE_SECONDS)


def cpu_text(core_hours: float) -> str:
    """A CPU area (core-hours) in the unit it reads best in, e.g. ``3.40 core·s``."""
    return text(core_hours * 3600, CORE_SECONDS)


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
        f"{figures.tasks} tasks, {failures_text(figures.failures)}; "
        f"memory {_area(memory, memory_text, 'used')}; CPU {_area(cpus, cpu_text, 'busy')}"
    ]
    if figures.costs is not None:
        lines[0] += f"; cost {money(figures.costs.total)}, {money(figures.costs.wasted)} wasted"
    if report.routing is not None:
        lines.append(_routing_line(report.routing))
    for process in figures.processes[:limit]:
        if process.memory.wasted <= 0 and process.cpus.wasted <= 0:
            break
        line = f"  {process.process}: {memory_text(process.memory.wasted)} of memory and " \
               f"{cpu_text(process.cpus.wasted)} wasted"  # fmt: skip
        peak = process.distributions.get("peak_memory")
        asked = process.distributions.get("memory")
        if peak is not None and asked is not None:
            line += f" (asks {format_bytes(int(asked.maximum))}, peaks at " \
                    f"{format_bytes(int(peak.maximum))})"  # fmt: skip
        advice = report.advice.get(process.process)
        if advice is not None and advice.memory is not None:
            line += f"; next time {format_bytes(advice.memory)}"
            if advice.time is not None:
                line += f", {format_seconds(advice.time)}"
        lines.append(line)
    lines += [f"not measured: {sentence}" for sentence in figures.missing]
    if report.advice:
        lines.append(
            f"the right-sizer would have saved {memory_text(report.saved_memory)} of memory and "
            f"{cpu_text(report.saved_cpus)} on this run"
        )
    return lines


def _routing_line(routing: Routing) -> str:
    """``backends: local 31 tasks, slurm 11 tasks; 4.70 s sooner than all on slurm ...``."""
    line = "backends: " + ", ".join(f"{b.backend} {b.tasks} tasks" for b in routing.backends)
    saving = routing.saving
    if saving is not None and saving.time_saved is not None and saving.fastest is not None:
        took = text(abs(saving.time_saved), SECONDS)
        if abs(saving.time_saved) < 0.05:
            line += f"; routed, about as soon as all on {saving.fastest} alone (an estimate)"
        else:
            way = "sooner" if saving.time_saved > 0 else "later"
            line += f"; routed, {took} {way} than all on {saving.fastest} alone (an estimate)"
    elif saving is not None:
        line += "; no single backend could have run every task"
    return line


def _area(usage: Usage, show: Callable[[float], str], verb: str) -> str:
    """``1.2 GB·h used of 3.4 GB·h, 2.2 GB·h wasted``, or what is not known of it."""
    if not usage.measured and not usage.requested:
        return "not measured"
    if usage.used or usage.wasted or not usage.unmeasured:
        return f"{show(usage.used)} {verb} of {show(usage.requested)}, {show(usage.wasted)} wasted"
    return f"{show(usage.requested)} reserved, {verb} not measured"


def money(value: float) -> str:
    """An amount at the platform's rates: cents shown, never ``1e-05``."""
    return number(value) if abs(value) >= 0.01 or value == 0 else "< 0.01"
