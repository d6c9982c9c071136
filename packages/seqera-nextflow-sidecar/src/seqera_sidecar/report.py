"""``GET /report``: the ``seqera report`` page (or its figures) of runs this sidecar recorded.

``/report?run=RUN_ID`` (repeatable; every run without one), ``&since=2026-11-24T08:00``,
``&format=json`` for the figures instead of the page. The run id is the one the weblog
carries (Nextflow's ``runId``, as :mod:`seqera_sidecar.weblog` records it). A run the
history does not hold, or a history with no task, is 404; a bad ``since`` or ``format``
is 400; a sidecar installed without ``seqera-core[report]`` answers the page with 501
and a message naming the extra (the JSON needs nothing more). The page is built in a
worker thread: it reads the whole selection and may take a moment on a large history.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from seqera_core.errors import ResourceError, UsageError
from seqera_core.history import History
from seqera_core.report import EXTRA_MISSING, build, document, parse_since, render

__all__ = ["report_endpoint"]

_FORMATS = ("html", "json")


def _problem(status: int, message: str) -> JSONResponse:
    return JSONResponse({"problems": [message]}, status_code=status)


def _answer(history: History, runs: list[str], since: float | None, form: str) -> Response:
    try:
        report = build(history, runs, since=since, source="the sidecar's history")
    except ResourceError as exc:  # a run id it does not hold
        return _problem(404, str(exc))
    except UsageError as exc:  # no task at all, or none since
        return _problem(404, str(exc))
    if form == "json":
        return JSONResponse(document(report))
    try:
        return HTMLResponse(render(report))
    except UsageError as exc:
        if str(exc) != EXTRA_MISSING:
            raise
        return _problem(501, str(exc))


def report_endpoint(history: History) -> Any:
    """The ``/report`` handler over ``history`` (auth and metrics are the app's)."""

    async def report(request: Request) -> Response:
        query = request.query_params
        form = query.get("format", "html")
        if form not in _FORMATS:
            return _problem(400, f"format: {form!r} is not valid; expected html or json")
        try:
            since = parse_since(query["since"]) if "since" in query else None
        except ResourceError as exc:
            return _problem(400, str(exc).replace("--since", "since", 1))
        return await run_in_threadpool(_answer, history, query.getlist("run"), since, form)

    return report
