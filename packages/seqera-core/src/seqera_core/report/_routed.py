"""The page's section on routing: per backend, and what routing saved (HTML, no script).

Shown only when the selection ran on more than one backend (:class:`~._backends.Routing`);
a single-backend page has no such section. Every number goes through :mod:`._units` (plain
decimals, one unit per column) or :func:`~._report.money`; the routing reasons are shown
in a few words (:func:`~._reasons.phrase`, :func:`~._reasons.short`), never as the raw
text, which writes its numbers with ``%g``. Names from the history are escaped.
"""

from __future__ import annotations

import html

from ._backends import BackendFigures, Routing
from ._figures import GB_HOUR, Usage
from ._reasons import short
from ._report import money
from ._routing import Alternative, Saving
from ._units import BYTE_SECONDS, CORE_SECONDS, SECONDS, Unit, number, pick, text

__all__ = ["routing_section", "table"]


def table(identifier: str, head: list[str], rows: list[list[str]]) -> str:
    """A table in a box that scrolls sideways on its own (cells are HTML already)."""
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="wide"><table id="{identifier}"><tr>{header}</tr>\n{body}\n</table></div>'


def _area(usage: Usage, scale: float, unit: Unit, part: str) -> str:
    if not usage.measured and not usage.requested:
        return "not measured"
    if part != "requested" and not usage.measured:
        return "not measured"
    return number(unit.of(getattr(usage, part) * scale))


def _reasons(figures: BackendFigures) -> str:
    lines = [f"{c.jobs} {'job' if c.jobs == 1 else 'jobs'}: {c.reason}" for c in figures.reasons]
    return "<br>".join(html.escape(line) for line in lines)


def _backends_table(routing: Routing) -> str:
    rows_of = routing.backends
    memory = pick([b.memory.requested * GB_HOUR for b in rows_of], BYTE_SECONDS)
    cpu = pick([b.cpus.requested * 3600 for b in rows_of], CORE_SECONDS)
    hours = pick([b.run_hours * 3600 for b in rows_of], SECONDS)
    priced = any(b.cost is not None for b in rows_of)
    head = ["backend", "tasks", f"run time {hours.name}", f"CPU {cpu.name} reserved", "busy",
            f"memory {memory.name} requested", "used"]  # fmt: skip
    head += ["cost"] if priced else []
    head.append("why its jobs went there")
    rows = []
    for b in rows_of:
        tasks = f"{b.tasks}" + (f" ({b.attempts} attempts)" if b.attempts != b.tasks else "")
        if b.failed:
            tasks += f", {b.failed} failed"
        row = [html.escape(b.backend), tasks, number(hours.of(b.run_hours * 3600)),
               _area(b.cpus, 3600, cpu, "requested"), _area(b.cpus, 3600, cpu, "used"),
               _area(b.memory, GB_HOUR, memory, "requested"),
               _area(b.memory, GB_HOUR, memory, "used")]  # fmt: skip
        if priced:
            row.append("not priced" if b.cost is None else money(b.cost))
        row.append(_reasons(b))
        rows.append(row)
    return table("backends", head, rows)


def _cores(value: float) -> str:
    return f"{value:,.0f}" if value.is_integer() else number(value)


def _assumed(alternative: Alternative) -> str:
    cores = ("as many cores as asked (it ran nothing here)" if alternative.cores is None
             else f"{_cores(alternative.cores)} cores at once")  # fmt: skip
    wait = ("no wait (the router gave no time there)" if alternative.wait is None
            else f"{text(alternative.wait, SECONDS)} wait a task")  # fmt: skip
    return f"{cores}, {wait}"


