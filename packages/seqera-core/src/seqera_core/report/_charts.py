"""The report's charts as plotly.js takes them: ``(data, layout)`` pairs, nothing drawn here.

Each chart picks its own unit from its values (:mod:`._units`), so its numbers read
between about 1 and 1,000, and tells plotly.js never to write an exponent or an SI
prefix (``exponentformat: none``; hover values as plain decimals). Run time is drawn
against its limit on a logarithmic axis, where a 0.1 s run and a 2-hour limit both read.
A series with nothing measured is named in the chart's title as not measured; the page
says why (:mod:`._gaps`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..history import TaskRecord
from ._figures import GB_HOUR, ProcessFigures, busy, label
from ._timeline import Span
from ._units import BYTE_SECONDS, BYTES, SECONDS, Unit, number, pick

__all__ = ["TIMELINE_ROWS", "Figure", "boxes", "failures", "figures", "timeline", "waste"]

# A figure as plotly.js takes it: (data, layout).
Figure = tuple[list[dict[str, Any]], dict[str, Any]]
Getter = Callable[[TaskRecord], float | None]

COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2")
FONT = {"family": "system-ui, sans-serif", "size": 12}
# The attempts the time line draws at most; the page says when there were more.
TIMELINE_ROWS = 400
_OUTCOME_COLOURS = {"succeeded": COLOURS[2], "out_of_memory": COLOURS[3],
                    "time_limit": COLOURS[1], "cancelled": "#999999"}  # fmt: skip
# Plain decimals everywhere: no 1e-05, no 5µ.
_PLAIN = {"exponentformat": "none", "separatethousands": True, "hoverformat": ",.4~r"}


def plotly_text(text: str) -> str:
    """A name as Plotly text: its pseudo-HTML (``<a href>``, ``<span style>``, ``<br>`` in
    tick, hover and legend text; plotly.js ``src/lib/svg_text_utils.js``) kept literal by
    escaping ``&``, ``<`` and ``>`` as the entities Plotly decodes back."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _layout(title: str, unit: str, order: list[str], height: int) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.01}, "font": FONT, "height": height,
        "xaxis": {"title": {"text": unit}, "rangemode": "tozero", "zeroline": False, **_PLAIN},
        "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": order[::-1],
                  "automargin": True},
        "legend": {"orientation": "h", "y": 1.0, "x": 0, "yanchor": "bottom"},
        "margin": {"t": 80, "r": 20},
    }  # fmt: skip


def _series(
    records: Sequence[TaskRecord], get: Getter, unit: Unit, runs: int
) -> dict[str, list[Any]]:
    xs: list[float] = []
    ys: list[str] = []
    names: list[str] = []
    for record in records:
        value = get(record)
        if value is not None:
            xs.append(float(f"{unit.of(value):.4g}"))  # what a plot shows: a third of the bytes
            ys.append(plotly_text(record.process))
            names.append(plotly_text(label(record, runs)))
    return {"x": xs, "y": ys, "hovertext": names}


