"""The history (SQLite) held locked for 10 s by another process while two real engines run
jobs into it: a ``snakemake --executor seqera`` run and a ``cwltool-seqera`` scatter, side
by side on the local backend, both recording into one history file.

Each job appends its start time to a file of its own (how often it ran), waits at a gate
(a file the test creates), pauses, and appends its end time to another file. Once both
engines have jobs waiting at the gate, another process takes the database with
``BEGIN EXCLUSIVE`` and holds it 10 s, and the gate opens: jobs of both engines finish
while every write meets "database is locked" after the store's busy timeout. Asserted:
every job ran exactly once, every output is there, both engines exit 0 and their
summaries count every job, and afterwards the history holds one row per job of each run:
none lost, none doubled.

Reproduce: ``uvx nox -s faults -- -k history_locked``
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from .conftest import FaultRow, FaultTable

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data"
BIN = Path(sys.executable).parent
JOBS = 8  # per engine
PAUSE = 3  # seconds each job pauses
CORES = 4  # jobs each engine's local backend runs at once
LOCK_SECONDS = 10.0
SNAKEFILE = f"""
rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))

rule work:
    output: "out/{{i}}.txt"
    shell:
        "date +%s.%N >> {{config[runs]}}/smk.{{wildcards.i}}; "
        "while [ ! -e {{config[gate]}} ]; do sleep 0.1; done; sleep {PAUSE}; "
        "date +%s.%N >> {{config[runs]}}/end.smk.{{wildcards.i}}; echo {{wildcards.i}} > {{output}}"
"""
# Holds the database's write lock for argv[2] seconds; prints when it took and left it.
HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
db.execute("BEGIN EXCLUSIVE")
print(time.time(), flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
print(time.time(), flush=True)
"""


def _stamps(runs: Path, name: str) -> list[float]:
    path = runs / name
    return [float(word) for word in path.read_text().split()] if path.exists() else []


def test_a_history_locked_for_10_s_loses_no_row(
    tmp_path: Path, fault_table: FaultTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS",
                 "SEQERA_HISTORY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    runs = tmp_path / "runs"  # side effects, outside both engines' directories
    runs.mkdir()
    gate = tmp_path / "gate"
    history = tmp_path / "history.db"
    smk = tmp_path / "smk"
    smk.mkdir()
    (smk / "Snakefile").write_text(SNAKEFILE)
    cwl = tmp_path / "cwl"
    cwl.mkdir()
    (cwl / "job.json").write_text(
        json.dumps(
            {"runs": str(runs), "indices": list(range(JOBS)), "pause": PAUSE, "gate": str(gate)}
        )
    )
    env = dict(os.environ)
    argv = {
        "snakemake": ([sys.executable, "-m", "snakemake", "--executor", "seqera",
                       "--seqera-backend", "local", "--seqera-history", str(history),
                       "--seqera-local-cores", str(CORES), "--jobs", str(CORES),
                       "--config", f"runs={runs}", f"gate={gate}", "--latency-wait", "5"], smk),
        "cwltool": ([str(BIN / "cwltool-seqera"), "--executor", "local", "--seqera-history",
                     str(history), "--seqera-local-cpus", str(CORES), "--outdir",
                     str(cwl / "out"), str(DATA / "scatter.cwl"), str(cwl / "job.json")], cwl),
    }  # fmt: skip
    # each engine's output in files (read afterwards, kept for a failure's reader): a pipe
    # nobody reads while the lock is held could fill and stall the engine
    streams = [(tmp_path / f"{name}.{kind}").open("w") for name in argv for kind in ("out", "log")]
    engines = {
        name: subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=log)
        for (name, (command, cwd)), out, log in zip(
            argv.items(), streams[::2], streams[1::2], strict=True
        )
    }
    try:
        # locked once both engines have jobs waiting at the gate (each opened the history
        # when it started); the gate opens once the lock is held
        deadline = time.monotonic() + 240
        while not (any(runs.glob("smk.*")) and any(runs.glob("job.*"))):
            assert time.monotonic() < deadline, "no engine started a job in 240 s"
            assert all(p.poll() is None for p in engines.values()), "an engine ended early"
            time.sleep(0.05)
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(history), str(LOCK_SECONDS)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert holder.stdout is not None
        locked = float(holder.stdout.readline())
        gate.touch()
        released = float(holder.communicate(timeout=120)[0])
        assert holder.returncode == 0
        for process in engines.values():
            process.wait(timeout=600)
    finally:
        gate.touch()  # never leave jobs waiting
        for process in engines.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        for stream in streams:
            stream.close()
    outputs = {
        name: ((tmp_path / f"{name}.out").read_text(), (tmp_path / f"{name}.log").read_text())
        for name in engines
    }
    starts = {(prefix, i): _stamps(runs, f"{prefix}.{i}")
              for prefix in ("smk", "job") for i in range(JOBS)}  # fmt: skip
    ends = [stamp for path in runs.glob("end.*") for stamp in _stamps(runs, path.name)]
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT engine, run_id, task_id, succeeded FROM task_history").fetchall()
    per_engine = Counter(engine for engine, *_ in rows)
    fault_table.rows.append(
        FaultRow(
            fault=f"history (SQLite) locked {LOCK_SECONDS:.0f} s under Snakemake and "
            f"cwltool-seqera ({sum(locked <= t < released for t in ends)} jobs ended in it; "
            f"{len(rows)} of {len(starts)} rows after)",
            injected=1,
            jobs=len(starts),
            # the local backend starts a job as it accepts it: what started is what it took
            submitted=sum(1 for s in starts.values() if s),
            ran=sum(1 for s in starts.values() if s),
            lost=sum(1 for s in starts.values() if not s),
            twice=sum(1 for s in starts.values() if len(s) > 1),
            command="uvx nox -s faults -- -k history_locked",
        )
    )
    for name, process in engines.items():
        assert process.returncode == 0, (name, outputs[name][1][-4000:])
    assert all(len(s) == 1 for s in starts.values()), starts
    assert all((smk / "out" / f"{i}.txt").read_text() == f"{i}\n" for i in range(JOBS))
    texts = sorted(Path(f["path"]).read_text() for f in json.loads(outputs["cwltool"][0])["out"])
    assert texts == sorted(f"job {i}\n" for i in range(JOBS)), texts
    # the lock met jobs of both engines as they finished (their rows had to wait), and
    # each engine's summary counts every job: rows that waited are in it
    for name, (_, stderr) in outputs.items():
        assert f"seqera: {JOBS} tasks, no failure" in stderr, (name, stderr[-2000:])
    for prefix in ("smk", "job"):
        ended = [t for i in range(JOBS) for t in _stamps(runs, f"end.{prefix}.{i}")]
        assert any(locked <= t < released for t in ended), (prefix, locked, released, ended)
    # one row per job of each run, each a success: none lost, none doubled
    assert per_engine == Counter({"snakemake": JOBS, "cwltool": JOBS}), rows
    assert len({(run, task) for _, run, task, _ in rows}) == len(rows) == 2 * JOBS, rows
    assert len({run for _, run, _, _ in rows}) == 2, rows
    assert all(ok for *_, ok in rows), rows


