"""The HTTP resolver against a real HTTP server on 127.0.0.1, checked against the contract."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from seqera_core import ResourceRequest, ResourceResponse, SeqeraError, UsageError, WireError
from seqera_core.resolvers import BATCH_LIMIT, HttpResolver, resolve

from ._contract import Contract

GIB = 2**30
DEFAULTS = ResourceResponse(cpus=1, memory=GIB, disk=GIB, time=3600)
ONE, BATCH = "/v1/resources/resolve", "/v1/resources/resolve/batch"

Behaviour = Callable[["Server", str, Any], tuple[int, Any]]


class Server:
    """A real HTTP server whose answers a test chooses.

    It records every request, validates each body it receives and each 200 body it
    returns against the contract, and lists what did not match in ``problems``.
    """

    def __init__(self, behaviour: Behaviour, contract: Contract, check_answers: bool) -> None:
        self.behaviour = behaviour
        self.requests: list[tuple[str, Any, str | None]] = []
        self.problems: list[str] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body, self.headers.get("Authorization")))
                found = [e.message for e in contract.request(self.path).iter_errors(body)]
                server.problems.extend(f"request to {self.path}: {m}" for m in found)
                if found:  # what a real sidecar answers to a document off the schema
                    status, answer = 400, {"problems": found}
                else:
                    status, answer = server.behaviour(server, self.path, body)
                if status == 200 and check_answers:
                    errors = contract.response(self.path, 200).iter_errors(answer)
                    server.problems.extend(f"answer from {self.path}: {e.message}" for e in errors)
                payload = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # A short poll interval so that shutdown() does not wait half a second.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def paths(self) -> list[str]:
        """The path of every request received, in order."""
        return [path for path, _, _ in self.requests]

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


Serve = Callable[..., Server]


@pytest.fixture
def serve(contract: Contract) -> Iterator[Serve]:
    """Start servers on 127.0.0.1; stop them and check they saw only valid bodies."""
    servers: list[Server] = []

    def start(behaviour: Behaviour, *, check_answers: bool = True) -> Server:
        servers.append(Server(behaviour, contract, check_answers))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()
    assert [p for s in servers for p in s.problems] == []


def _answer(request: dict[str, Any]) -> dict[str, Any] | None:
    if request.get("process") == "UNKNOWN":
        return None
    return {"cpus": 2, "memory_bytes": request["memory_bytes"] // 2, "disk_bytes": GIB,
            "time_seconds": 600}  # fmt: skip


def optimiser(server: Server, path: str, body: Any) -> tuple[int, Any]:
    """Half the declared memory; no opinion on the process UNKNOWN."""
    if path == ONE:
        result = _answer(body)
        return (204, None) if result is None else (200, result)
    return 200, {"responses": [_answer(r) for r in body["requests"]]}


def _request(process: str = "ALIGN", memory: int = 8 * GIB, **more: Any) -> ResourceRequest:
    return ResourceRequest(cpus=4, memory=memory, process=process, **more)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_one_answer_with_the_token(serve: Serve) -> None:
    server = serve(optimiser)
    with HttpResolver(server.url, token="s3cret") as resolver:
        answer = resolver.resolve(_request(labels={"sample": "s1"}, task_index=7))
        assert answer == ResourceResponse(cpus=2, memory=4 * GIB, disk=GIB, time=600)
        assert resolver.resolve(_request(process="UNKNOWN")) is None  # 204: no opinion
    assert server.paths() == [ONE, ONE]
    assert [auth for _, _, auth in server.requests] == ["Bearer s3cret"] * 2
    assert server.requests[0][1]["memory_bytes"] == 8 * GIB
    assert "s3cret" not in repr(resolver)


def test_no_token_no_authorization_header(serve: Serve) -> None:
    server = serve(optimiser)
    HttpResolver(server.url).resolve(_request())
    assert server.requests[0][2] is None


def test_through_the_chain_declared_is_kept(serve: Serve) -> None:
    server = serve(optimiser)
    request = _request()
    result = resolve(request, [HttpResolver(server.url)], defaults=DEFAULTS, timeout=2)
    assert result.resolver == "http" and result.effective.memory == 4 * GIB
    assert result.declared is request


def test_cache_keyed_on_process_declared_values_and_attempt(serve: Serve) -> None:
    server = serve(optimiser)
    resolver = HttpResolver(server.url)
    for index in range(3):
        resolver.resolve(_request(task_index=index))  # another task of the same process
    resolver.resolve(_request(attempt=2))
    resolver.resolve(_request(memory=16 * GIB))
    resolver.resolve(_request(process="SORT"))
    resolver.resolve(_request(process="UNKNOWN"))
    resolver.resolve(_request(process="UNKNOWN"))  # "no opinion" is cached too
    assert len(server.requests) == 5


def test_cache_is_bounded(serve: Serve) -> None:
    server = serve(optimiser)
    resolver = HttpResolver(server.url, cache_size=2)
    for memory in (2, 4, 6, 2):  # 2 GiB was evicted by 6 GiB
        resolver.resolve(_request(memory=memory * GIB))
    assert len(server.requests) == 4


def test_batch_in_chunks_of_100_in_order(serve: Serve) -> None:
    server = serve(optimiser)
    resolver = HttpResolver(server.url)
    resolver.resolve(_request(memory=2 * GIB))  # already cached: not sent again
    requests = [_request(memory=(i + 2) * GIB) for i in range(250)]
    requests += [_request("UNKNOWN"), requests[10]]  # no opinion, and a duplicate
    answers = resolver.resolve_many(requests)
    batches = [body["requests"] for path, body, _ in server.requests if path == BATCH]
    assert [len(b) for b in batches] == [BATCH_LIMIT, BATCH_LIMIT, 50]
    assert [a.memory if a else None for a in answers] == [
        (i + 2) * GIB // 2 for i in range(250)
    ] + [None, 6 * GIB]
    resolver.resolve(requests[5])
    resolver.resolve_many(requests[:120])
    assert len(server.requests) == 4  # everything above came from the cache


def test_batch_with_a_malformed_item_names_it(serve: Serve) -> None:
    good = {"cpus": 1, "memory_bytes": GIB, "disk_bytes": GIB, "time_seconds": 60}
    server = serve(lambda s, p, b: (200, {"responses": [good, {"cpus": 1}]}), check_answers=False)
    with pytest.raises(WireError, match=r"responses\[1\]"):
        HttpResolver(server.url).resolve_many([_request(), _request(process="SORT")])


def test_batch_with_the_wrong_number_of_answers(serve: Serve) -> None:
    server = serve(lambda s, p, b: (200, {"responses": []}), check_answers=False)
    with pytest.raises(WireError, match="expected a list of 1"):
        HttpResolver(server.url).resolve_many([_request()])


def test_500_is_retried_with_backoff_then_declared(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(lambda s, p, b: (500, {"error": "down"}))
    delays: list[float] = []
    resolver = HttpResolver(server.url, retries=3, backoff=0.1, sleep=delays.append)
    with caplog.at_level(logging.WARNING):
        result = resolve(_request(task_index=4), [resolver], defaults=DEFAULTS, timeout=2)
    assert len(server.requests) == 4 and delays == [0.1, 0.2, 0.4]
    assert result.resolver == "declared" and result.effective.memory == 8 * GIB
    (warning,) = _warnings(caplog)
    assert "resolver http" in warning and "ALIGN #4 (attempt 1)" in warning
    assert "HTTP 500" in warning


def test_recovers_after_a_transient_503(serve: Serve) -> None:
    def flaky(server: Server, path: str, body: Any) -> tuple[int, Any]:
        return (503, None) if len(server.requests) == 1 else optimiser(server, path, body)

    server = serve(flaky)
    answer = HttpResolver(server.url, sleep=lambda _: None).resolve(_request())
    assert answer is not None and len(server.requests) == 2


def test_4xx_is_not_retried(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    server = serve(lambda s, p, b: (404, {"error": "no such path"}))
    result = resolve(_request(), [HttpResolver(server.url)], defaults=DEFAULTS, timeout=2)
    assert result.resolver == "declared" and len(server.requests) == 1
    assert "HTTP 404" in _warnings(caplog)[0]


def _hang(server: Server, path: str, body: Any) -> tuple[int, Any]:
    server.release.wait(10)
    return 204, None


@pytest.mark.parametrize(("http_timeout", "chain_timeout"), [(0.2, 5), (5, 0.2)])
def test_a_hanging_server_is_bounded_then_declared(
    serve: Serve, caplog: pytest.LogCaptureFixture, http_timeout: float, chain_timeout: float
) -> None:
    server = serve(_hang)
    resolver = HttpResolver(server.url, timeout=http_timeout, retries=0)
    started = time.monotonic()
    result = resolve(_request(), [resolver], defaults=DEFAULTS, timeout=chain_timeout)
    assert time.monotonic() - started < 1.5
    assert result.resolver == "declared" and result.effective.cpus == 4
    (warning,) = _warnings(caplog)
    assert "resolver http" in warning and "ALIGN (attempt 1)" in warning


def test_connection_refused_is_retried_then_declared(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as probe:  # a port on 127.0.0.1 that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delays: list[float] = []
    resolver = HttpResolver(f"http://127.0.0.1:{port}", retries=2, sleep=delays.append)
    result = resolve(_request(), [resolver], defaults=DEFAULTS, timeout=2)
    assert result.resolver == "declared" and len(delays) == 2
    assert "ConnectError" in _warnings(caplog)[0]


@pytest.mark.parametrize(
    "answer",
    [
        {"cpus": 1, "memory_bytes": "lots"},
        {"cpus": 0, "memory_bytes": 1, "disk_bytes": 1, "time_seconds": 1},
        [1, 2],
        "not json",
    ],
)
def test_garbage_answer_is_rejected(
    serve: Serve, caplog: pytest.LogCaptureFixture, answer: Any
) -> None:
    if answer == "not json":
        server = serve(lambda s, p, b: (200, None), check_answers=False)
    else:
        server = serve(lambda s, p, b: (200, answer), check_answers=False)
    result = resolve(_request(), [HttpResolver(server.url)], defaults=DEFAULTS, timeout=2)
    assert result.resolver == "declared"
    assert len(_warnings(caplog)) == 1
    assert "resolver http failed (WireError" in _warnings(caplog)[0]


def test_an_error_answer_is_a_seqera_error(serve: Serve) -> None:
    server = serve(lambda s, p, b: (403, {"error": "forbidden"}))
    with pytest.raises(SeqeraError, match="HTTP 403"):
        HttpResolver(server.url).resolve(_request())


@pytest.mark.parametrize(
    ("url", "timeout", "message"),
    [("http://x", 0.0, "timeout"), ("ftp://x", 5.0, "not an http")],
)
def test_bad_settings_are_usage_errors(url: str, timeout: float, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        HttpResolver(url, timeout=timeout)


def test_a_password_in_the_endpoint_never_shows(serve: Serve) -> None:
    server = serve(lambda server, path, body: (400, {"detail": "no"}))
    host = server.url.removeprefix("http://")
    resolver = HttpResolver(f"http://bot:s3cret@{host}", retries=0)
    with pytest.raises(SeqeraError) as caught:
        resolver.resolve(_request())
    assert "s3cret" not in str(caught.value) and "bot:***@" in str(caught.value)
    assert "s3cret" not in repr(resolver)
    with pytest.raises(UsageError) as refused:
        HttpResolver("ftp://bot:s3cret@x")
    assert "s3cret" not in str(refused.value)


def test_an_answer_past_the_contract_is_capped_like_a_declared_value(serve: Serve) -> None:
    # The service: a 309-digit time_seconds (and a million cores) in a 200 answer.
    huge = {"cpus": 10**6, "memory_bytes": GIB, "disk_bytes": GIB, "time_seconds": 10**309}
    server = serve(lambda s, p, b: (200, huge) if p == ONE else (200, {"responses": [huge]}),
                   check_answers=False)  # fmt: skip
    result = resolve(_request(), [HttpResolver(server.url)], defaults=DEFAULTS, timeout=5)
    assert result.resolver == "http"
    assert (result.effective.cpus, result.effective.time) == (100_000, 3650 * 86_400)
    assert HttpResolver(server.url).resolve_many([_request()]) == [result.effective]
