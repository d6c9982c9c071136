"""``seqera squash``: the dry run of squashing, text and JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqera_core.cli import main

JOBS = [
    {"name": "trim-1", "memory": "300 MB", "time": "5m"},
    {"name": "trim-2", "memory": "300 MB", "time": "5m"},
    {"name": "trim-3", "memory": "300 MB", "time": "5m", "account": "lab"},
    {"name": "align-1", "cpus": 4, "memory": "16 GiB", "time": "2h"},
    {"name": "call-1", "memory": "2 GB", "time": "10m", "squash_key": "s1"},
]


@pytest.fixture
def jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(JOBS))
    return path


def test_allocations_and_jobs_alone(jobs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["squash", str(jobs), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [a["jobs"] for a in document["allocations"]] == [
        ["trim-1", "trim-2"],  # same queue, account, container and key
        ["trim-3"],  # another account
        ["call-1"],  # another squash key
    ]
    first = document["allocations"][0]
    assert (first["cpus"], first["memory"], first["time"]) == (1, 287 * 2**20, 660)
    assert document["alone"] == [
        {"job": "align-1", "why": "its time limit (7200 s) and the launcher's margin (60 s) "
         "exceed squash.max_time (3600 s)"}
    ]  # fmt: skip
    assert main(["squash", str(jobs), "--max-time", "3h"]) == 0
    text = capsys.readouterr().out
    # a longer allocation holds align-1 too, with the cores and memory per core it needs
    assert "allocation 1: 4 cores, 16 GiB, 2h 4m: 3 jobs (trim-1, trim-2, align-1)" in text
    assert "alone:" not in text


def test_max_jobs_splits_allocations(jobs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs.write_text(
        json.dumps([{"name": f"j{i}", "memory": "1 GB", "time": "1m"} for i in range(25)])
    )
    assert main(["squash", str(jobs), "--max-jobs", "10", "--json"]) == 0
    sizes = [len(a["jobs"]) for a in json.loads(capsys.readouterr().out)["allocations"]]
    assert sorted(sizes) == [5, 10, 10]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "x", "memory": "4 gb", "time": "1h"}, "jobs[0].memory"),
        ({"name": "x", "memory": "4 GB", "time": "30"}, "jobs[0].time"),
        ({"name": "x", "memory": "4 GB"}, "jobs[0].time"),
        ({"name": "x", "memory": "4 GB", "time": "1h", "cpus": -1}, "cpus"),
        ({"name": "x", "memory": "4 GB", "time": "1h", "nodes": 2}, "jobs[0].nodes"),
    ],
)
def test_bad_jobs_name_the_field(
    jobs: Path, capsys: pytest.CaptureFixture[str], entry: dict[str, object], message: str
) -> None:
    jobs.write_text(json.dumps([entry]))
    assert main(["squash", str(jobs)]) == 2
    assert message in capsys.readouterr().err


HUGE = "7" * 5000  # past int()'s 4,300 digits (sys.get_int_max_str_digits)


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--max-jobs", "-0", "an integer >= 1"),
        ("--cpus", "-0", "an integer >= 1"),
        ("--max-jobs", "2.5", "an integer >= 1"),
        ("--cpus", "0", "an integer >= 1"),
        ("--cpus", "9" * 20, "an integer >= 1, at most 9223372036854775807"),
        ("--cpus", HUGE, "an integer >= 1 (numbers of at most 30 digits)"),
        ("--max-jobs", HUGE, "an integer >= 1 (numbers of at most 30 digits)"),
        ("--max-time", HUGE, "numbers of at most 30 digits"),
    ],
)
def test_a_bad_flag_is_named_with_its_value_as_written(
    jobs: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, expected: str
) -> None:
    assert main(["squash", str(jobs), f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    key = f"squash.{flag[2:].replace('-', '_')}"
    # the value as written, its first characters only when it is long
    shown = repr(value) if len(value) < 100 else f"{repr(value)[:100]}"
    assert f"command line: {key}: {shown}" in err, err
    assert expected in err, err
    assert len(err) < 600, err  # a 5,000-digit value is cut short


def test_good_flags_set_the_policy(jobs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["squash", str(jobs), "--max-jobs=1", "--cpus=2", "--max-time=3h"]) == 0
    out = capsys.readouterr().out
    assert "squash: at most 1 jobs and 3h per allocation" in out, out
    # squash.cpus=2: align-1 asks for 4 cores
    assert "alone: align-1: it asks for 4 cores, more than squash.cpus (2)" in out, out
