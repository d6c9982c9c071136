"""``seqera report``: what every run asked for, used, wasted and cost, as a page people read.

The figures (:mod:`._figures`, pure functions over history rows) are apart from the
drawing (:mod:`._render`, Plotly, the optional ``report`` extra); the right-sizer's
advice (:mod:`._advice`) and the configs that apply it (:mod:`._snippets`) beside them.
``--json`` needs no extra. For the engines: :func:`write_report` writes the page of some
runs, :func:`summary_lines` gives the few lines to print at the end of one.

The page's drawing (``render``, ``EXTRA_MISSING``: the charts, the routing section) is
imported on first use (PEP 562): ``--json`` and an engine's summary draw nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import exports
from ..history import History
from ._advice import Advice
from ._backends import BackendFigures, Routing
from ._figures import Costs, Distribution, Outlier, ProcessFigures, Summary, Usage
from ._records import CAUSES, cause, parse_since
from ._report import Report, build, document, headline
from ._routing import Alternative, Saving

if TYPE_CHECKING:
    from ..platforms import Platform
    from ._render import EXTRA_MISSING, render

__all__ = [
    "CAUSES",
    "EXTRA_MISSING",
    "Advice",
    "Alternative",
    "BackendFigures",
    "Costs",
    "Distribution",
    "Outlier",
    "ProcessFigures",
    "Report",
    "Routing",
    "Saving",
    "Summary",
    "Usage",
    "build",
    "cause",
    "document",
    "headline",
    "parse_since",
    "render",
    "summary_lines",
    "write_report",
]


__getattr__ = exports(__name__, {"EXTRA_MISSING": "_render", "render": "_render"})


def write_report(
    history: History,
    run_ids: Sequence[str],
    path: str | Path,
    platform: Platform | None = None,
) -> Path:
    """Write the HTML report of ``run_ids`` (every run when empty) to ``path``; returns it.

    Written to a temporary file beside ``path`` and renamed, so a reader never sees half
    a page. Raises UsageError for an empty history, an unknown run, or no Plotly.
    """
    from ._render import render

    target = Path(path)
    page = render(build(history, run_ids, platform=platform))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    partial.write_text(page, encoding="utf-8")
    partial.replace(target)
    return target


def summary_lines(history: History, run_id: str, limit: int = 3) -> list[str]:
    """A short efficiency summary of one run: totals, the ``limit`` worst processes, the
    right-sizer's saving; lines without a prefix, for the engine to print as it prints.

    Raises UsageError when the history has no task of ``run_id``. It reads the run's rows
    by its id and, for the right-sizer's advice, the summaries and windows of the run's
    processes only: its cost does not grow with the history.
    """
    return headline(build(history, [run_id]), limit)
