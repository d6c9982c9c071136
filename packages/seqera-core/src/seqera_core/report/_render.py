"""The report as one HTML page that works offline: Plotly, with plotly.js inlined once.

Why Plotly (the ``report`` extra, ``seqera-core[report]``): it is what Nextflow's own
``-with-report`` page draws with, so the people this report is for already read its box
plots; its Python package is pure Python (it needs only ``narwhals`` and ``packaging``:
no numpy, no compiled code) and ships ``plotly.min.js``, which is inlined here, so the
page needs no network and no server; its box plots draw every task as a point with its
name on hover, which is how an outlier is found. The price is the page's size: about
4.8 MB of inlined JavaScript, the same as Nextflow's report.

The alternatives weighed: Vega-Lite through Altair writes an offline page only with
``vl-convert-python`` (a 30 MB native wheel embedding a JavaScript runtime) or by
hand-inlining three scripts Altair does not ship; Bokeh inlines less JavaScript (about
1 MB) but brings numpy, Pillow, Tornado and contourpy to every install; matplotlib's SVG
needs no script at all and gives the lightest page, but no hover (a point cannot say
which task it is) and brings numpy, Pillow, fonttools and kiwisolver.

Everything shown comes from :class:`~seqera_core.report.Report`; names from the history
are escaped (HTML text through :func:`html.escape`, JSON in a script with ``<``, ``>`` and
``&`` as ``\\u`` escapes), and the figures' JSON is embedded as ``application/json``.
The figures are handed to plotly.js as plain data (``Plotly.newPlot``): the package's
Python figure classes validate every point, which took 4 s for a 1,500-task run.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError
from ..history import TaskRecord
from ..units import GIB, format_bytes, format_seconds
from ._figures import ProcessFigures, busy, label
from ._report import Report, amount, document, failures_text

__all__ = ["EXTRA_MISSING", "plotly_js", "render"]

EXTRA_MISSING = (
    "the HTML report draws with Plotly, which is not installed: "
    "pip install 'seqera-core[report]' (or ask for --json)"
)
_CONFIG = {"displaylogo": False, "responsive": True}
_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756")
_FONT = {"family": "system-ui, sans-serif", "size": 12}

# A figure as plotly.js takes it: (data, layout).
Figure = tuple[list[dict[str, Any]], dict[str, Any]]
Getter = Callable[[TaskRecord], float | None]


def plotly_js() -> str:
    """plotly.js as the ``plotly`` package ships it, or a UsageError naming the extra."""
    try:
        from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]
    except ImportError:
        raise UsageError(EXTRA_MISSING) from None
    return str(get_plotlyjs())


def _series(records: Sequence[TaskRecord], get: Getter, runs: int) -> dict[str, list[Any]]:
    xs: list[float] = []
    ys: list[str] = []
    names: list[str] = []
    for record in records:
        value = get(record)
        if value is not None:
            xs.append(float(f"{value:.4g}"))  # what a plot shows: a third of the bytes
            ys.append(record.process)
            names.append(label(record, runs))
    return {"x": xs, "y": ys, "hovertext": names}


def _layout(title: str, unit: str, order: list[str], height: int) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.01}, "font": _FONT, "height": height,
        "xaxis": {"title": {"text": unit}, "rangemode": "tozero", "zeroline": False},
        "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": order[::-1],
                  "automargin": True},
        "legend": {"orientation": "h", "y": 1.0, "x": 0, "yanchor": "bottom"},
        "margin": {"t": 80, "r": 20},
    }  # fmt: skip


def _boxes(
    title: str,
    unit: str,
    order: list[str],
    records: Sequence[TaskRecord],
    series: Sequence[tuple[str, Getter]],
    runs: int,
) -> Figure:
    data = [
        {"type": "box", **_series(records, get, runs), "name": name, "orientation": "h",
         "boxpoints": "all", "jitter": 0.5, "pointpos": 0, "hoverinfo": "x+text",
         "marker": {"size": 4, "color": _COLOURS[index]}, "line": {"width": 1}}
        for index, (name, get) in enumerate(series)
    ]  # fmt: skip
    layout = _layout(title, unit, order, 160 + 28 * len(order) * len(series))
    layout["boxmode"] = "group"
    return data, layout


def _waste(processes: Sequence[ProcessFigures], order: list[str]) -> Figure:
    data = [
        {"type": "bar", "orientation": "h", "name": name, "marker": {"color": colour},
         "x": [getattr(p.memory, name) for p in processes], "y": [p.process for p in processes]}
        for name, colour in (("used", _COLOURS[2]), ("wasted", _COLOURS[3]))
    ]  # fmt: skip
    title = "Memory per process: used and wasted, largest waste first"
    layout = _layout(title, "GB-hours", order, 160 + 26 * len(order))
    layout["barmode"] = "stack"
    return data, layout


def _failures(failures: dict[str, int]) -> Figure:
    data = [{"type": "bar", "x": [c.replace("_", " ") for c in failures],
             "y": list(failures.values()), "marker": {"color": _COLOURS[3]}}]  # fmt: skip
    layout = {"title": {"text": "Failed attempts by cause", "x": 0.01}, "font": _FONT,
              "height": 320, "yaxis": {"title": {"text": "attempts"}}}  # fmt: skip
    return data, layout


def _gib(value: int | None) -> float | None:
    return None if value is None else value / GIB


def _minutes(value: float | None) -> float | None:
    return None if value is None else value / 60


def _figures(report: Report) -> list[Figure]:
    figures = report.summary
    order = [p.process for p in figures.processes]
    done = [r for r in report.records if r.succeeded]
    runs = len(figures.runs)
    drawn = [_waste(figures.processes, order)]
    if figures.failures:
        drawn.append(_failures(figures.failures))
    drawn += [
        _boxes("Memory: requested and peak, per successful task", "GiB", order, done,
               [("requested", lambda r: _gib(r.memory)),
                ("peak", lambda r: _gib(r.peak_memory))], runs),
        _boxes("Time: limit and run time, per successful task", "minutes", order, done,
               [("limit", lambda r: _minutes(r.time)),
                ("run time", lambda r: _minutes(r.realtime))], runs),
        _boxes("Cpus: reserved and kept busy (%cpu / 100), per successful task", "cores",
               order, done, [("reserved", lambda r: r.cpus), ("busy", busy)], runs),
    ]  # fmt: skip
    return drawn


def _plot(index: int, figure: Figure) -> str:
    data, layout = figure
    arguments = ", ".join(_json_script(v) for v in (f"plot-{index}", data, layout, _CONFIG))
    script = f"<script>Plotly.newPlot({arguments});</script>"
    return f'<div class="plot" id="plot-{index}"></div>\n{script}'


def _cell(value: float) -> str:
    return amount(value)


def _summary_rows(report: Report) -> list[tuple[str, str]]:
    figures = report.summary
    memory, cpus = figures.memory, figures.cpus
    rows = [
        ("tasks", f"{figures.tasks} ({figures.attempts} attempts, {figures.succeeded} succeeded)"),
        ("failures", failures_text(figures.failures)),
        ("cpu-hours", f"{_cell(cpus.requested)} reserved, {_cell(cpus.used)} busy, "
                      f"{_cell(cpus.wasted)} wasted"),
        ("memory GB-hours", f"{_cell(memory.requested)} requested, {_cell(memory.used)} used, "
                            f"{_cell(memory.wasted)} wasted"),
        ("run time", f"{_cell(figures.run_hours)} hours; limits {_cell(figures.limit_hours)} h"),
    ]  # fmt: skip
    unmeasured = max(memory.unmeasured, cpus.unmeasured)
    if unmeasured:
        rows.append(("not measured", f"{memory.unmeasured} attempts lack a memory figure, "
                                     f"{cpus.unmeasured} a cpu figure"))  # fmt: skip
    if figures.costs is not None:
        rows.append(("cost", f"{_cell(figures.costs.total)} in all, "
                             f"{_cell(figures.costs.wasted)} wasted"))  # fmt: skip
    saving = f"{_cell(report.saved_memory)} GB-hours of memory, {_cell(report.saved_cpus)} core-h"
    if report.saved_cost is not None:
        saving += f", {_cell(report.saved_cost)} at the platform's rates"
    rows.append(("the right-sizer would have saved", saving))
    return rows


def _outliers(process: ProcessFigures, shown: int = 3) -> str:
    # the tasks above the fence first, the furthest first: those are the ones to size for
    ranked = sorted(process.outliers, key=lambda o: (o.value < o.low, -abs(o.value - o.high)))
    names = [f"{o.task} ({o.quantity} {_show(o.quantity, o.value)})" for o in ranked[:shown]]
    more = f" and {len(ranked) - shown} more" if len(ranked) > shown else ""
    return html.escape(", ".join(names) + more)


def _show(quantity: str, value: float) -> str:
    if quantity in ("memory", "peak_memory"):
        return format_bytes(int(value))
    if quantity in ("time", "realtime"):
        return format_seconds(round(value))
    return f"{value:.2f} cores"


def _process_rows(report: Report) -> str:
    rows = []
    for process in report.summary.processes:
        advice = report.advice.get(process.process)
        if advice is None:
            ask = saved = "no opinion"
        else:
            ask = ", ".join(
                [f"{advice.cpus:g} cpus"]
                + ([format_bytes(advice.memory)] if advice.memory is not None else [])
                + ([format_seconds(advice.time)] if advice.time is not None else [])
            )
            saved = f"{_cell(advice.saved_memory)} GB-h, {_cell(advice.saved_cpus)} core-h"
            if advice.too_small:
                saved += f" ({advice.too_small} of {advice.sized} tasks would not fit)"
        failed = sum(process.failures.values())
        cells = [
            html.escape(process.process), str(process.attempts), str(failed),
            _cell(process.memory.requested), _cell(process.memory.used),
            _cell(process.memory.wasted), _cell(process.cpus.requested),
            _cell(process.cpus.used), _cell(process.run_hours), _cell(process.limit_hours),
            html.escape(ask), html.escape(saved), _outliers(process),
        ]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "\n".join(rows)


_HEAD = ("process", "attempts", "failed", "memory GB-h requested", "used", "wasted",
         "core-h reserved", "busy", "run h", "limit h", "right-sizer next time",
         "saving on this run", "outliers")  # fmt: skip
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
td, th { border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.plot { margin: 1.5em 0; }
"""  # noqa: E501


