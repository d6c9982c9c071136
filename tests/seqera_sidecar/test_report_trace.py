"""``seqera report`` of replayed nf-core runs: it agrees with ``seqera-sidecar evaluate``,
and the sidecar serves it at ``/report``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from seqera_core.cli import main as seqera
from seqera_core.history import open_history
from seqera_sidecar import create_app
from seqera_sidecar.evaluate import evaluate, evaluate_time, split
from seqera_sidecar.trace import read_trace

from .conftest import recorded_events

# nf-core/eager, every task COMPLETED, memory, time and cpus declared (trace.raw = true),
# a copy of shared/data/traces/trace_eager.csv
TRACE = Path(__file__).parent / "data" / "trace-eager.csv.gz"
AUTH = {"Authorization": "Bearer t0ken"}
SEED = 3


@pytest.fixture(scope="module")
def online_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history holding, as run ``online``, the tasks ``evaluate`` replays online."""
    online = split(read_trace(TRACE, run_id="online"), SEED)[1]
    path = tmp_path_factory.mktemp("eager") / "history.db"
    history = open_history(path)
    history.record(online)
    history.close()
    return path


def _report(history: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert seqera(["report", "--history", str(history), "--json"]) == 0
    figures: dict[str, object] = json.loads(capsys.readouterr().out)
    return figures


def test_the_figures_match_evaluate_on_the_same_tasks(
    online_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = _report(online_history, capsys)
    records = read_trace(TRACE)
    # nf-core's presets replayed: every online task runs once at what it declared (no
    # task of this trace peaked above its memory), which is what the report measures
    memory, time = evaluate(records, SEED, "preset"), evaluate_time(records, SEED, "preset")
    assert memory.retries == 0 and time.kills == 0
    totals: dict[str, Any] = figures["summary"]  # type: ignore[assignment]
    assert totals["tasks"] == memory.tasks == time.tasks == 1101
    assert totals["memory"]["used"] == pytest.approx(memory.used_gbh, rel=1e-9)
    assert totals["memory"]["wasted"] == pytest.approx(memory.wasted_gbh, rel=1e-9)
    processes = {p["process"]: p for p in figures["processes"]}  # type: ignore[attr-defined]
    assert set(processes) == set(memory.by_process)
    for name, wasted in memory.by_process.items():
        assert processes[name]["memory"]["wasted"] == pytest.approx(wasted, rel=1e-9), name
    assert totals["run_hours"] == pytest.approx(time.run_hours, rel=1e-9)
    assert totals["limit_hours"] == pytest.approx(time.declared_hours, rel=1e-9)


def test_the_command_line_rows_agree(
    online_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = _report(online_history, capsys)
    done = subprocess.run(
        [sys.executable, "-m", "seqera_sidecar", "evaluate", str(TRACE), "--seed", str(SEED),
         "--predictor", "preset"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    row = next(line for line in done.stdout.splitlines() if line.startswith("| preset | 1101"))
    used, wasted = (float(cell) for cell in row.split("|")[3:5])
    totals: dict[str, Any] = figures["summary"]  # type: ignore[assignment]
    assert used == pytest.approx(totals["memory"]["used"], abs=0.006)
    assert wasted == pytest.approx(totals["memory"]["wasted"], abs=0.006)


def test_the_page_of_the_whole_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = open_history(tmp_path / "h.db")
    history.record(read_trace(TRACE, run_id="eager"))
    history.close()
    page = tmp_path / "eager.html"
    assert seqera(["report", "--history", str(tmp_path / "h.db"), "-o", str(page)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("1576 tasks, no failure")
    # bwa wastes the most memory: 16 GiB asked, about 10 GiB used
    assert lines[1].startswith("  bwa: ")
    text = page.read_text()
    nextflow = text[text.index('<pre id="nextflow">') :].split("</pre>")[0]
    assert nextflow.count("withName: ") == 19 and "set-resources:" in text


def test_the_sidecar_serves_the_report_of_a_recorded_run(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    client = TestClient(create_app(history, token="t0ken"))
    events = recorded_events()
    assert client.post("/v1/weblog", json=events, headers=AUTH).status_code == 202
    run = events[0]["runId"]
    assert client.get(f"/report?run={run}").status_code == 401  # the token, as everywhere
    page = client.get(f"/report?run={run}", headers=AUTH)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Plotly.newPlot" in page.text and "withName:" in page.text
    figures = client.get(f"/report?run={run}&format=json", headers=AUTH).json()
    totals = figures["summary"]
    assert totals["runs"] == [run] and totals["tasks"] == history.count() == 2938
    unknown = client.get("/report?run=nope", headers=AUTH)
    assert unknown.status_code == 404 and "nope" in unknown.json()["problems"][0]
    assert client.get("/report?since=soon", headers=AUTH).status_code == 400
    assert client.get("/report?format=pdf", headers=AUTH).status_code == 400


def test_an_empty_sidecar_history_is_404(tmp_path: Path) -> None:
    client = TestClient(create_app(open_history(tmp_path / "h.db"), token="t0ken"))
    answer = client.get("/report", headers=AUTH)
    assert answer.status_code == 404 and "no task" in answer.json()["problems"][0]
