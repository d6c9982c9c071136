"""The served sidecar's walls: a token on every write and on the report, one line at start
without one, and 300 half-sent requests under a 256-descriptor limit that leave it serving."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
from starlette.testclient import TestClient

from seqera_core.history import open_history
from seqera_sidecar import create_app
from seqera_sidecar.serving import connection_cap

from .conftest import start_sidecar, stop_sidecar

TRACE = {"task_id": 1, "process": "ALIGN", "status": "COMPLETED", "peak_rss": 1}
EVENT = {"runName": "r", "runId": "1", "event": "process_completed", "trace": TRACE}


def test_with_a_token_every_write_and_the_report_need_it(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    client = TestClient(create_app(history, token="t0ken"))
    calls = [("POST", "/v1/weblog", EVENT), ("GET", "/report", None),
             ("POST", "/v1/resources/resolve", {"process": "ALIGN"}),
             ("POST", "/v1/runs", {"name": "r"}), ("GET", "/metrics", None)]  # fmt: skip
    for method, path, body in calls:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            answer = client.request(method, path, json=body, headers=headers)
            assert answer.status_code == 401, (path, answer.text)
    assert history.count() == 0  # nothing written
    ok = client.post("/v1/weblog", json=EVENT, headers={"Authorization": "Bearer t0ken"})
    assert ok.status_code == 202 and history.count() == 1


def test_without_a_token_it_says_so_in_one_line_at_start(tmp_path: Path) -> None:
    process, served = start_sidecar(tmp_path / "h.db", None)
    try:
        # anyone on the machine may write: the line said so
        assert httpx.post(f"{served.url}/v1/weblog", json=EVENT).status_code == 202
    finally:
        stop_sidecar(process)
    assert process.stderr is not None
    said = process.stderr.read().splitlines()
    lines = [line for line in said if "any local user can write" in line]
    assert len(lines) == 1 and "no token" in lines[0], said
    # and the line that says where it listens names it too
    listening = [line for line in said if "listening on" in line]
    assert len(listening) == 1 and listening[0].endswith("(no token)"), said


def test_the_connection_cap_follows_the_descriptor_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert connection_cap(10) == min(10, (soft - 64) // 2)
    assert connection_cap(10**6) <= soft // 2


def test_300_half_sent_requests_under_256_descriptors_leave_it_serving(tmp_path: Path) -> None:
    # The attack: each connection sends a request line and one header, never the
    # blank line that ends the headers, and stays open.
    process, served = start_sidecar(tmp_path / "h.db", "t0ken", "--header-timeout", "2",
                                    nofile=256)  # fmt: skip
    port = int(served.url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for _ in range(300):
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            conn.sendall(b"POST /v1/weblog HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            held.append(conn)
        started = time.monotonic()
        # served again once the half-sent ones time out (2 s), with all 300 still open
        # on this side: a connection past the cap was answered 503 and closed at once
        answered = None
        while time.monotonic() - started < 15:
            try:
                answered = httpx.get(f"{served.url}/health", timeout=3)
                if answered.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        assert answered is not None and answered.status_code == 200, answered
        waited = time.monotonic() - started
        assert process.poll() is None
        weblog = httpx.post(f"{served.url}/v1/weblog", json=EVENT,
                            headers={"Authorization": "Bearer t0ken"}, timeout=5)  # fmt: skip
        assert weblog.status_code == 202, weblog.text
        # the half-sent ones were closed by the server: reading gives EOF or a 503
        closed = 0
        for conn in held:
            conn.settimeout(5)
            try:
                data = conn.recv(200)
            except OSError:
                data = b""
            closed += data == b"" or data.startswith(b"HTTP/1.1 503")
        assert closed == 300, closed
        print(f"served again {waited:.1f} s after 300 half-sent requests (nofile 256)")
    finally:
        for conn in held:
            conn.close()
        stop_sidecar(process)
    assert process.stderr is not None
    assert "Too many open files" not in process.stderr.read()
