"""The report of a real routed run: the routing backend over this machine (2 cores) and
the real one-node Slurm with accounting (``slurm_accounting``: ``sacct`` gives each job's
run time, which the saving estimate needs), recorded as an engine records it, then
read back: each backend's tasks, the routing reasons as the policy wrote them (every one
read, none "not routed"), the saving estimate, and the page in Debian's Chromium at 800
px with both routing tables whole."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from seqera_core.backends import Backend, JobSpec, open_backend
from seqera_core.backends.route import RouteBackend
from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import finished_record
from seqera_core.report import build, document, write_report
from tests.chromium import look

from .conftest import SlurmCluster, wait

pytestmark = pytest.mark.integration

SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?!\w)")


def _opener(tmp: Path, cluster: SlurmCluster) -> Any:
    def open_one(name: str, fork_server: Any = None) -> Backend:
        if name == "local":
            return open_backend("local", work_dir=tmp / "local", cpus=2, kill_grace=0.3)
        return open_backend(name, work_dir=tmp / name, env=cluster.env)

    return open_one


@pytest.fixture(scope="module")
def routed(slurm_accounting: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history holding one routed run: six one-core jobs and two of four cores (more
    than the machine's two), every one run where the routing backend sent it."""
    tmp = tmp_path_factory.mktemp("routed")
    route = RouteBackend(("local", "slurm"), opener=_opener(tmp, slurm_accounting),
                         scheduler_every=0.5)  # fmt: skip
    jobs = [("small", 1, 0.5)] * 6 + [("wide", 4, 1.0)] * 2
    specs = [JobSpec(f"{name}{i}", [sys.executable, "-c", f"import time; time.sleep({nap})"],
                     ResourceRequest(cpus=cpus, memory=64 * 2**20, time=300, process=name))
             for i, (name, cpus, nap) in enumerate(jobs)]  # fmt: skip
    try:
        statuses = wait(route, route.submit(specs), limit=240)
    finally:
        route.close()
    assert all(s.state.value == "succeeded" for s in statuses), statuses
    history = open_history(tmp / "history.db")
    history.record(finished_record(s.request, status, run_id="routed", engine="seqera-run")
                   for s, status in zip(specs, statuses, strict=True))  # fmt: skip
    history.close()
    return tmp / "history.db"


def test_the_report_of_a_real_routed_run(routed: Path) -> None:
    history = open_history(routed)
    figures = document(build(history))
    history.close()
    json.dumps(figures, allow_nan=False)  # finite numbers only
    shown = figures["routing"]
    assert shown is not None
    backends = {b["backend"]: b for b in shown["backends"]}
    assert set(backends) == {"local", "slurm"}
    reasons = [r["reason"] for b in shown["backends"] for r in b["reasons"]]
    assert "not routed" not in reasons  # every reason the policy wrote is read back
    wide = "the only backend that could run it (local: too many cores)"
    assert any(r["reason"] == wide and r["jobs"] == 2 for r in backends["slurm"]["reasons"])
    assert backends["local"]["tasks"] + backends["slurm"]["tasks"] == 8
    saving = shown["saving"]
    assert saving is not None
    local = next(a for a in saving["alternatives"] if a["backend"] == "local")
    assert local["unable"] == 2 and local["finish"] is None
    # the machine could not run the wide jobs: the cluster is the only one alone
    assert saving["fastest"] == "slurm"
    assert saving["finish"] > 0


def test_the_routed_page_in_a_browser(routed: Path, tmp_path: Path) -> None:
    history = open_history(routed)
    page = write_report(history, [], tmp_path / "report.html")
    history.close()
    # 800 px only, the narrower: tests/seqera_core/report/test_browser_routed.py looks at
    # both widths; each page load is 4.8 MB of plotly.js on a shared CI machine
    for width, view in look(page, (800,), "report-real-routed-run").items():
        assert view["errors"] == [] and view["overflow"] <= 0, (width, view["errors"])
        tables = {t["id"]: t for t in view["tables"]}
        assert tables["backends"]["columns"] == 8  # no platform: no cost column
        assert tables["routing"]["columns"] == 5
        assert tables["backends"]["overflow"] <= 1 and tables["routing"]["overflow"] <= 1
        assert "What routing saved (an estimate)" in view["text"]
        assert not SCIENTIFIC.search(view["text"]), SCIENTIFIC.search(view["text"])
