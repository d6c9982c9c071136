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

The page reads at 800 px as at 1400: the per-process table keeps every column (its cells
wrap, and a table wider than the screen scrolls inside its own box, never the page), and
plotly.js redraws each chart to the width it is given. The charts themselves are
:mod:`._charts`.

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
from typing import Any

from ..errors import UsageError
from ..units import format_bytes, format_seconds
from ._charts import TIMELINE_ROWS, Figure, figures
from ._figures import GB_HOUR, ProcessFigures, Usage
from ._report import Report, document, failures_text, money
from ._routed import routing_section, table
from ._units import BYTE_SECONDS, CORE_SECONDS, SECONDS, Unit, number, pick, text

__all__ = ["EXTRA_MISSING", "plotly_js", "render"]

EXTRA_MISSING = (
    "the HTML report draws with Plotly, which is not installed: "
    "pip install 'seqera-core[report]' (or ask for --json)"
)
_CONFIG = {"displaylogo": False, "responsive": True}


def plotly_js() -> str:
    """plotly.js as the ``plotly`` package ships it, or a UsageError naming the extra."""
    try:
        from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]
    except ImportError:
        raise UsageError(EXTRA_MISSING) from None
    return str(get_plotlyjs())


def _plot(index: int, figure: Figure) -> str:
    data, layout = figure
    arguments = ", ".join(_json_script(v) for v in (f"plot-{index}", data, layout, _CONFIG))
    script = f"<script>Plotly.newPlot({arguments});</script>"
    return f'<div class="plot" id="plot-{index}"></div>\n{script}'


def _area(usage: Usage, scale: float, units: tuple[Unit, ...], verb: str, spent: str) -> str:
    """``3.4 GB·h requested, 1.2 GB·h used, 2.2 GB·h wasted`` in one unit, or what is
    not known of it."""
    if not usage.measured and not usage.requested:
        return "not measured (no run time): see below"
    unit = pick([usage.requested * scale], units)
    shown = [f"{text(usage.requested * scale, units, unit)} {spent}"]
    if usage.used or usage.wasted or not usage.unmeasured:
        shown += [f"{text(usage.used * scale, units, unit)} {verb}",
                  f"{text(usage.wasted * scale, units, unit)} wasted"]  # fmt: skip
    else:
        shown.append(f"{verb}: not measured")
    return ", ".join(shown)


def _share(share: float) -> str:
    return f"{number(100 * share)} %"


def _run_time(report: Report) -> str:
    figures = report.summary
    if not any(p.longest is not None for p in figures.processes):
        return "not measured"
    words = (f"{text(figures.run_hours * 3600, SECONDS)} over every attempt; their time limits "
             f"{text(figures.limit_hours * 3600, SECONDS)}")  # fmt: skip
    shares = [p.limit_share for p in figures.processes if p.limit_share is not None]
    if shares:
        words += f"; the longest run for its limit took {_share(max(shares))} of it"
    return words


def _summary_rows(report: Report) -> list[tuple[str, str]]:
    figures = report.summary
    memory, cpus = figures.memory, figures.cpus
    rows = [
        ("tasks", f"{figures.tasks} ({figures.attempts} attempts, {figures.succeeded} succeeded)"),
        ("failures", failures_text(figures.failures)),
        ("backends", ", ".join(figures.backends) or "not recorded"),
        ("CPU", _area(cpus, 3600, CORE_SECONDS, "busy", "reserved by every attempt")),
        ("memory", _area(memory, GB_HOUR, BYTE_SECONDS, "used", "requested by every attempt")),
        ("run time", _run_time(report)),
    ]  # fmt: skip
    if memory.unmeasured or cpus.unmeasured:
        rows.append(("not measured", f"{memory.unmeasured} attempts lack a memory figure, "
                                     f"{cpus.unmeasured} a CPU figure (see below)"))  # fmt: skip
    if figures.costs is not None:
        rows.append(("cost", f"{money(figures.costs.total)} in all, "
                             f"{money(figures.costs.wasted)} wasted"))  # fmt: skip
    saving = (f"{text(report.saved_memory * GB_HOUR, BYTE_SECONDS)} of memory, "
              f"{text(report.saved_cpus * 3600, CORE_SECONDS)} of CPU")  # fmt: skip
    if report.saved_cost is not None:
        saving += f", {money(report.saved_cost)} at the platform's rates"
    if not report.advice:
        saving = "no advice: no process has a measured successful attempt"
    rows.append(("the right-sizer would have saved", saving))
    return rows