def _json_script(data: Any) -> str:
    text = json.dumps(data, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(report: Report) -> str:
    """The whole page: every script inlined, nothing fetched."""
    script = plotly_js()
    plots = "\n".join(_plot(i, figure) for i, figure in enumerate(_figures(report)))
    figures = report.summary
    when = dt.datetime.fromtimestamp(report.generated).strftime("%Y-%m-%d %H:%M")
    runs = ", ".join(figures.runs[:10]) + (f" and {len(figures.runs) - 10} more"
                                           if len(figures.runs) > 10 else "")  # fmt: skip
    summary = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in _summary_rows(report)
    )
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEAD)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>seqera report: {html.escape(runs)}</title>
<style>{_STYLE}</style>
<script>{script}</script>
</head><body>
<h1>seqera report</h1>
<p>Runs {html.escape(runs)} ({html.escape(", ".join(figures.engines) or "unknown engine")}),
from {html.escape(report.source)}; written {when}.</p>
<h2>Summary</h2>
<table id="summary">{summary}</table>
<h2>Per process</h2>
<p>Sorted by waste, largest first. Memory in GB-hours (10<sup>9</sup> bytes &times; hours);
a failed attempt's whole request is waste. The right-sizer's next ask is for a task of the
largest declared size without an input size; its saving sizes each task of this run from
its input.</p>
<table id="processes"><tr>{head}</tr>
{_process_rows(report)}
</table>
{plots}
<h2>Apply it</h2>
<h3>Nextflow</h3>
<pre id="nextflow">{html.escape(report.nextflow)}</pre>
<h3>Snakemake profile</h3>
<pre id="snakemake">{html.escape(report.snakemake)}</pre>
<script type="application/json" id="figures">{_json_script(document(report))}</script>
</body></html>
"""
