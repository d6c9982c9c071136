"""The ASGI app: resource resolution, weblog ingestion, runs, health and Prometheus metrics.

Every endpoint but ``/health`` and ``/openapi.json`` needs ``Authorization: Bearer
<token>`` when a token is configured; ``edge`` holds the rules every request passes
first (Host, token, JSON content type, body limit). Bad documents get 400 with
``{"problems": [...]}``, one message per fault naming its JSON path; every refusal and
error is counted in ``seqera_sidecar_errors_total``. Handlers that touch the backend, the
history or the resolvers run in worker threads, so a slow ``sbatch`` or a locked
database never holds up ``/health``. ``/health`` answers 503 with ``status: degraded``
while the poll loop is failing (its failures, restarts and last error in the body).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from seqera_core import wire
from seqera_core.errors import ResourceError, SeqeraError, WireError
from seqera_core.history import History
from seqera_core.models import ResourceRequest
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import BATCH_LIMIT, PredictiveResolver, Resolver, resolve

from ._version import __version__
from .edge import DEFAULT_BODY_LIMIT, Refused, allowed_host, authorized, read_json, token_bytes
from .ledger import Asked
from .openapi import bundled_spec
from .poller import redact
from .report import report_endpoint
from .retries import note_retry
from .runs import NotFound, RunStore, SubmitFailed
from .weblog import parse_event

__all__ = ["create_app"]

_log = logging.getLogger("seqera_sidecar")
_PUBLIC = frozenset({"/health", "/openapi.json"})
_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)


def _problems(status: int, *problems: str) -> JSONResponse:
    return JSONResponse({"problems": list(problems)}, status_code=status)


class _DispatcherMetrics(Collector):
    """The poll loop's and the history hand-over's counts, read when scraped."""

    def __init__(self, dispatcher: RunStore) -> None:
        self.dispatcher = dispatcher

    def collect(self) -> Any:
        poller = self.dispatcher.poller
        yield CounterMetricFamily("seqera_sidecar_poll_failures", "Poll cycles that failed",
                                  value=poller.failures)  # fmt: skip
        yield CounterMetricFamily("seqera_sidecar_poll_restarts",
                                  "Poll threads started again after dying",
                                  value=poller.restarts)  # fmt: skip
        yield CounterMetricFamily("seqera_sidecar_history_failures",
                                  "History hand-overs that failed (records kept)",
                                  value=self.dispatcher.history_failures)  # fmt: skip
        yield CounterMetricFamily("seqera_sidecar_resubmitted",
                                  "Tasks proven never submitted, sent again",
                                  value=self.dispatcher.resubmitted)  # fmt: skip
        yield GaugeMetricFamily("seqera_sidecar_poll_degraded",
                                "1 while the poll loop is failing",
                                value=float(poller.status()["state"] != "ok"))  # fmt: skip


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("seqera_sidecar_requests", "HTTP requests",
                                ["endpoint", "status"], registry=self.registry)  # fmt: skip
        # Fine below 20 ms, where the resolve goals lie (p99 5 ms single, 20 ms batch).
        self.latency = Histogram("seqera_sidecar_request_seconds", "Time to answer",
                                 ["endpoint"], registry=self.registry,
                                 buckets=_LATENCY_BUCKETS)  # fmt: skip
        self.events = Counter("seqera_sidecar_weblog_events", "Weblog events accepted",
                              ["event"], registry=self.registry)  # fmt: skip
        self.rejected = Counter("seqera_sidecar_weblog_rejected", "Weblog events refused",
                                registry=self.registry)  # fmt: skip
        self.resolved = Counter("seqera_sidecar_resolved", "Requests resolved, by source",
                                ["resolver"], registry=self.registry)  # fmt: skip
        self.errors = Counter("seqera_sidecar_errors", "Requests refused or failed, by kind",
                              ["endpoint", "kind"], registry=self.registry)  # fmt: skip


def create_app(
    history: History,
    *,
    token: str | None = None,
    resolvers: list[Resolver] | None = None,
    dispatcher: RunStore | None = None,
    hosts: frozenset[str] | None = None,
    body_limit: int = DEFAULT_BODY_LIMIT,
) -> Starlette:
    """The sidecar's app over ``history``; ``resolvers`` default to the predictive resolver.

    With a ``dispatcher``, the runs and tasks endpoints submit to its backend, and its
    poller runs while the app does. ``hosts``: the names ``Host`` may carry (None: any;
    ``edge.hosts()`` builds the loopback default). ``body_limit``: bytes (413 beyond).
    """
    chain = resolvers if resolvers is not None else [PredictiveResolver(history)]
    metrics = _Metrics()
    if dispatcher is not None:
        metrics.registry.register(_DispatcherMetrics(dispatcher))
    spec = bundled_spec()
    secret = token_bytes(token)

    async def _json(request: Request) -> Any:
        return await read_json(request, body_limit)

    asked = Asked()  # per-task sizes asked with, for the weblog's records (ledger.py)

    def answer(request: ResourceRequest) -> dict[str, Any] | None:
        note_retry(request, chain)  # a retry asked before its failure reached the weblog
        asked.note(request)
        resolution = resolve(request, chain, defaults=DEFAULTS)
        metrics.resolved.labels(resolution.resolver).inc()
        if resolution.resolver == "declared":
            return None  # no opinion: the client keeps what was declared
        return wire.unstructure(resolution.effective)

    async def resolve_one(request: Request) -> Response:
        document = await _json(request)
        parsed = wire.structure(document, ResourceRequest)
        result = await run_in_threadpool(answer, parsed)
        return Response(status_code=204) if result is None else JSONResponse(result)

    async def resolve_batch(request: Request) -> Response:
        document = await _json(request)
        items = document.get("requests") if isinstance(document, dict) else None
        if not isinstance(items, list) or not 1 <= len(items) <= BATCH_LIMIT:
            raise WireError([f"$.requests: expected a list of 1 to {BATCH_LIMIT} requests"])
        if set(document) - {"requests"}:
            raise WireError([f"$.{sorted(set(document) - {'requests'})[0]}: unexpected key"])
        requests, problems = [], []
        for index, item in enumerate(items):
            try:
                requests.append(wire.structure(item, ResourceRequest))
            except WireError as exc:
                problems += [p.replace("$", f"$.requests[{index}]", 1) for p in exc.problems]
        if problems:
            raise WireError(problems)
        answers = await run_in_threadpool(lambda: [answer(r) for r in requests])
        return JSONResponse({"responses": answers})

    async def weblog(request: Request) -> Response:
        document = await _json(request)
        events = document if isinstance(document, list) else [document]
        accepted, problems, records = 0, [], []
        for index, item in enumerate(events):
            try:
                event = parse_event(item)
            except RecursionError:
                metrics.rejected.inc()
                problems.append(f"$[{index}]: nested too deeply")
                continue
            except WireError as exc:
                # One bad event is refused alone: the others in the batch are kept.
                metrics.rejected.inc()
                where = f"$[{index}]" if isinstance(document, list) else "$"
                problems += [p.replace("$", where, 1) for p in exc.problems]
                continue
            accepted += 1
            metrics.events.labels(event.event).inc()
            record = asked.applied(item, event.record)
            if record is not None:
                records.append(record)
        if records:
            try:
                await run_in_threadpool(history.record, records)
            except Exception as exc:
                _log.warning("history: weblog records not stored: %s", redact(str(exc)))
                metrics.errors.labels("weblog", "history").inc()
                return _problems(503, "the history store is unavailable; send the events again")
        status = 400 if problems and not accepted else 202
        if problems:  # each refused event is in seqera_sidecar_weblog_rejected_total too
            metrics.errors.labels("weblog", "invalid").inc()
        body: dict[str, Any] = {"accepted": accepted, "recorded": len(records)}
        if problems:
            body["problems"] = problems
        return JSONResponse(body, status_code=status)

    async def health(request: Request) -> Response:
        body: dict[str, Any] = {"status": "ok", "version": __version__}
        if dispatcher is not None:
            dispatcher.poller.check()  # a poll thread that died is started again
            poller = dispatcher.poller.status()
            body["poller"] = poller
            body["history_failures"] = dispatcher.history_failures
            if poller["state"] != "ok":
                body["status"] = "degraded"
                return JSONResponse(body, status_code=503)
        return JSONResponse(body)

    async def prometheus(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def openapi(request: Request) -> Response:
        return JSONResponse(spec)

    def endpoint(name: str, handler: Callable[[Request], Awaitable[Response]]) -> Any:
        async def wrapped(request: Request) -> Response:
            started = time.perf_counter()
            kind = None
            try:
                allowed_host(request, hosts)
                if request.url.path not in _PUBLIC:
                    authorized(request, secret)
                response = await handler(request)
            except Refused as exc:
                response, kind = _problems(exc.status, exc.problem), exc.kind
            except WireError as exc:
                response, kind = _problems(400, *exc.problems[:100]), "invalid"
            except RecursionError:
                response, kind = _problems(400, "$: nested too deeply"), "invalid"
            except NotFound as exc:
                response, kind = _problems(404, str(exc)), "not_found"
            except ResourceError as exc:
                conflict = exc.field in ("run", "id")
                response = _problems(409 if conflict else 400, str(exc))
                kind = "conflict" if conflict else "invalid"
            except SubmitFailed as exc:  # what went out is kept, and said
                response = JSONResponse({"problems": [str(exc)], "tasks": exc.tasks}, 503)
                kind = "backend"
            except SeqeraError as exc:  # the backend failed: worth a retry later
                response, kind = _problems(503, redact(str(exc))), "backend"
            except Exception:
                _log.exception("%s: internal error", name)
                response, kind = _problems(500, "internal error (logged)"), "internal"
            if kind is not None:
                metrics.errors.labels(name, kind).inc()
            metrics.requests.labels(name, str(response.status_code)).inc()
            metrics.latency.labels(name).observe(time.perf_counter() - started)
            return response

        return wrapped

    def runs() -> RunStore:
        if dispatcher is None:
            raise NotFound("this sidecar dispatches no tasks (start it with --backend)")
        return dispatcher

    async def create_run(request: Request) -> Response:
        document = await _json(request)
        if not isinstance(document, dict) or set(document) - {"name", "labels"}:
            raise WireError(["$: expected an object with name and labels"])
        name, labels = document.get("name", "run"), document.get("labels") or {}
        if (
            not isinstance(name, str)
            or not isinstance(labels, dict)
            or not all(isinstance(v, str | int | float | bool) for v in labels.values())
        ):
            raise WireError(["$.labels: expected an object of single values"])
        created = await run_in_threadpool(runs().create_run, name, labels)
        return JSONResponse(created, status_code=201)

    async def submit_tasks(request: Request) -> Response:
        document = await _json(request)
        tasks = document.get("tasks") if isinstance(document, dict) else None
        submitted = await run_in_threadpool(runs().submit, request.path_params["run"], tasks)
        return JSONResponse({"tasks": submitted}, status_code=202)

    async def describe_task(request: Request) -> Response:
        params = request.path_params
        return JSONResponse(await run_in_threadpool(runs().task, params["run"], params["task"]))

    async def cancel_task(request: Request) -> Response:
        params = request.path_params
        cancelled = await run_in_threadpool(runs().cancel, params["run"], params["task"])
        return JSONResponse(cancelled, status_code=202)

    async def task_logs(request: Request) -> Response:
        params = request.path_params
        return PlainTextResponse(await run_in_threadpool(runs().logs, params["run"],
                                                         params["task"]))  # fmt: skip

    async def terminate_run(request: Request) -> Response:
        run = await run_in_threadpool(runs().terminate, request.path_params["run"])
        return JSONResponse(run, status_code=202)

    task_path = "/v1/runs/{run}/tasks/{task}"
    routes = [
        Route("/v1/runs", endpoint("runs", create_run), methods=["POST"]),
        Route("/v1/runs/{run}/tasks", endpoint("submit", submit_tasks), methods=["POST"]),
        Route(task_path, endpoint("task", describe_task), methods=["GET"]),
        Route(f"{task_path}/cancel", endpoint("cancel", cancel_task), methods=["POST"]),
        Route(f"{task_path}/logs", endpoint("logs", task_logs), methods=["GET"]),
        Route("/v1/runs/{run}/terminate", endpoint("terminate", terminate_run), methods=["POST"]),
        Route("/v1/resources/resolve", endpoint("resolve", resolve_one), methods=["POST"]),
        Route("/v1/resources/resolve/batch", endpoint("batch", resolve_batch), methods=["POST"]),
        Route("/v1/weblog", endpoint("weblog", weblog), methods=["POST"]),
        Route("/health", endpoint("health", health), methods=["GET"]),
        Route("/metrics", endpoint("metrics", prometheus), methods=["GET"]),
        Route("/openapi.json", endpoint("openapi", openapi), methods=["GET"]),
        Route("/report", endpoint("report", report_endpoint(history)), methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if dispatcher is not None:
            dispatcher.start()
        try:
            yield
        finally:
            if dispatcher is not None:
                dispatcher.stop()

    return Starlette(routes=routes, lifespan=lifespan)