def _compared(saving: Saving) -> str:
    """The saving in words, against the fastest and the cheapest single backend."""
    parts: list[str] = []
    if saving.fastest is None:
        return ("No single backend could have run every task (see the table): routing was "
                "the only way to run them all in one run.")  # fmt: skip
    if saving.time_saved is not None:
        shown = text(abs(saving.time_saved), SECONDS)
        if abs(saving.time_saved) < 0.05:
            parts.append(f"about as soon as all on {saving.fastest}, the fastest alone")
        elif saving.time_saved > 0:
            parts.append(f"{shown} sooner than all on {saving.fastest}, the fastest alone")
        else:
            parts.append(f"{shown} later than all on {saving.fastest}, the fastest alone")
    if saving.cost_saved is not None and saving.cheapest is not None:
        shown = money(abs(saving.cost_saved))
        if saving.cost_saved >= 0:
            parts.append(f"{shown} cheaper than all on {saving.cheapest}, the cheapest alone")
        else:
            parts.append(f"{shown} dearer than all on {saving.cheapest}, the cheapest alone")
    words = "Routed, the tasks ended " + " and ".join(parts) + " (an estimate: see below)."
    if saving.left_out:
        words += (f" {saving.left_out} attempts have no run time or end in the history (see "
                  "Not measured) and are left out of it.")  # fmt: skip
    return words


def _against(seconds: float) -> str:
    """``4.70 s later``, ``2.00 min sooner`` or ``the same`` (under a twentieth of a second)."""
    if abs(seconds) < 0.05:
        return "the same"
    return f"{text(abs(seconds), SECONDS)} {'later' if seconds > 0 else 'sooner'}"


def _saving_table(saving: Saving) -> str:
    unit = pick([saving.finish] + [a.finish for a in saving.alternatives], SECONDS)
    priced = saving.cost is not None
    head = ["where", "tasks it could not run", f"finish {unit.name}", "against routed"]
    head += ["cost"] if priced else []
    head.append("assumed there")
    rows = [["routed (this run)", "none", number(unit.of(saving.finish)), ""]
            + ([money(saving.cost or 0.0)] if priced else []) + ["as it ran"]]  # fmt: skip
    for a in saving.alternatives:
        unable = "none" if not a.unable else html.escape(f"{a.unable} ({short(a.why)})")
        row = [html.escape(f"all on {a.backend}"), unable,
               "could not" if a.finish is None else number(unit.of(a.finish)),
               "" if a.finish is None else _against(a.finish - saving.finish)]  # fmt: skip
        if priced:
            row.append("could not" if a.cost is None else money(a.cost))
        row.append(html.escape(_assumed(a)))
        rows.append(row)
    return table("routing", head, rows)


_HOW = (
    "How this is estimated: every attempt runs as long on any backend as it was measured "
    "to run here; a backend's wait (submission to start, and the status poll) is the least "
    "the router expected there before a task's start, from the estimate it recorded for "
    "each candidate; an attempt was submitted at its start less its own backend's wait; a "
    "backend runs at most the cores it was seen to run at once in this selection, first "
    "come, first served; cost is each attempt's cores and memory at the backend's rates "
    "times its run time (a backend without rates costs nothing, as the router counts it). "
    "Which task waited for which is not in the history: each keeps its submission time, so "
    "a chain of short tasks that would each wait longer elsewhere is counted once, not "
    "once a link. Finish is from the first submission to the last end, summed over runs."
)


def routing_section(routing: Routing | None) -> str:
    """The section's HTML, or nothing when one backend ran everything."""
    if routing is None:
        return ""
    intro = (f"These runs used {len(routing.backends)} backends. Run time, CPU and memory are "
             "each backend's attempts alone; a task retried elsewhere counts on both.")  # fmt: skip
    if any(b.cost is not None for b in routing.backends):
        intro += (" Cost here is each backend's at its own rates (the platform's for its "
                  "scheduler, none for the others), where the summary prices every attempt "
                  "at the platform's.")  # fmt: skip
    parts = [
        '<h2 id="per-backend">Per backend</h2>',
        f"<p>{intro}</p>",
        _backends_table(routing),
    ]
    saving = routing.saving
    if saving is not None:
        parts += [
            "<h3>What routing saved (an estimate)</h3>",
            f'<p id="saving">{html.escape(_compared(saving))}</p>',
            _saving_table(saving),
            f'<p class="note">{html.escape(_HOW)}</p>',
        ]
    return "\n".join(parts)
