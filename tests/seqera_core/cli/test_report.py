"""``seqera report``: the page, ``--json``, the selection flags, and exit 2 on bad input."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seqera_core.cli import main
from seqera_core.history import TaskRecord, open_history
from seqera_core.units import GIB

REPO = Path(__file__).parents[3]
PLATFORM = REPO / "shared" / "platforms" / "slurm-cluster.yaml"
NOON = 1_795_521_600.0  # 2026-11-24T12:00Z


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The developer's own ~/.config/seqera and SEQERA_* variables must not leak in.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_PLATFORM", "SEQERA_HISTORY", "SEQERA_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    store = open_history(path)
    store.record(
        TaskRecord(run, f"{process}-{i}", process, i % 5 != 4, cpus=2, memory=4 * GIB, time=3600,
                   peak_memory=GIB, cpu_percent=100.0, realtime=1800.0, out_of_memory=i % 5 == 4,
                   finished=NOON + 3600 * (run == "late"), input_bytes=1000 + i)
        for run in ("early", "late") for process in ("bwa", "sort") for i in range(12)
    )  # fmt: skip
    store.close()
    return path


def test_the_page_and_its_path(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--history", str(history), "-o", "out/r.html"]) == 0
    out = capsys.readouterr().out
    page = tmp_path / "out" / "r.html"
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert out.splitlines()[-1] == f"report: {page}"
    assert out.startswith("48 tasks, 8 failed (8 out of memory)")


def test_json_is_the_same_figures(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--history", str(history), "--run", "late", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    totals = figures["summary"]  # the README's `jq '.summary'`
    assert totals["runs"] == ["late"] and totals["tasks"] == 24
    assert totals["failures"] == {"out_of_memory": 4}
    # 20 successful half-hours at 4 GB asked, 1 GB used; 4 killed half-hours at 4 GB
    assert totals["memory"]["requested"] == pytest.approx(24 * 4 * GIB * 0.5 / 1e9)
    assert totals["memory"]["wasted"] == pytest.approx((20 * 3 + 4 * 4) * GIB * 0.5 / 1e9)
    assert totals["costs"] is None
    assert {p["process"] for p in figures["processes"]} == {"bwa", "sort"}
    assert all(p["advice"]["memory"] < 4 * GIB for p in figures["processes"])
    assert "withName: 'bwa'" in figures["snippets"]["nextflow"]


def test_since_and_several_runs(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--history", f"sqlite:///{history}", "--since",
                 "2026-11-24T12:30Z", "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["summary"]["runs"] == ["late"]
    assert main(["report", "--history", str(history), "--run", "early", "late", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["runs"] == ["early", "late"]


def test_cost_at_the_platforms_rates(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--history", str(history), "--platform", str(PLATFORM), "--json"]) == 0
    costs = json.loads(capsys.readouterr().out)["summary"]["costs"]
    # the default queue (normal) takes the platform's rates: 0.02 a core-hour, 0.004 a GiB-hour
    assert costs["total"] == pytest.approx(48 * 0.5 * (2 * 0.02 + 4 * 0.004))
    assert costs["rates"]["core_hour"] == 0.02


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "nope"], "--run: 'nope' is not valid; expected a run id in"),
        (["--since", "last week"], "--since: 'last week' is not valid"),
        (["--since", "2030-01-01"], "no task in"),
        (["--platform", "missing.yaml"], "--platform: 'missing.yaml'"),
    ],
)
def test_bad_input_exits_2(
    history: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--history", str(history), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seqera report: error: ") and message in err


def test_an_empty_or_missing_history_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    open_history(tmp_path / "empty.db").close()
    assert main(["report", "--history", str(tmp_path / "empty.db")]) == 2
    assert "holds no task yet" in capsys.readouterr().err
    assert main(["report", "--history", str(tmp_path / "none.db")]) == 2
    assert "an existing history" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()  # never created by looking
    assert main(["report"]) == 2  # the default, ~/.seqera/history.db, is not there either
    assert ".seqera/history.db" in capsys.readouterr().err


def test_the_console_script(history: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "report", "--history", str(history), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["tasks"] == 48


def _readme_jq_lines() -> list[tuple[list[str], str]]:
    """The documented ``seqera report ... --json | jq FILTER`` lines (the ``seqera report``
    page of the docs, where the README sends its readers): the report's arguments and the
    filter, from the page's code blocks."""
    section = (REPO / "docs" / "commands" / "report.md").read_text()
    found = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            command, bar, rest = line.partition("|")
            if bar and rest.split()[:1] == ["jq"]:
                words = shlex.split(command, comments=True)
                assert words[:3] == ["uv", "run", "seqera"], line
                found.append((words[3:], shlex.split(rest, comments=True)[1]))
    return found


