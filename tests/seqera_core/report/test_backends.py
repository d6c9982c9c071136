"""Per backend: the routed run read back from a real SQLite history, its figures, and the
same figures in ``seqera report --json`` (finite numbers only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seqera_core.cli import main
from seqera_core.history import TaskRecord, open_history
from seqera_core.report import build, document
from seqera_core.report._backends import backend_rates, routing
from seqera_core.report._reasons import Counted

from .conftest import ROUTED_PLATFORM, ROUTED_RUN

RUN_ID = "local-run"  # the run conftest.local_history records


def _read(path: Path, runs: list[str] | None = None) -> list[TaskRecord]:
    history = open_history(path)
    try:
        return list(history.records(runs or []))
    finally:
        history.close()


def test_each_backend_its_tasks_time_cost_and_reasons(routed_history: Path) -> None:
    found = routing(_read(routed_history), ROUTED_PLATFORM)
    assert found is not None
    local, slurm = found.backends  # most tasks first
    assert (local.backend, local.tasks, local.attempts, local.failed) == ("local", 31, 31, 1)
    assert (slurm.backend, slurm.tasks, slurm.attempts, slurm.failed) == ("slurm", 11, 11, 0)
    # 24 x 1.2 s + 30 s (killed) + 6 x 2 s on the machine; 6 x 600 + 4 x 180 + 175 s there
    assert local.run_hours == pytest.approx((24 * 1.2 + 30 + 12) / 3600)
    assert slurm.run_hours == pytest.approx((3600 + 720 + 175) / 3600)
    # 8 cores x 600 s x 6 reserved; 4,200 CPU seconds each kept busy
    assert slurm.cpus.requested == pytest.approx((6 * 8 * 600 + 4 * 2 * 180 + 2 * 175) / 3600)
    assert slurm.cpus.used == pytest.approx((6 * 4200 + 4 * 300 + 290) / 3600)
    # the cluster's rates (0.04 a core-hour, 0.005 a GiB-hour); the machine has none
    align = 6 * (8 * 0.04 + 16 * 0.005) * 600 / 3600
    call = (4 * 180 + 175) * (2 * 0.04 + 4 * 0.005) / 3600
    assert slurm.cost == pytest.approx(align + call)
    assert local.cost == 0.0
    assert local.reasons == (Counted(31, "finishes first"),)
    assert slurm.reasons == (
        Counted(6, "the only backend that could run it (local: too many cores)"),
        Counted(5, "finishes first"),
    )  # fmt: skip


def test_what_routing_saved_on_the_routed_run(routed_history: Path) -> None:
    found = routing(_read(routed_history), ROUTED_PLATFORM)
    assert found is not None and found.saving is not None
    saving = found.saving
    local, slurm = saving.alternatives
    assert (local.backend, local.unable, local.finish) == ("local", 6, None)
    # every job on the cluster: each merge 5 s later (its wait; the machine's was 0.3 s)
    assert (saving.fastest, saving.cheapest) == ("slurm", "slurm")
    assert saving.time_saved == pytest.approx(5.0 - 0.3, abs=1e-3)
    assert slurm.wait == pytest.approx(5.0) and local.wait == pytest.approx(0.3)
    # the machine's 31 jobs priced at the cluster's rates: what routing kept free
    machine = (24 * 1.2 * (0.04 + 0.5 * 0.005) + 30 * (2 * 0.04 + 0.005)
               + 12 * (0.04 + 0.005)) / 3600  # fmt: skip
    assert saving.cost_saved == pytest.approx(machine)


def test_one_backend_has_no_such_section(local_history: Path) -> None:
    assert routing(_read(local_history, [RUN_ID])) is None
    history = open_history(local_history)
    try:
        assert document(build(history, [RUN_ID]))["routing"] is None
    finally:
        history.close()


def test_without_rates_nothing_is_priced(routed_history: Path) -> None:
    found = routing(_read(routed_history))
    assert found is not None and found.saving is not None
    assert all(b.cost is None for b in found.backends)
    assert found.saving.cost is None and found.saving.cost_saved is None
    assert backend_rates(ROUTED_PLATFORM, "local") is None
    assert backend_rates(ROUTED_PLATFORM, "slurm") is not None


def _finite(value: float) -> Any:
    raise AssertionError(f"{value} in the JSON")


def test_json_carries_the_same_figures(
    routed_history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    platform = tmp_path / "cluster.yaml"
    platform.write_text("name: cluster\nscheduler: slurm\ndefault_queue: normal\n"
                        "queues:\n  normal:\n    max_cpus: 64\n    max_memory: 256 GiB\n"
                        "    cost: {core_hour: 0.04, gib_hour: 0.005}\n")  # fmt: skip
    assert main(["report", "--history", str(routed_history), "--run", ROUTED_RUN,
                 "--platform", str(platform), "--json"]) == 0  # fmt: skip
    # NaN or Infinity would read as a constant: none is allowed
    figures = json.loads(capsys.readouterr().out, parse_constant=_finite)
    shown = figures["routing"]
    assert [b["backend"] for b in shown["backends"]] == ["local", "slurm"]
    assert shown["backends"][1]["reasons"][0] == {
        "jobs": 6,
        "reason": "the only backend that could run it (local: too many cores)",
    }
    expected = routing(_read(routed_history), ROUTED_PLATFORM)
    assert expected is not None and expected.saving is not None
    assert shown["saving"]["time_saved"] == pytest.approx(expected.saving.time_saved)
    assert shown["saving"]["cost_saved"] == pytest.approx(expected.saving.cost_saved)
    assert shown["saving"]["alternatives"][0]["finish"] is None  # local could not
    assert "routing.saving.time_saved" in figures["units"]
