"""End to end on the local backend: a tool given $(runtime.ram) is never sized below it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from seqera_core.history import TaskRecord, open_history
from seqera_core.units import MB, MIB
from tests.cwltool_seqera.test_local_runs import DATA, run_cwl


def _sized(tmp_path: Path, tool: str, *flags: str) -> int | None:
    """The memory the tool's job ran with, after a history of runs that used 50 MB."""
    db = tmp_path / "-".join((tool, *flags)) / "history.db"
    db.parent.mkdir()
    history = open_history(db)
    history.record(
        TaskRecord("before", str(i), tool, True, memory=2000 * MIB, peak_memory=50 * MB,
                   realtime=1.0)
        for i in range(12)
    )  # fmt: skip
    history.close()
    job = db.parent / "job.yml"
    job.write_text(json.dumps({"python": sys.executable}))
    args = ["--seqera-history", str(db), *flags, "--no-container"]
    run = run_cwl([*args, str(DATA / f"{tool}.cwl"), str(job)], db.parent)
    assert run.code == 0, run.stderr
    _, records = open_history(db).attempts()
    (latest,) = [r for r in records if r.run_id != "before"]
    assert latest.process == tool and latest.succeeded
    return latest.memory


def test_a_tool_given_runtime_ram_keeps_what_it_declares(tmp_path: Path) -> None:
    # Without $(runtime.ram) the same history sizes a tool down: see the Snakemake twin of
    # this test (both rules in one run) and test_local_runs' history test.
    assert _sized(tmp_path, "ram") == 2000 * MIB


def test_the_user_may_opt_out(tmp_path: Path) -> None:
    sized = _sized(tmp_path, "ram", "--seqera-shrink-self-sizing")
    assert sized is not None and sized < 500 * MIB
