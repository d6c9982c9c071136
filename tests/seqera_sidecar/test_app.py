"""The service in-process: a real nf-core run replayed, resolution, config, auth, faults."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from seqera_core.history import open_history
from seqera_core.resolvers import MaximumResolver, PredictiveResolver
from seqera_sidecar import create_app
from seqera_sidecar.nextflow_config import process_config

from .conftest import expected_peaks, recorded_events

AUTH = {"Authorization": "Bearer t0ken"}


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(open_history(tmp_path / "h.db"), token="t0ken"))


def test_a_recorded_nf_core_run_feeds_history_resolution_and_config(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    client = TestClient(create_app(history, token="t0ken", resolvers=[MaximumResolver(history)]))
    events = recorded_events()
    for start in range(0, len(events), 500):  # as batches, and one by one below
        answer = client.post("/v1/weblog", json=events[start : start + 500], headers=AUTH)
        assert answer.status_code == 202, answer.text
    assert client.post("/v1/weblog", json=events[0], headers=AUTH).status_code == 202
    peaks = expected_peaks()
    assert history.count() == 2938  # every task of the run, once
    process = max(peaks, key=peaks.get)  # the hungriest process
    declared = {"process": process, "memory_bytes": 200 * 2**30, "cpus": 8, "time_seconds": 86400}
    answer = client.post("/v1/resources/resolve", json=declared, headers=AUTH)
    assert answer.status_code == 200
    assert answer.json()["memory_bytes"] == math.ceil(peaks[process] * 1.2)
    unknown = client.post("/v1/resources/resolve", json={"process": "NEW"}, headers=AUTH)
    assert unknown.status_code == 204
    config = process_config(history, [MaximumResolver(history)], cpus=True)
    assert config.count("withName:") == len(peaks)
    mib = math.ceil(math.ceil(peaks[process] * 1.2) / 2**20)
    lines = config.splitlines()
    at = next(i for i, line in enumerate(lines) if f"'{process}'" in line)
    assert f"memory = '{mib} MB'" in lines[at] or f"memory = '{mib // 1024} GB'" in lines[at]
    # what the block rests on: the runs seen and the margin over the largest peak
    runs = history.stats(process).runs  # type: ignore[union-attr]
    assert lines[at - 1].startswith(f"    // {process}: {runs} run")
    assert "memory 1.20 x the largest peak" in lines[at - 1]


def test_static_config_and_resolve_answer_from_one_right_sizer(tmp_path: Path) -> None:
    """config (static) and POST /v1/resources/resolve give one answer for one question."""
    history = open_history(tmp_path / "h.db")
    client = TestClient(create_app(history, token="t0ken"))
    assert client.post("/v1/weblog", json=recorded_events(), headers=AUTH).status_code == 202
    config = process_config(history, [PredictiveResolver(history)]).splitlines()
    for process in sorted(expected_peaks())[:5]:
        answer = client.post("/v1/resources/resolve", json={"process": process}, headers=AUTH)
        block = next(line for line in config if f"'{process}'" in line)
        if answer.status_code == 204:
            assert block is None
            continue
        mib = math.ceil(answer.json()["memory_bytes"] / 2**20)
        assert f"memory = '{mib} MB'" in block or f"memory = '{mib // 1024} GB'" in block
        assert "cpus" not in block  # no declared cpus to keep: left to the process


def test_the_default_resolver_sizes_from_input_bytes(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    client = TestClient(create_app(history, token="t0ken"))
    events = recorded_events()
    assert client.post("/v1/weblog", json=events, headers=AUTH).status_code == 202
    peaks = expected_peaks()
    process = max(peaks, key=peaks.get)
    sizes = sorted({r.input_bytes for r in PredictiveResolver(history).history.attempts()[1]
                    if r.process == process and r.input_bytes})  # fmt: skip
    declared = {"process": process, "memory_bytes": 200 * 2**30}
    unsized = client.post("/v1/resources/resolve", json=declared, headers=AUTH).json()
    # No input size: the process's calibrated bound, here past its largest peak and
    # short of the old fixed 20 % margin.
    assert peaks[process] <= unsized["memory_bytes"] <= math.ceil(peaks[process] * 1.2)
    small = {**declared, "input_bytes": sizes[0]}
    sized = client.post("/v1/resources/resolve", json=small, headers=AUTH).json()
    assert 64 * 2**20 <= sized["memory_bytes"] <= math.ceil(peaks[process] * 1.2)


def test_batch_answers_in_order_with_null_for_no_opinion(client: TestClient) -> None:
    client.post("/v1/weblog", headers=AUTH, json={
        "runName": "r", "runId": "1", "event": "process_completed",
        "trace": {"task_id": 1, "process": "A", "status": "COMPLETED", "exit": 0,
                  "peak_rss": 10**9, "realtime": 60000, "%cpu": 100.0},
    })  # fmt: skip
    body = {"requests": [{"process": "NEW"}, {"process": "A"}]}
    answer = client.post("/v1/resources/resolve/batch", json=body, headers=AUTH)
    assert answer.status_code == 200
    first, second = answer.json()["responses"]
    # The default (predictive) resolver: one run, no input size -> the largest peak x 1.2.
    assert first is None and second["memory_bytes"] == math.ceil(10**9 * 1.2)


def test_a_malformed_event_never_loses_its_neighbours(client: TestClient, tmp_path: Path) -> None:
    good = recorded_events()[:40]
    bad = {"runName": "r", "runId": "1", "event": "process_completed", "trace": {"task_id": 1}}
    answer = client.post("/v1/weblog", json=[*good[:20], bad, *good[20:]], headers=AUTH)
    assert answer.status_code == 202
    assert answer.json()["accepted"] == 40
    assert answer.json()["problems"] == ["$[20].trace.process: None is not a non-empty string"]
    alone = client.post("/v1/weblog", json=bad, headers=AUTH)
    assert alone.status_code == 400 and "$.trace.process" in alone.json()["problems"][0]


def test_bad_requests_get_400_naming_the_field(client: TestClient) -> None:
    answer = client.post("/v1/resources/resolve", json={"memory_bytes": "4 GB"}, headers=AUTH)
    assert answer.status_code == 400
    assert any("$.memory_bytes" in p for p in answer.json()["problems"])
    json_type = {**AUTH, "Content-Type": "application/json"}
    broken = client.post("/v1/resources/resolve", content=b"{not json", headers=json_type)
    assert broken.status_code == 400
    too_many = {"requests": [{}] * 101}
    assert (
        client.post("/v1/resources/resolve/batch", json=too_many, headers=AUTH).status_code == 400
    )


def test_a_token_guards_everything_but_health(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"
    assert client.post("/v1/resources/resolve", json={}).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert client.post("/v1/resources/resolve", json={}, headers=wrong).status_code == 401
    assert client.get("/metrics").status_code == 401
    metrics = client.get("/metrics", headers=AUTH)
    assert metrics.status_code == 200 and "seqera_sidecar_requests_total" in metrics.text
