"""An older (version-1, attempts-only) history's summaries, built by the database when it
is first opened (history._upgrade), against what the row-by-row fold that built them
before gives (history._tally.fold over every attempt read in order), on SQLite and on a
real PostgreSQL (tests/postgres.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from seqera_core.history import History, TaskRecord, Totals, _sql, open_history
from seqera_core.units import GIB, MIB
from tests.seqera_core.folding import fold_every_row, write_version_one


def _attempts() -> list[TaskRecord]:
    """Several processes and strata (cpus, containers, none given), failures of each kind
    and both, uses of 0 and unknown, ties for the largest use, a tally of one run."""
    out = []
    for i in range(400):
        process = ["ALIGN", "SORT", "CALL", "QC"][i % 4]
        ok = i % 7 != 3
        fields: dict[str, Any] = {
            "cpus": [2.0, 8.0, None, 0.5][i // 4 % 4 if process == "ALIGN" else i % 2],
            "container": [None, "bwa:1", "bwa:2"][i % 3],
            "memory": [GIB, 2 * GIB, None][i % 3],
            "time": [3600, None][i % 2],
            "input_bytes": (i % 23 + 1) * MIB,
            "cpu_percent": None if i % 5 == 0 else 50.0 + i % 9,
            "finished": 1.7e9 + i,
        }
        if ok:
            # ties at the largest (SORT's every 50th) and uses of 0 (not a run of a tally)
            fields["peak_memory"] = (
                0
                if i % 11 == 0
                else (512 * MIB if process == "SORT" and i % 50 == 1 else (i % 37 + 1) * 10 * MIB)
            )
            fields["realtime"] = None if i % 13 == 0 else float(i % 17) + 0.25 * (i % 3)
        else:
            fields["out_of_memory"] = i % 2 == 0
            fields["time_limit"] = i % 3 == 0
        out.append(TaskRecord(f"run{i % 3}", str(i), process, ok, **fields))
    # one successful run of its own process: a tally of one; a process that never ran
    out.append(TaskRecord("run0", "lone", "LONE", True, peak_memory=GIB, realtime=9.0))
    out.append(TaskRecord("run0", "doomed", "DOOMED", False, out_of_memory=True, memory=GIB))
    return out


# Values outside the contract that an older writer may have left (stored as they are):
# each reads as unknown (TaskRecord's converters), in the fold and in the database alike.
_OUTSIDE = [
    {"cpus": 1e9, "peak_memory": 2**60, "realtime": 1e300},
    {"cpus": -1.0, "memory": -5, "cpu_percent": -3.0},
    {"realtime": math.inf, "cpu_percent": 1e12},
]


def _version_one(location: str, records: list[TaskRecord], dialect: str) -> None:
    """The first release's table, the attempts written as they are (bounds not applied)."""
    rows = [list(_sql.row(r)) for r in records]
    for row, outside in zip(rows[::37], _OUTSIDE * 20, strict=False):
        for name, value in outside.items():
            row[_sql.FIELDS.index(name)] = value
    if dialect == "postgresql" and rows:
        rows[5][_sql.FIELDS.index("cpus")] = math.nan  # SQLite keeps a NaN as NULL
    write_version_one(location, rows, dialect)


def _older(location: str, tmp_path: Path) -> tuple[str, str]:
    if "://" not in location:
        return str(tmp_path / "older.db"), "sqlite"
    import psycopg

    with psycopg.connect(location, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS older")
        admin.execute("CREATE DATABASE older")
    return location.rsplit("/", 1)[0] + "/older", "postgresql"


def test_the_database_builds_the_summaries_the_row_by_row_fold_built(
    store: tuple[History, str], tmp_path: Path
) -> None:
    older, dialect = _older(store[1], tmp_path)
    _version_one(older, _attempts(), dialect)
    upgraded = open_history(older)  # the first open builds them
    try:
        totals, summaries = upgraded.summaries()
        expected_totals, expected = fold_every_row(upgraded)
        for name in ("last_seq", "attempts", "memory_runs", "time_runs"):
            assert getattr(totals, name) == getattr(expected_totals, name), name
        for name in ("memory_total", "time_total"):
            assert getattr(totals, name) == pytest.approx(getattr(expected_totals, name),
                                                          rel=1e-12), name  # fmt: skip
        assert [s.process for s in summaries] == ["ALIGN", "SORT", "CALL", "QC", "LONE", "DOOMED"]
        kept = {}
        for process in ("ALIGN", "SORT", "CALL", "QC", "LONE", "DOOMED"):
            kept.update({(process, s.stratum): s for s in upgraded.summaries(process)[1]})
        assert set(kept) == set(expected)
        # ALIGN: 4 cpus x 3 containers, and stored cpus outside the contract (1e9, -1) in
        # the strata of unknown cpus
        assert len([k for k in kept if k[0] == "ALIGN"]) == 13
        for key, summary in kept.items():
            anew = expected[key]
            for name in _sql.SUMMARY_COLUMNS[:18]:  # counts, maxima, attempt numbers: exact
                assert getattr(summary, name) == getattr(anew, name), (key, name)
            for quantity in ("memory", "time"):
                a, b = getattr(summary, quantity), getattr(anew, quantity)
                assert (a.runs, a.largest, a.top, a.second) == (
                    b.runs, b.largest, b.top, b.second), (key, quantity)  # fmt: skip
                # the same sums in another order (the database's, and two passes)
                assert a.mean == pytest.approx(b.mean, rel=1e-12, abs=1e-15), (key, quantity)
                assert a.m2 == pytest.approx(b.m2, rel=1e-9, abs=1e-12), (key, quantity)
        assert kept[("SORT", "")].memory.top == kept[("SORT", "")].memory.second  # a tie
        assert kept[("LONE", "")].memory.runs == 1
        assert math.isinf(kept[("LONE", "")].memory.second)
        assert kept[("DOOMED", "")].succeeded == 0 and kept[("DOOMED", "")].out_of_memory == 1
    finally:
        upgraded.close()


def test_an_empty_older_history_upgrades_to_empty_summaries(
    store: tuple[History, str], tmp_path: Path
) -> None:
    older, dialect = _older(store[1], tmp_path)
    _version_one(older, [], dialect)
    upgraded = open_history(older)
    try:
        assert upgraded.summaries() == (Totals(), [])
        assert upgraded.count() == 0
    finally:
        upgraded.close()