def _log_ticks(values: Sequence[float]) -> dict[str, Any]:
    """Ticks at 1, 2, 5 times the powers of ten the values span, labelled in plain
    decimals (plotly's own log ticks write 2..9 between decades as bare digits)."""
    shown = [v for v in values if v > 0]
    if not shown:
        return {}
    low, high = math.floor(math.log10(min(shown))), math.ceil(math.log10(max(shown)))
    ticks = [m * 10.0**e for e in range(low, high + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if min(shown) / 2 <= t <= max(shown) * 2]
    return {"tickvals": ticks, "ticktext": [_tick(t) for t in ticks]}


def _tick(value: float) -> str:
    """``0.002``, ``0.5``, ``20``, ``1,000``: as many decimals as the value needs."""
    decimals = max(0, -math.floor(math.log10(value)))
    return f"{value:,.{decimals}f}"


def boxes(
    title: str,
    units: tuple[Unit, ...] | None,
    order: list[str],
    records: Sequence[TaskRecord],
    series: Sequence[tuple[str, Getter]],
    runs: int,
    *,
    log: bool = False,
) -> Figure:
    """One box per process and series, every task a point, in the unit the values fill
    (``units`` None: the values are already in their unit, cores)."""
    values = [get(r) for _, get in series for r in records]
    unit = pick(values, units) if units is not None else Unit("cores", 1)
    data = []
    empty = []
    for index, (name, get) in enumerate(series):
        points = _series(records, get, unit, runs)
        if not points["x"]:
            empty.append(name)
        data.append(
            {"type": "box", **points, "name": name, "orientation": "h", "boxpoints": "all",
             "jitter": 0.5, "pointpos": 0, "hoverinfo": "x+text",
             "marker": {"size": 4, "color": COLOURS[index]}, "line": {"width": 1}}
        )  # fmt: skip
    if empty:
        title += f" ({' and '.join(empty)} not measured)"
    layout = _layout(title, unit.name + (", log scale" if log else ""), order,
                     160 + 28 * len(order) * len(series))  # fmt: skip
    layout["boxmode"] = "group"
    if log:
        layout["xaxis"].update(type="log", rangemode="normal", **_log_ticks(
            [unit.of(v) for v in values if v is not None]))  # fmt: skip
    return data, layout


def waste(processes: Sequence[ProcessFigures], order: list[str]) -> Figure:
    """Memory used and wasted per process (stacked bars), largest waste first."""
    unit = pick([p.memory.requested * GB_HOUR for p in processes], BYTE_SECONDS)
    data = [
        {"type": "bar", "orientation": "h", "name": name, "marker": {"color": colour},
         "x": [float(f"{unit.of(getattr(p.memory, name) * GB_HOUR):.4g}") for p in processes],
         "y": [plotly_text(p.process) for p in processes]}
        for name, colour in (("used", COLOURS[2]), ("wasted", COLOURS[3]))
    ]  # fmt: skip
    title = "Memory per process: used and wasted, largest waste first"
    layout = _layout(title, unit.name, order, 160 + 26 * len(order))
    layout["barmode"] = "stack"
    return data, layout


def failures(counts: dict[str, int]) -> Figure:
    """Failed attempts by cause."""
    data = [{"type": "bar", "x": [c.replace("_", " ") for c in counts],
             "y": list(counts.values()), "marker": {"color": COLOURS[3]}}]  # fmt: skip
    layout = {"title": {"text": "Failed attempts by cause", "x": 0.01}, "font": FONT,
              "height": 320, "yaxis": {"title": {"text": "attempts"}, **_PLAIN,
                                       "tickformat": ",d"}}  # fmt: skip
    return data, layout


def _clock(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


def _row(span: Span) -> str:
    return plotly_text(f"{span.process} {span.task}")


def _bars(
    name: str, these: Sequence[Span], origin: float, unit: Unit, colour: str
) -> dict[str, Any]:
    failed = [s.outcome != "succeeded" for s in these]
    return {
        "type": "bar", "orientation": "h", "name": plotly_text(name),
        "y": [_row(s) for s in these],
        "base": [float(f"{unit.of(s.start - origin):.5g}") for s in these],
        "x": [max(float(f"{unit.of(s.end - s.start):.4g}"), 0.0) for s in these],
        # a failed attempt is hatched: under backends' colours its outcome still shows
        "marker": {"color": colour,
                   "pattern": {"shape": ["x" if f else "" for f in failed], "solidity": 0.4}},
        "hovertext": [plotly_text(f"{s.task} on {s.backend or 'an unknown backend'}: "
                                  f"{_clock(s.start)} to {_clock(s.end)}, "
                                  f"{number(s.end - s.start)} s, "
                                  f"{s.outcome.replace('_', ' ')}")
                      for s in these],
        "hoverinfo": "text",
    }  # fmt: skip


def timeline(placed: Sequence[Span]) -> Figure:
    """Every attempt from its start to its end, one row each, coloured by outcome; by
    backend when several ran them (a failed attempt then hatched), as a routed run's."""
    shown = placed[:TIMELINE_ROWS]
    origin = min(s.start for s in shown)
    unit = pick([max(s.end for s in shown) - origin], SECONDS)
    rows = [_row(s) for s in shown]
    backends = list(dict.fromkeys(s.backend or "unknown" for s in shown))
    data = []
    if len(backends) > 1:
        for index, backend in enumerate(backends):
            these = [s for s in shown if (s.backend or "unknown") == backend]
            data.append(_bars(backend, these, origin, unit, COLOURS[index % len(COLOURS)]))
        title = "Timeline: every attempt from start to end, by backend (failed: hatched)"
    else:
        for outcome in dict.fromkeys(s.outcome for s in shown):
            these = [s for s in shown if s.outcome == outcome]
            colour = _OUTCOME_COLOURS.get(outcome, COLOURS[5])
            bars = _bars(outcome.replace("_", " "), these, origin, unit, colour)
            del bars["marker"]["pattern"]  # the colour says the outcome
            data.append(bars)
        title = "Timeline: every attempt from start to end"
    layout = _layout(title, f"{unit.name} since {_clock(origin)}", rows, 140 + 18 * len(rows))
    layout["barmode"] = "overlay"
    layout["yaxis"]["categoryarray"] = rows[::-1]  # the first to start on top
    return data, layout


def figures(
    processes: Sequence[ProcessFigures], counts: dict[str, int],
    records: Sequence[TaskRecord], placed: Sequence[Span], runs: int,
) -> list[Figure]:  # fmt: skip
    """Every chart of the page, in its order."""
    order = [plotly_text(p.process) for p in processes]  # the categories drawn
    done = [r for r in records if r.succeeded]
    # the requests are known without a single measurement: shown even when nothing ran
    shown = done or list(records)
    drawn = []
    if any(p.memory.requested for p in processes):
        drawn.append(waste(processes, order))
    if counts:
        drawn.append(failures(counts))
    if placed:
        drawn.append(timeline(placed))

    def seconds(value: float | None) -> float | None:
        return None if value is None else max(value, 0.001)  # a log axis has no zero

    drawn += [
        boxes("Memory: requested and peak, per successful task", BYTES, order, shown,
              [("requested", lambda r: r.memory), ("peak", lambda r: r.peak_memory)], runs),
        boxes("Time: limit and run time, per successful task", SECONDS, order, shown,
              [("limit", lambda r: r.time), ("run time", lambda r: seconds(r.realtime))],
              runs, log=True),
        boxes("CPU: cores reserved and kept busy, per successful task", None, order, shown,
              [("reserved", lambda r: r.cpus), ("busy", busy)], runs),
    ]  # fmt: skip
    return drawn