def _jq(document: str, expression: str) -> str:
    """``jq EXPRESSION`` over ``document``: the real jq (CI installs it, .ci/run); on a
    machine without it, Python for a plain path (``.a.b[0]``, ``.a[]``), else a skip."""
    jq = shutil.which("jq")
    if jq is not None:
        done = subprocess.run([jq, expression], input=document, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout
    if not re.fullmatch(r"(\.\w+|\[\d*\])+", expression):
        message = f"jq is not installed and {expression!r} is more than a path"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    values = [json.loads(document)]
    for step in re.findall(r"\.\w+|\[\d*\]", expression):
        if step == "[]":
            values = [item for value in values for item in value]
        elif step.startswith("["):
            values = [value[int(step[1:-1])] for value in values]
        else:
            values = [value.get(step[1:]) for value in values]
    return "".join(json.dumps(value) + "\n" for value in values)


def test_the_readmes_jq_lines_print_what_they_promise(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _readme_jq_lines()
    assert len(lines) >= 2, "the report's page shows its JSON through jq"
    # and one attempt as a Slurm without slurmdbd records it: no run time, no peak, no CPU
    store = open_history(history)
    store.record([TaskRecord("late", "unmeasured", "bwa", True, cpus=2, memory=4 * GIB,
                             time=3600, backend="slurm", finished=NOON)])  # fmt: skip
    store.close()
    monkeypatch.setenv("SEQERA_HISTORY", str(history))  # what the README's default finds
    for arguments, expression in lines:
        done = subprocess.run([sys.executable, "-m", "seqera_core.cli", *arguments],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        shown = _jq(done.stdout, expression).split("\n")
        # every key the README names exists: jq prints null for one that does not
        assert shown[0] and "null" not in shown, (expression, shown[:5])


def _hostile_rows(path: Path) -> None:
    """Rows another writer left (an older sidecar took 1e308 from a weblog; SQLite keeps
    infinities): written with SQL, past the store's own checks."""
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO task_history (run_id, task_id, attempt, process, engine, succeeded, "
            "cpus, memory, time, peak_memory, cpu_percent, realtime, input_bytes, finished) "
            "VALUES ('hostile', 'a', 1, 'bwa', 'nextflow', 1, 1e308, 9223372036854775807, "
            "9223372036854775807, 9223372036854775807, 1e308, 1e308, -1, ?)",
            (NOON,),
        )
        db.execute(
            "INSERT INTO task_history (run_id, task_id, attempt, process, engine, succeeded, "
            "cpus, realtime, cpu_percent, finished) VALUES ('hostile', 'b', 1, 'bwa', "
            "'nextflow', 0, 9e999, -9e999, 9e999, 9e999)"
        )


def test_numbers_past_the_contract_in_the_history_never_break_the_report(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _hostile_rows(history)
    assert main(["report", "--history", str(history), "--json"]) == 0
    text = capsys.readouterr().out
    assert "Infinity" not in text and "NaN" not in text
    # the two rows are counted, their numbers unknown
    assert json.loads(text)["summary"]["tasks"] == 50
    assert main(["report", "--history", str(history), "-o", "r.html"]) == 0
    assert "Infinity" not in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("since", ["0001-01-01", "0001-01-01T00:00+14:00", "1900-02-28"])
def test_since_the_first_year_reports_everything(
    history: Path, since: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--history", str(history), "--since", since, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["tasks"] == 48


def test_since_the_first_year_in_a_zone_east_of_utc(history: Path) -> None:
    # mktime cannot go before year 1 in local time east of UTC: the traceback the issue saw
    done = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "report", "--history", str(history),
         "--since", "0001-01-01", "--json"],
        capture_output=True, text=True, env={"TZ": "Asia/Tokyo", "HOME": str(history.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["tasks"] == 48
