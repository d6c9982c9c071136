"""Tasks no backend could ever run are 4xx at the runs API, never a 503 to retry."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from seqera_core.config import Config
from seqera_core.session import Session
from seqera_sidecar import create_app
from seqera_sidecar.runs import RunStore

AUTH = {"Authorization": "Bearer t0ken"}


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    config = Config({"backend": "local", "history": str(tmp_path / "history.db")})
    with Session(config, "seqera-sidecar", work_dir=tmp_path / "jobs") as session:
        store = RunStore(session, tmp_path / "runs.db")
        app = create_app(session.history, token="t0ken", dispatcher=store)  # type: ignore[arg-type]
        with TestClient(app) as client:
            run = client.post("/v1/runs", json={"name": "r"}, headers=AUTH).json()["id"]
            yield client, run


@pytest.mark.parametrize(
    ("task", "field"),
    [({"environment": {"A B": "x"}}, "environment"), ({"name": "n" * 5000}, "name"),
     ({"environment": {"1X": "x"}}, "environment"), ({"name": "two\nlines"}, "name"),
     ({"environment": {"X": "a\x00b"}}, "environment.X"), ({"command": ["a\x00b"]}, "command")],
)  # fmt: skip
def test_a_task_no_backend_can_run_is_a_400_naming_the_field(
    runs: tuple[TestClient, str], tmp_path: Path, task: dict[str, Any], field: str
) -> None:
    client, run = runs
    ran = tmp_path / "ran"
    document = {"command": ["sh", "-c", f"touch {ran}"], **task}
    answer = client.post(f"/v1/runs/{run}/tasks", json={"tasks": [document]}, headers=AUTH)
    assert answer.status_code == 400, answer.text
    assert answer.json()["problems"][0].startswith(f"$.tasks[0].{field}"), answer.text
    with sqlite3.connect(tmp_path / "runs.db") as db:
        assert db.execute("SELECT COUNT(*) FROM tasks").fetchone() == (0,)  # never stored
    assert not ran.exists()
    # the same task made right goes through
    ok = client.post(f"/v1/runs/{run}/tasks", json={"tasks": [{"command": ["true"]}]},
                     headers=AUTH)  # fmt: skip
    assert ok.status_code == 202, ok.text