def _outliers(process: ProcessFigures, shown: int = 3) -> str:
    # the tasks above the fence first, the furthest first: those are the ones to size for
    ranked = sorted(process.outliers, key=lambda o: (o.value < o.low, -abs(o.value - o.high)))
    names = [f"{o.task} ({o.quantity.replace('_', ' ')} {_show(o.quantity, o.value)})"
             for o in ranked[:shown]]  # fmt: skip
    more = f" and {len(ranked) - shown} more" if len(ranked) > shown else ""
    return html.escape(", ".join(names) + more)


def _show(quantity: str, value: float) -> str:
    if quantity in ("memory", "peak_memory"):
        return format_bytes(int(value))
    if quantity in ("time", "realtime"):
        return text(value, SECONDS)
    return f"{number(value)} cores"


def _declared(process: ProcessFigures) -> str:
    declared = process.declared
    parts = []
    if declared.cpus:
        parts.append(f"{declared.cpus:g} cpus")
    if declared.memory:
        parts.append(format_bytes(declared.memory))
    if declared.time:
        parts.append(format_seconds(declared.time))
    return ", ".join(parts) or "nothing"


def _limit(process: ProcessFigures) -> str:
    if process.longest is None:
        return "not measured"
    longest = text(process.longest, SECONDS)
    if process.limit_share is None or not process.declared.time:
        return longest
    return f"{longest} ({_share(process.limit_share)} of its limit)"


def _cells(usage: Usage, scale: float, unit: Unit, parts: tuple[str, ...]) -> list[str]:
    if not usage.measured and not usage.requested:
        return ["not measured"] * len(parts)
    measured = usage.measured or not usage.unmeasured
    return [number(unit.of(getattr(usage, part) * scale))
            if part == "requested" or measured else "not measured" for part in parts]  # fmt: skip


def _advice_cells(
    report: Report, process: ProcessFigures, memory: Unit, cpu: Unit
) -> tuple[str, str]:
    advice = report.advice.get(process.process)
    if advice is None:
        why = "no successful attempt" if not process.succeeded else "nothing to learn from"
        return f"no advice: {why}", "none"
    ask = ", ".join(
        [f"{advice.cpus:g} cpus"]
        + ([format_bytes(advice.memory)] if advice.memory is not None else [])
        + ([format_seconds(advice.time)] if advice.time is not None else [])
    )
    saved = (f"{text(advice.saved_memory * GB_HOUR, BYTE_SECONDS, memory)}, "
             f"{text(advice.saved_cpus * 3600, CORE_SECONDS, cpu)}")  # fmt: skip
    if advice.too_small:
        saved += f" ({advice.too_small} of {advice.sized} tasks would not fit)"
    return ask, saved


def _process_tables(report: Report) -> str:
    """Two tables of a few columns each, so both read whole at 800 px: what each process
    used, and what it asked for with what the right-sizer would ask instead."""
    processes = report.summary.processes
    advised = list(report.advice.values())
    memory = pick([p.memory.requested * GB_HOUR for p in processes]
                  + [a.saved_memory * GB_HOUR for a in advised], BYTE_SECONDS)  # fmt: skip
    cpu = pick([p.cpus.requested * 3600 for p in processes]
               + [a.saved_cpus * 3600 for a in advised], CORE_SECONDS)  # fmt: skip
    used = [
        [html.escape(process.process), str(process.attempts),
         str(sum(process.failures.values())),
         *_cells(process.memory, GB_HOUR, memory, ("requested", "used", "wasted")),
         *_cells(process.cpus, 3600, cpu, ("requested", "used", "wasted"))]
        for process in processes
    ]  # fmt: skip
    asked = [
        [html.escape(process.process), html.escape(_declared(process)),
         html.escape(_limit(process)),
         *(html.escape(c) for c in _advice_cells(report, process, memory, cpu)),
         _outliers(process)]
        for process in processes
    ]  # fmt: skip
    if not any(p.memory.measured or p.cpus.measured for p in processes):
        used_table = ('<p id="processes">Nothing was measured: no memory or CPU figure for '
                      "any process (see above). What each asked for is below.</p>")  # fmt: skip
    else:
        head = ["process", "attempts", "failed", f"memory {memory.name} requested", "used",
                "wasted", f"CPU {cpu.name} reserved", "busy", "wasted"]  # fmt: skip
        used_table = table("processes", head, used)
    return "\n".join((
        used_table,
        table("advice", ["process", "declared (the most asked)", "longest run",
                          "right-sizer next time", "saving on this run", "outliers"], asked),
    ))  # fmt: skip


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222;
       padding: 0 1em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
