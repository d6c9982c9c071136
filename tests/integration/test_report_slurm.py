"""The report of real Slurm runs, with and without accounting, as a person reads it.

Without slurmdbd, Slurm tells what a job asked for and how it ended, never what it used:
the page must say so in words (and what to enable), show the requests, and draw no empty
chart as if it were 0. With slurmdbd, ``sacct`` gives run time, MaxRSS and TotalCPU: CPU
is measured, and reserved counts every attempt, the failed ones too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec
from seqera_core.backends.slurm import SlurmBackend
from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import finished_record
from seqera_core.report import build, document, write_report
from seqera_core.units import MIB
from tests.chromium import look

from .conftest import SlurmCluster, wait

pytestmark = pytest.mark.integration

# The memory is held for 2 s: Slurm samples a job's memory once a second
# (JobAcctGatherFrequency=task=1), and a job that allocates and exits at once is never seen.
SPIN = (
    "import time\nwhile time.process_time() < {cpu}: pass\nx = b'x' * ({mb} * 2**20)\ntime.sleep(2)"
)
# a number in scientific notation, not the digits of a job id's hex ("a3e7f1c2.4")
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?!\w)")


def _run(backend: SlurmBackend, history_path: Path, jobs: list[tuple[str, str, int]]) -> None:
    """Run ``(process, python code, memory MiB)`` jobs to their end; record them as an
    engine does."""
    specs = [JobSpec(f"{process}{i}", [sys.executable, "-c", code],
                     ResourceRequest(cpus=1, memory=mib * MIB, time=600, process=process))
             for i, (process, code, mib) in enumerate(jobs)]  # fmt: skip
    statuses = wait(backend, backend.submit(specs), limit=240)
    history = open_history(history_path)
    history.record(finished_record(s.request, status, run_id="run", engine="seqera-run")
                   for s, status in zip(specs, statuses, strict=True))  # fmt: skip
    history.close()


def _report(history_path: Path) -> dict[str, object]:
    history = open_history(history_path)
    figures = document(build(history))
    history.close()
    return figures


def test_without_accounting_the_page_says_what_is_missing_and_shows_the_requests(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    backend = SlurmBackend(work_dir=tmp_path / "jobs", env=slurm.env)
    db = tmp_path / "history.db"
    # two that fit, one over its --mem (OverMemoryKill): a cause Slurm gives without slurmdbd
    _run(backend, db, [("align", SPIN.format(cpu=0.3, mb=10), 256),
                       ("align", SPIN.format(cpu=0.3, mb=10), 256),
                       ("hog", SPIN.format(cpu=0, mb=400), 128)])  # fmt: skip
    figures = _report(db)
    summary = figures["summary"]
    assert isinstance(summary, dict)
    assert summary["failures"] == {"out_of_memory": 1}
    (sentence,) = summary["missing"]
    assert sentence.startswith("Slurm accounting (slurmdbd) is off for 3 attempts")
    processes = {p["process"]: p for p in figures["processes"]}  # type: ignore[attr-defined]
    assert processes["align"]["declared"] == {"cpus": 1, "memory": 256 * MIB, "time": 600}
    history = open_history(db)
    page = write_report(history, [], tmp_path / "report.html")
    history.close()
    for width, view in look(page, (1400, 800), "report-slurm-without-accounting").items():
        text = view["text"]
        assert "Slurm accounting (slurmdbd) is off" in text and "256 MiB, 10m" in text
        assert view["overflow"] <= 0 and view["errors"] == [] and view["refused"] == []
        # the requests are drawn (memory, time limit, cores): marks, never an empty chart
        assert all(p["drawn"] and p["marks"] > 0 for p in view["plots"]), (width, view["plots"])
        assert not SCIENTIFIC.search(text + view["labels"])


def test_with_accounting_cpu_is_measured_and_reserved_counts_every_attempt(
    slurm_accounting: SlurmCluster, tmp_path: Path
) -> None:
    backend = SlurmBackend(work_dir=tmp_path / "jobs", env=slurm_accounting.env)
    db = tmp_path / "history.db"
    _run(backend, db, [("align", SPIN.format(cpu=1.0, mb=50), 512),
                       ("align", SPIN.format(cpu=1.0, mb=50), 512),
                       ("qc", "import sys, time; time.sleep(2); sys.exit(3)", 256)])  # fmt: skip
    history = open_history(db)
    rows = history.records()
    history.close()
    assert [r.succeeded for r in rows] == [True, True, False]
    assert all(r.cpu_time is not None and r.realtime and r.backend == "slurm" for r in rows)
    spinners = [r for r in rows if r.process == "align"]
    # TotalCPU: at least the second each spun, and what the interpreter took to start
    assert all(r.cpu_time is not None and r.cpu_time >= 1.0 for r in spinners), [
        (r.task_id, r.cpu_time, r.realtime) for r in spinners
    ]
    summary = _report(db)["summary"]
    assert isinstance(summary, dict)
    reserved = sum((r.cpus or 0) * (r.realtime or 0) for r in rows) / 3600
    assert summary["cpus"]["requested"] == pytest.approx(reserved)  # the failed qc too
    assert summary["cpus"]["used"] >= 2.0 / 3600 and summary["cpus"]["unmeasured"] == 0
    assert summary["missing"] == []
