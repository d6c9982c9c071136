"""The HTTP edge in-process: malformed events, body limit, content type, Host, tokens."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from seqera_core.history import open_history
from seqera_sidecar import create_app
from seqera_sidecar.edge import hosts

from .conftest import recorded_events

AUTH = {"Authorization": "Bearer t0ken", "Content-Type": "application/json"}
URL = "http://127.0.0.1:8080"
HEAD = '{"runName": "r", "runId": "1", "event": "process_completed", "trace": '

# Each was a 500 (issue 20, defect 8): now a 4xx naming the field.
MALFORMED = {
    "event as a list": '{"runName": "r", "runId": "1", "event": ["process_completed"]}',
    "exit 1e999": HEAD + '{"task_id": 1, "process": "A", "exit": 1e999}}',
    "cpus as an object": HEAD + '{"task_id": 1, "process": "A", "cpus": {}}}',
    "cpus past a float": HEAD + '{"task_id": 1, "process": "A", "cpus": ' + "9" * 400 + "}}",
    "memory past 64 bits": HEAD + '{"task_id": 1, "process": "A", "memory": ' + "9" * 30 + "}}",
    "attempt as a list": HEAD + '{"task_id": 1, "process": "A", "attempt": [1]}}',
    "trace as a list": HEAD + "[1, 2]}",
    "task_id as an object": HEAD + '{"task_id": {}, "process": "A"}}',
    "%cpu as text": HEAD + '{"task_id": 1, "process": "A", "%cpu": "lots%"}}',
    "runId as a number": '{"runName": "r", "runId": 1, "event": "started"}',
}
# Refused whole: the body itself is not acceptable JSON.
UNPARSABLE = {
    "a 5,000-digit number": HEAD + '{"task_id": 1, "process": "A", "exit": ' + "9" * 5000 + "}}",
    "nesting 100k deep": "[" * 100_000 + "]" * 100_000,
    "NaN": HEAD + '{"task_id": 1, "process": "A", "cpus": NaN}}',
    "not UTF-8": b'{"runName": "\xff"}',
    "not JSON": "{runName",
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(open_history(tmp_path / "h.db"), token="t0ken", hosts=hosts(),
                     body_limit=2**20)  # fmt: skip
    with TestClient(app, base_url=URL) as client:
        yield client


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_event_is_a_400_alone_and_rejects_only_itself(
    client: TestClient, name: str
) -> None:
    alone = client.post("/v1/weblog", content=MALFORMED[name], headers=AUTH)
    assert alone.status_code == 400, alone.text
    assert alone.json()["problems"][0].startswith("$")
    good = json.dumps(recorded_events()[:3])
    batch = f"[{good[1:-1]}, {MALFORMED[name]}]"
    mixed = client.post("/v1/weblog", content=batch, headers=AUTH)
    assert mixed.status_code == 202, mixed.text
    assert mixed.json()["accepted"] == 3 and mixed.json()["problems"][0].startswith("$[3]")


@pytest.mark.parametrize("name", sorted(UNPARSABLE))
def test_an_unparsable_body_is_a_400(client: TestClient, name: str) -> None:
    body = UNPARSABLE[name]
    for path in ("/v1/weblog", "/v1/resources/resolve", "/v1/resources/resolve/batch"):
        answer = client.post(path, content=body, headers=AUTH)
        assert answer.status_code == 400, (path, answer.text)
        assert answer.json()["problems"][0].startswith("$: the body")


def test_a_body_past_the_limit_is_a_413_declared_or_streamed(client: TestClient) -> None:
    big = json.dumps([recorded_events()[0]] * 7000).encode()
    assert len(big) > 2**20
    assert client.post("/v1/weblog", content=big, headers=AUTH).status_code == 413
    streamed = client.post("/v1/weblog", content=iter([big[: 2**19]] * 3), headers=AUTH)
    assert streamed.status_code == 413  # chunked: no Content-Length to trust
    metrics = client.get("/metrics", headers=AUTH).text
    assert 'seqera_sidecar_errors_total{endpoint="weblog",kind="too_large"} 2.0' in metrics


def test_only_json_bodies_are_read(client: TestClient) -> None:
    event = json.dumps(recorded_events()[0])
    for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None):
        headers = {"Authorization": "Bearer t0ken"} | ({"Content-Type": media} if media else {})
        answer = client.post("/v1/weblog", content=event, headers=headers)
        assert answer.status_code == 415, media
    utf8 = {**AUTH, "Content-Type": "application/json; charset=utf-8"}
    assert client.post("/v1/weblog", content=event, headers=utf8).status_code == 202


def test_the_host_must_be_a_loopback_name(client: TestClient) -> None:
    for host in ("127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:8080"):
        assert client.get("/health", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8080", "127.0.0.1.evil.example", "[::2]"):
        answer = client.get("/health", headers={"Host": host})
        assert answer.status_code == 400 and "Host" in answer.json()["problems"][0], host


def test_configured_hosts_and_any_host(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    named = TestClient(create_app(history, hosts=hosts(["sidecar.lab:8080"])), base_url=URL)
    assert named.get("/health", headers={"Host": "sidecar.lab"}).status_code == 200
    assert named.get("/health", headers={"Host": "other.lab"}).status_code == 400
    anyhost = TestClient(create_app(history, hosts=None), base_url=URL)
    assert anyhost.get("/health", headers={"Host": "other.lab"}).status_code == 200


def test_tokens_are_compared_as_bytes(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    client = TestClient(create_app(history, token="pässwörd", hosts=hosts()), base_url=URL)
    right = {"Authorization": "Bearer pässwörd".encode()}
    assert client.get("/metrics", headers=right).status_code == 200
    # (The test client re-encodes headers that are not UTF-8: test_served sends raw bytes.)
    for given in ("Bearer ñ".encode(), "Bearer pässwörd!".encode(), b"Bearer t0ken"):
        assert client.get("/metrics", headers={"Authorization": given}).status_code == 401
    ascii_token = TestClient(create_app(history, token="t0ken"), base_url=URL)
    assert (
        ascii_token.get("/metrics", headers={"Authorization": "Bearer ñ".encode()}).status_code
        == 401
    )


def test_a_blocked_store_never_blocks_health(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    holder = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the history
    answers: list[int] = []
    with TestClient(create_app(history, token="t0ken"), base_url=URL) as client:
        event = json.dumps(next(e for e in recorded_events() if e["event"] == "process_completed"))

        def post() -> None:
            answers.append(client.post("/v1/weblog", content=event, headers=AUTH).status_code)

        stuck = threading.Thread(target=post)
        stuck.start()
        time.sleep(0.5)  # the weblog request now waits on the lock (5 s, SQLite's default)
        started = time.monotonic()
        assert client.get("/health").status_code == 200
        assert time.monotonic() - started < 1.0 and stuck.is_alive()
        stuck.join()
        holder.execute("ROLLBACK")
        assert answers == [503]  # "send the events again", never a 500
        metrics = client.get("/metrics", headers=AUTH).text
        assert 'seqera_sidecar_errors_total{endpoint="weblog",kind="history"} 1.0' in metrics
        assert client.post("/v1/weblog", content=event, headers=AUTH).status_code == 202