# Holds the write lock until a line arrives on stdin; prints when it took and left it.
HOLDER_UNTIL_TOLD = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
db.execute("BEGIN EXCLUSIVE")
print(time.time(), flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print(time.time(), flush=True)
"""


def test_two_seqera_runs_start_while_a_third_process_holds_the_history(tmp_path: Path) -> None:
    """The issue's case: a new history another process holds locked (``BEGIN EXCLUSIVE``)
    while two ``seqera run`` start on it. Each waits its busy timeout (5 s), says in one
    warning that it goes on without the history, runs its job once while the lock is
    still held, keeps its exit code, and records its row once the lock is gone (close()
    keeps trying)."""
    history = tmp_path / "shared.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQERA_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER_UNTIL_TOLD, str(history)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdin is not None and holder.stdout is not None
    locked = float(holder.stdout.readline())
    runs = {}
    for code in (0, 3):
        argv = [str(BIN / "seqera"), "run", "--history", str(history), "--name", f"exits-{code}",
                "--", "sh", "-c", f"echo ran >> {tmp_path}/ran.{code}; exit {code}"]  # fmt: skip
        runs[code] = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    try:
        # both jobs ran while the lock was held: neither waited for the history to run
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ran.{code}").exists() for code in runs):
            assert time.monotonic() < deadline, "a job did not run while the history was held"
            time.sleep(0.05)
        ran_at = time.time()
        time.sleep(1)  # each run now keeps trying to record its row
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
    released = float(holder.communicate(timeout=60)[0])
    errors = {code: run.communicate(timeout=120)[1] for code, run in runs.items()}
    assert holder.returncode == 0
    assert locked < ran_at < released
    for code, run in runs.items():
        assert run.returncode == code, errors[code]
        assert (tmp_path / f"ran.{code}").read_text() == "ran\n"  # ran once
        assert "not valid" not in errors[code] and "Traceback" not in errors[code], errors
        assert "still locked by another process" in errors[code], errors[code]
    with sqlite3.connect(history) as db:
        rows = sorted(db.execute("SELECT process, exit_code, succeeded FROM task_history"))
    assert rows == [("exits-0", 0, 1), ("exits-3", 3, 0)], rows