td, th { border-bottom: 1px solid #ddd; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.wide { overflow-x: auto; max-width: 100%; }
#processes td:nth-child(n+2) { text-align: right; white-space: nowrap; }
#processes th { min-width: 4em; }
#backends td:nth-child(n+2):not(:last-child) { text-align: right; white-space: nowrap; }
#backends td:last-child { min-width: 14em; }
#routing td:nth-child(n+3):not(:last-child) { text-align: right; white-space: nowrap; }
.note { color: #555; font-size: 0.9em; }
.missing { background: #fff6e5; border-left: 4px solid #f58518; padding: 0.5em 1em; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.plot { margin: 1.5em 0; width: 100%; }
@media (max-width: 900px) { body { margin: 0.5em auto; } table { font-size: 0.8em; } }
"""  # noqa: E501


def _json_script(data: Any) -> str:
    text = json.dumps(data, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _missing(report: Report) -> str:
    sentences = list(report.summary.missing)
    placed = len(report.timeline)
    if placed > TIMELINE_ROWS:
        sentences.append(f"The timeline shows the first {TIMELINE_ROWS} of {placed} attempts.")
    if not sentences:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return f'<div class="missing" id="missing"><h2>Not measured</h2><ul>{items}</ul></div>'


def render(report: Report) -> str:
    """The whole page: every script inlined, nothing fetched."""
    script = plotly_js()
    figures_ = report.summary
    drawn = figures(figures_.processes, figures_.failures, report.records, report.timeline,
                    len(figures_.runs))  # fmt: skip
    plots = "\n".join(_plot(i, figure) for i, figure in enumerate(drawn))
    when = dt.datetime.fromtimestamp(report.generated).strftime("%Y-%m-%d %H:%M")
    runs = ", ".join(figures_.runs[:10]) + (f" and {len(figures_.runs) - 10} more"
                                            if len(figures_.runs) > 10 else "")  # fmt: skip
    summary = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in _summary_rows(report)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>seqera report: {html.escape(runs)}</title>
<style>{_STYLE}</style>
<script>{script}</script>
</head><body>
<h1>seqera report</h1>
<p>Runs {html.escape(runs)} ({html.escape(", ".join(figures_.engines) or "unknown engine")}),
from {html.escape(report.source)}; written {when}.</p>
<h2>Summary</h2>
<div class="wide"><table id="summary">{summary}</table></div>
{_missing(report)}
{routing_section(report.routing)}
<h2>Per process</h2>
<p>Sorted by waste, largest first. Memory areas are memory &times; run time (MB&middot;s to
TB&middot;h, 1 GB = 10<sup>9</sup> bytes), CPU areas cores &times; run time; a failed
attempt's whole request is waste. The
right-sizer's next ask is for a task of the largest declared size without an input size,
never above what was declared unless a failure asked for more; its saving sizes each task
of this run from its input.</p>
{_process_tables(report)}
{plots}
<h2>Apply it</h2>
<h3>Nextflow</h3>
<pre id="nextflow">{html.escape(report.nextflow)}</pre>
<h3>Snakemake profile</h3>
<pre id="snakemake">{html.escape(report.snakemake)}</pre>
<script type="application/json" id="figures">{_json_script(document(report))}</script>
</body></html>
"""
