"""Property tests over the sidecar's endpoints: whatever arrives, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from seqera_core.errors import WireError
from seqera_core.history import open_history
from seqera_sidecar import create_app
from seqera_sidecar.edge import hosts
from seqera_sidecar.submission import task_spec
from seqera_sidecar.weblog import parse_event

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
AUTH = {"Authorization": "Bearer t0ken", "Content-Type": "application/json"}
POSTS = ["/v1/weblog", "/v1/resources/resolve", "/v1/resources/resolve/batch", "/v1/runs"]

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
           | st.text(max_size=20) | st.integers(min_value=10**18, max_value=10**400))  # fmt: skip
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                      max_leaves=20)  # fmt: skip
TRACE_KEYS = ["task_id", "process", "status", "exit", "attempt", "cpus", "memory", "time",
              "peak_rss", "realtime", "%cpu", "rchar", "complete", "container"]  # fmt: skip
traces = st.dictionaries(st.sampled_from(TRACE_KEYS), values, max_size=len(TRACE_KEYS))
events = st.fixed_dictionaries(
    {"runName": values | st.just("r"), "runId": values | st.just("1"),
     "event": st.sampled_from(["process_completed", "started", "error"]) | values},
    optional={"trace": traces | values, "utcTime": values},
)  # fmt: skip
TASK_KEYS = ["id", "name", "image", "command", "environment", "resources", "labels", "other"]
tasks = st.dictionaries(st.sampled_from(TASK_KEYS), values | st.lists(st.text(), max_size=3))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    history = open_history(tmp_path_factory.mktemp("props") / "h.db")
    app = create_app(history, token="t0ken", hosts=hosts(), body_limit=2**20)
    return TestClient(app, base_url="http://127.0.0.1:8080", raise_server_exceptions=False)


@SETTINGS
@given(path=st.sampled_from(POSTS), document=values | st.lists(events, max_size=3) | events)
def test_any_json_document_is_answered_below_500(
    client: TestClient, path: str, document: Any
) -> None:
    answer = client.post(path, content=json.dumps(document), headers=AUTH)
    assert answer.status_code < 500, answer.text


@SETTINGS
@given(path=st.sampled_from(POSTS), body=st.binary(max_size=200),
       media=st.sampled_from(["application/json", "text/plain", "", "application/x+json"]),
       token=st.binary(max_size=20), host=st.binary(min_size=1, max_size=20))  # fmt: skip
def test_any_bytes_and_headers_are_answered_below_500(
    client: TestClient, path: str, body: bytes, media: str, token: bytes, host: bytes
) -> None:
    headers = {"Content-Type": media, "Authorization": b"Bearer " + token, "Host": host}
    answer = client.post(path, content=body, headers=headers)
    assert answer.status_code < 500, answer.text


@SETTINGS
@given(document=events | values)
def test_an_event_is_parsed_or_refused_by_field(document: Any) -> None:
    try:
        parse_event(document)
    except WireError as exc:
        assert all(problem.startswith("$") for problem in exc.problems)


@SETTINGS
@given(document=tasks | values)
def test_a_task_is_parsed_or_refused_by_field(document: Any) -> None:
    # The parser alone: a task that parses is never run here.
    try:
        task_spec(0, document)
    except WireError as exc:
        assert all(problem.startswith("$.tasks[0]") for problem in exc.problems)


def test_deep_nesting_inside_a_valid_body_is_a_400(client: TestClient) -> None:
    deep = '{"runName": "r", "runId": "1", "event": "started", "metadata": ' + "[" * 5000
    answer = client.post("/v1/weblog", content=deep + "]" * 5000 + "}", headers=AUTH)
    assert answer.status_code in (202, 400), answer.text


# Every number of the weblog and resolve APIs, at and around the contract's bounds.
numbers = (
    st.sampled_from([0, 1, -1, 2**53, 2**63 - 1, 2**63, 10**308, 10**1000])
    | st.sampled_from(sorted({m + d for m in (100_000, 2**54, 3650 * 86_400, 4096,
                                             3650 * 86_400_000, 10**7) for d in (-1, 0, 1)}))
    | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
)  # fmt: skip
NUMERIC_TRACE = ["exit", "attempt", "cpus", "memory", "time", "peak_rss", "realtime", "%cpu",
                 "rchar", "complete"]  # fmt: skip
NUMERIC_REQUEST = ["cpus", "memory_bytes", "disk_bytes", "time_seconds", "accelerator.count",
                   "attempt", "task_index", "input_bytes", "resource_limits.cpus",
                   "resource_limits.memory_bytes", "resource_limits.disk_bytes",
                   "resource_limits.time_seconds"]  # fmt: skip
JSON = {**AUTH, "Content-Type": "application/json"}


def _contract() -> tuple[Any, Any]:
    from pathlib import Path

    shared = Path(__file__).parents[2] / "shared" / "schemas"
    return (json.loads((shared / "resource-request.schema.json").read_text()),
            json.loads((shared / "resource-response.schema.json").read_text()))  # fmt: skip


@SETTINGS
@given(values=st.dictionaries(st.sampled_from(NUMERIC_TRACE), numbers, min_size=1))
def test_every_weblog_number_is_kept_within_the_contract_or_refused_by_name(
    client: TestClient, values: dict[str, Any]
) -> None:
    trace = {"task_id": 1, "process": "BOUNDED", "status": "COMPLETED", **values}
    event = {"runName": "r", "runId": "bounded", "event": "process_completed", "trace": trace}
    answer = client.post("/v1/weblog", content=json.dumps(event), headers=JSON)
    assert answer.status_code in (202, 400), answer.text
    if answer.status_code == 400:
        named = {p.split(":")[0] for p in answer.json()["problems"]}
        assert named <= {f"$.trace.{k}" for k in values}, answer.text
    report = client.get("/report", params={"format": "json", "run": "bounded"}, headers=AUTH)
    assert report.status_code in (200, 404), report.text
    assert "Infinity" not in report.text and "NaN" not in report.text


def _nested(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nested(rest, value) if rest else value}


@SETTINGS
@given(values=st.dictionaries(st.sampled_from(NUMERIC_REQUEST), numbers, min_size=1))
def test_every_resolve_number_is_answered_within_the_contract_or_refused_by_name(
    client: TestClient, values: dict[str, Any]
) -> None:
    import jsonschema

    request_schema, response_schema = _contract()
    document: dict[str, Any] = {"process": "BOUNDED"}
    for path, value in values.items():
        nested = _nested(path, value)
        for key, part in nested.items():  # merge one level deep (accelerator, limits)
            if isinstance(part, dict) and isinstance(document.get(key), dict):
                document[key].update(part)
            else:
                document[key] = part
    answer = client.post("/v1/resources/resolve", content=json.dumps(document), headers=JSON)
    valid = jsonschema.Draft202012Validator(request_schema).is_valid(document)
    if answer.status_code == 400:
        assert not valid, (document, answer.text)
        for problem in answer.json()["problems"]:  # each names a field it was sent
            assert any(k.split(".")[-1] in problem for k in values), answer.text
    else:
        assert answer.status_code in (200, 204), answer.text
        assert valid, (document, answer.text)  # nothing the contract refuses gets through
        if answer.status_code == 200:
            jsonschema.validate(answer.json(), response_schema)
