"""The issue's hostile numbers at the sidecar's edge: refused naming the field, and what an
older writer left in the history never breaks ``/report``, a resolution or a config."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from seqera_core.bounds import MAX_BYTES, MAX_SECONDS
from seqera_core.history import TaskRecord, open_history
from seqera_core.resolvers import MaximumResolver
from seqera_sidecar import create_app
from seqera_sidecar.nextflow_config import process_config
from tests.groovy import run_groovy

AUTH = {"Authorization": "Bearer t0ken"}
NAME = "EVIL'}\nprocess { cpus = 999 }//"


def _event(**trace: Any) -> dict[str, Any]:
    base = {"task_id": 1, "process": "ALIGN", "status": "COMPLETED", "exit": 0}
    return {"runName": "r", "runId": "run-1", "event": "process_completed",
            "trace": {**base, **trace}}  # fmt: skip


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    history = open_history(tmp_path / "h.db")
    app = create_app(history, token="t0ken", resolvers=[MaximumResolver(history)])
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("trace", "field"),
    [({"cpus": 1e308}, "cpus"), ({"realtime": 1e308}, "realtime"), ({"%cpu": 1e12}, "%cpu"),
     ({"memory": 2**63 - 1}, "memory"), ({"peak_rss": MAX_BYTES + 1}, "peak_rss"),
     ({"time": 10**300}, "time"), ({"complete": 1e300}, "complete")],
)  # fmt: skip
def test_a_weblog_number_past_the_contract_is_a_400_naming_it(
    client: TestClient, trace: dict[str, Any], field: str
) -> None:
    answer = client.post("/v1/weblog", json=_event(**trace), headers=AUTH)
    assert answer.status_code == 400, answer.text
    (problem,) = answer.json()["problems"]
    assert problem.startswith(f"$.trace.{field}: ") and "is larger than" in problem
    # in a batch, the bad event alone is refused
    batch = client.post("/v1/weblog", json=[_event(**trace), _event(task_id=2)], headers=AUTH)
    assert batch.status_code == 202 and batch.json()["recorded"] == 1


@pytest.mark.parametrize(
    ("document", "field"),
    [({"time_seconds": 10**308}, "time_seconds"), ({"cpus": 1e308}, "cpus"),
     ({"memory_bytes": 2**62}, "memory_bytes"), ({"task_index": 2**64}, "task_index")],
)  # fmt: skip
def test_a_resolve_number_past_the_contract_is_a_400_naming_it(
    client: TestClient, document: dict[str, Any], field: str
) -> None:
    for path, body, where in (
        ("/v1/resources/resolve", {"process": "ALIGN", **document}, "$"),
        ("/v1/resources/resolve/batch", {"requests": [{"process": "ALIGN", **document}]},
         "$.requests[0]"),
    ):  # fmt: skip
        answer = client.post(
            path, content=json.dumps(body), headers={**AUTH, "Content-Type": "application/json"}
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["problems"][0].endswith(f" @ {where}.{field}"), answer.text


def _older_writer(path: Path) -> None:
    """What an older sidecar stored from the issue's events (SQLite keeps infinities)."""
    with sqlite3.connect(path) as db:
        for task, value in (("old-1", 1e308), ("old-2", 9e999)):
            db.execute(
                "INSERT INTO task_history (run_id, task_id, attempt, process, engine, succeeded,"
                " cpus, memory, time, peak_memory, cpu_percent, realtime, finished) VALUES "
                "('run-1', ?, 1, ?, 'nextflow', 1, ?, ?, ?, ?, ?, ?, ?)",
                (task, NAME, value, 2**63 - 1, 2**63 - 1, 2**63 - 1, value, value, 1.8e9),
            )


def test_what_an_older_writer_stored_never_breaks_report_resolve_or_config(
    client: TestClient, tmp_path: Path
) -> None:
    assert client.post("/v1/weblog", json=_event(peak_rss=2**30, realtime=60_000,
                       complete=1.8e12), headers=AUTH).status_code == 202  # fmt: skip
    _older_writer(tmp_path / "h.db")
    for form in ("json", "html"):
        answer = client.get(f"/report?format={form}", headers=AUTH)
        assert answer.status_code == 200, answer.text[-2000:]
        assert "Infinity" not in answer.text  # (plotly.js itself holds "NaN")
    assert "NaN" not in client.get("/report?format=json", headers=AUTH).text
    for since in ("0001-01-01", "0001-01-01T00:00+14:00"):
        answer = client.get("/report", params={"format": "json", "since": since}, headers=AUTH)
        assert answer.status_code == 200, answer.text
    resolved = client.post("/v1/resources/resolve", json={"process": NAME}, headers=AUTH)
    assert resolved.status_code in (200, 204), resolved.text
    if resolved.status_code == 200:
        assert resolved.json()["time_seconds"] <= MAX_SECONDS
    history = open_history(tmp_path / "h.db")
    # the largest measures the contract allows: the margin on top is capped to it
    history.record([TaskRecord("run-2", "3", NAME, True, peak_memory=MAX_BYTES,
                               realtime=MAX_SECONDS, cpu_percent=100.0, cpus=1)])  # fmt: skip
    config = process_config(history, [MaximumResolver(history)])
    history.close()
    # one block per process, the name kept inside its string (and its comment line)
    assert config.count("withName:") == 2, config
    assert not any(line.startswith("process { cpus = 999") for line in config.splitlines())
    (tmp_path / "nextflow.config").write_text(config, encoding="utf-8")
    evil = next(line for line in config.splitlines() if "withName: 'EVIL" in line)
    assert "memory = '16 PB'" in evil and "time = '3650d'" in evil, evil
    script = f"new GroovyShell().parse(new File('{tmp_path}/nextflow.config').text)\n"
    assert run_groovy(script + "println('parsed')\n", tmp_path) == ["parsed"]
