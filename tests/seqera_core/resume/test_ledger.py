"""The run ledger: a live run's keys are nobody's orphans, a dead run's (``kill -9``) are.

Each "run" here is a real process that opens a ledger, writes what it is told and then
waits, holding its lock, until it is killed: the lock is the kernel's, so only a dead
process's ledger is taken over.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from seqera_core.resume import Entry, Ledger, job_key

RUN = """
import sys, time
from pathlib import Path
from seqera_core.resume import Ledger
ledger = Ledger(Path(sys.argv[1]), sys.argv[2])
ledger.sent([(k, {"name": k, "workdir": "/w/" + k}) for k in sys.argv[3].split(",") if k])
ledger.done([k for k in sys.argv[4].split(",") if k])
print("ready", flush=True)
time.sleep(600)
"""


def _run(directory: Path, run_id: str, sent: str, done: str = "") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", RUN, str(directory), run_id, sent, done],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def _kill(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def test_a_live_runs_keys_are_not_orphans_and_a_dead_runs_are(tmp_path: Path) -> None:
    live = _run(tmp_path, "live", "a,b")
    dead = _run(tmp_path, "dead", "c,d,e", done="d")
    _kill(dead)
    try:
        ledger = Ledger(tmp_path, "next")
        assert ledger.orphans == {
            "c": Entry("c", {"name": "c", "workdir": "/w/c"}),
            "d": Entry("d", {"name": "d", "workdir": "/w/d"}, done=True),
            "e": Entry("e", {"name": "e", "workdir": "/w/e"}),
        }
        # a run started beside it does not take the same dead run over
        assert Ledger(tmp_path, "beside").orphans == {}
        ledger.sent([("e", {"name": "e"}), ("f", {})])
        ledger.done(["e", "f"])
        ledger.close(unsettled=[Entry("c", {"name": "c"})])
    finally:
        _kill(live)
    # the dead run's files are gone; what was left alone (c) is in this run's ledger,
    # which stays (c has not ended) and is an orphan once this run is gone too
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "dead.jsonl" not in names and "dead.lock" not in names
    assert "next.jsonl" in names
    events = [json.loads(line) for line in (tmp_path / "next.jsonl").read_text().splitlines()]
    assert {"sent": "c", "meta": {"name": "c"}} in events
    # the live run is dead now too: its keys and what "next" left are the orphans
    after = Ledger(tmp_path, "after")
    assert after.orphans == {
        "a": Entry("a", {"name": "a", "workdir": "/w/a"}),
        "b": Entry("b", {"name": "b", "workdir": "/w/b"}),
        "c": Entry("c", {"name": "c"}),
        "e": Entry("e", {"name": "e"}, done=True),
        "f": Entry("f", {}, done=True),
    }


def test_a_run_that_saw_every_job_end_leaves_no_ledger(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, "clean")
    ledger.sent([("k1", {}), ("k2", {})])
    ledger.done(["k1", "k2"])
    ledger.close()
    assert list(tmp_path.iterdir()) == []


def test_a_line_cut_by_a_kill_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "cut.lock").touch()
    (tmp_path / "cut.jsonl").write_text('{"sent":"k1","meta":{}}\n{"sent":"k2","me')
    assert set(Ledger(tmp_path, "next").orphans) == {"k1"}


def test_job_keys_come_from_what_the_job_is() -> None:
    one = job_key("snakemake", "/wf", "work", ["out/1.txt"], 1)
    assert one == job_key("snakemake", "/wf", "work", ["out/1.txt"], 1)
    assert one.startswith("snakemake-") and len(one) == len("snakemake-") + 32
    assert one != job_key("snakemake", "/wf", "work", ["out/1.txt"], 2)  # another attempt
    assert one != job_key("snakemake", "/other", "work", ["out/1.txt"], 1)


def test_a_dead_run_killed_while_writing_its_first_key(tmp_path: Path) -> None:
    # the key is written before the submission: a run killed right after it left it
    process = _run(tmp_path, "early", "k")
    started = time.monotonic()
    _kill(process)
    assert time.monotonic() - started < 30
    assert set(Ledger(tmp_path, "next").orphans) == {"k"}
