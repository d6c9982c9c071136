"""The HTTP resolver against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from seqera_core import ResourceRequest, ResourceResponse
from seqera_core.resolvers import HttpResolver, resolve

GIB = 2**30
SHARED = Path(__file__).parents[3] / "shared"
REQUEST_SCHEMA = json.loads((SHARED / "schemas/resource-request.schema.json").read_text())
RESPONSE_SCHEMA = json.loads((SHARED / "schemas/resource-response.schema.json").read_text())
DEFAULTS = ResourceResponse(cpus=1, memory=GIB, disk=GIB, time=3600)

Behaviour = Callable[["Server", str, Any], tuple[int, Any]]


class Server:
    """A real HTTP server whose answers a test chooses; it records every request."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[tuple[str, Any, str | None]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body, self.headers.get("Authorization")))
                status, answer = server.behaviour(server, self.path, body)
                self.send_response(status)
                payload = b"" if answer is None else json.dumps(answer).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Behaviour], Server]]:
    servers: list[Server] = []

    def start(behaviour: Behaviour) -> Server:
        servers.append(Server(behaviour))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def _optimiser(server: Server, path: str, body: Any) -> tuple[int, Any]:
    def answer(request: dict[str, Any]) -> dict[str, Any] | None:
        jsonschema.validate(request, REQUEST_SCHEMA)
        if request.get("process") == "UNKNOWN":
            return None
        return {"cpus": 2, "memory_bytes": request["memory_bytes"] // 2, "disk_bytes": GIB,
                "time_seconds": 600}  # fmt: skip

    if path == "/v1/resources/resolve":
        result = answer(body)
        return (204, None) if result is None else (200, result)
    assert path == "/v1/resources/resolve/batch" and len(body["requests"]) <= 100
    return 200, {"responses": [answer(r) for r in body["requests"]]}


def _request(process: str = "ALIGN", memory: int = 8 * GIB, attempt: int = 1) -> ResourceRequest:
    return ResourceRequest(cpus=4, memory=memory, process=process, attempt=attempt)


def test_resolves_validates_and_sends_the_token(serve: Callable[[Behaviour], Server]) -> None:
    server = serve(_optimiser)
    resolver = HttpResolver(server.url, token="s3cret")
    answer = resolver.resolve(_request())
    assert answer == ResourceResponse(cpus=2, memory=4 * GIB, disk=GIB, time=600)
    jsonschema.validate({"cpus": 2, "memory_bytes": 4 * GIB, "disk_bytes": GIB,
                         "time_seconds": 600}, RESPONSE_SCHEMA)  # fmt: skip
    assert server.requests[0][2] == "Bearer s3cret"
    assert resolver.resolve(_request(process="UNKNOWN")) is None  # 204: no opinion


def test_cache_keyed_on_process_declared_values_and_attempt(
    serve: Callable[[Behaviour], Server],
) -> None:
    server = serve(_optimiser)
    resolver = HttpResolver(server.url)
    for _ in range(3):
        resolver.resolve(_request())
    resolver.resolve(_request(attempt=2))
    resolver.resolve(_request(memory=16 * GIB))
    assert len(server.requests) == 3


def test_batch_in_chunks_of_100(serve: Callable[[Behaviour], Server]) -> None:
    server = serve(_optimiser)
    resolver = HttpResolver(server.url)
    requests = [_request(memory=(i + 2) * GIB) for i in range(250)] + [_request("UNKNOWN")]
    answers = resolver.resolve_many(requests)
    assert [len(body["requests"]) for _, body, _ in server.requests] == [100, 100, 51]
    assert answers[0] is not None and answers[0].memory == GIB
    assert answers[-1] is None
    resolver.resolve(requests[5])  # cached by the batch
    assert len(server.requests) == 3


def test_500_is_retried_then_the_declared_values_are_used(
    serve: Callable[[Behaviour], Server], caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(lambda s, p, b: (500, {"error": "down"}))
    resolver = HttpResolver(server.url, retries=2, backoff=0.01)
    with caplog.at_level(logging.WARNING):
        result = resolve(_request(), [resolver], defaults=DEFAULTS)
    assert len(server.requests) == 3
    assert result.resolver == "declared" and result.effective.memory == 8 * GIB
    assert "http" in caplog.records[0].getMessage()


def test_recovers_after_a_transient_500(serve: Callable[[Behaviour], Server]) -> None:
    def flaky(server: Server, path: str, body: Any) -> tuple[int, Any]:
        return (503, None) if len(server.requests) == 1 else _optimiser(server, path, body)

    server = serve(flaky)
    answer = HttpResolver(server.url, backoff=0.01).resolve(_request())
    assert answer is not None and len(server.requests) == 2


def test_a_hanging_server_times_out_to_the_declared_values(
    serve: Callable[[Behaviour], Server],
) -> None:
    def hang(server: Server, path: str, body: Any) -> tuple[int, Any]:
        server.release.wait(10)
        return 200, None

    server = serve(hang)
    resolver = HttpResolver(server.url, timeout=0.2, retries=0)
    result = resolve(_request(), [resolver], defaults=DEFAULTS, timeout=2)
    assert result.resolver == "declared"


def test_connection_refused_is_retried_then_declared() -> None:
    resolver = HttpResolver("http://127.0.0.1:9", retries=1, backoff=0.01, timeout=0.5)
    result = resolve(_request(), [resolver], defaults=DEFAULTS)
    assert result.resolver == "declared"


def test_garbage_answer_is_rejected(serve: Callable[[Behaviour], Server]) -> None:
    server = serve(lambda s, p, b: (200, {"cpus": 1, "memory_bytes": "lots"}))
    result = resolve(_request(), [HttpResolver(server.url)], defaults=DEFAULTS)
    assert result.resolver == "declared"


def test_from_env() -> None:
    assert HttpResolver.from_env({}) is None
    resolver = HttpResolver.from_env(
        {"SEQERA_RESOLVER_URL": "http://127.0.0.1:1/", "SEQERA_RESOLVER_TOKEN": "t"}
    )
    assert resolver is not None and resolver.endpoint == "http://127.0.0.1:1"


def test_openapi_contract_refers_to_the_schemas() -> None:
    spec = yaml.safe_load((SHARED / "openapi/seqera-sidecar.yaml").read_text())
    assert spec["openapi"].startswith("3.1")
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            refs.extend(v for k, v in node.items() if k == "$ref" and not v.startswith("#"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    assert refs and all((SHARED / "openapi" / ref).resolve().is_file() for ref in refs)
    assert {"/v1/resources/resolve", "/v1/resources/resolve/batch"} <= set(spec["paths"])
