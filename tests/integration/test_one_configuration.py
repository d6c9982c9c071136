"""One ``seqera.yaml`` plus ``SEQERA_*`` variables wire every engine the same way.

``seqera run``, real ``snakemake --executor seqera``, real ``cwltool-seqera`` and a real
``seqera-sidecar`` with its runs API each run a task of the process ``count`` from the
same project directory, with ``SEQERA_RESOLVER_URL`` pointing at a second, real sidecar
that sizes ``count`` from its own history. Each engine must pick the same backend (local),
the same resolver chain (the sidecar's answer is what each job gets), the same history
(the project's ``history.db`` gets one row per engine, with its fields) and the same labels
(``team`` from the file and ``project`` from ``$SEQERA_LABELS`` reach the job).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from seqera_core.history import TaskRecord, open_history
from seqera_core.units import MB, MIB

from ..seqera_sidecar.conftest import start_sidecar, stop_sidecar

pytestmark = pytest.mark.integration

TOKEN = "t0ken-for-tests"
DECLARED = 100 * MB
PEAK = 300 * MIB
DECLARED_BEFORE = 4 * 2**30  # what the seeded runs had asked for
INPUT = 1234  # bytes of the task's input file
LABELS = "echo $SEQERA_LABEL_TEAM $SEQERA_LABEL_PROJECT"


@pytest.fixture
def resolver(tmp_path: Path) -> Iterator[str]:
    """A real sidecar sizing ``count`` from twelve runs of its own history (max x 2)."""
    history = tmp_path / "resolver" / "history.db"
    store = open_history(history)
    store.record(
        TaskRecord(f"seed-{i}", f"t{i}", "count", True, memory=DECLARED_BEFORE, peak_memory=PEAK)
        for i in range(12)
    )
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQERA_")}
    process, served = start_sidecar(
        history, None, "--resolver", "max", "--margin", "2", cwd=tmp_path, environ=env
    )
    try:
        yield served.url
    finally:
        stop_sidecar(process)


def _answer(url: str) -> int:
    # What the resolver sidecar gives the process `count`: every engine's job must get it.
    body = {"process": "count", "memory_bytes": DECLARED}
    response = httpx.post(f"{url}/v1/resources/resolve", json=body, timeout=10)
    response.raise_for_status()
    memory: int = response.json()["memory_bytes"]
    return memory


SNAKEFILE = """\
rule count:
    input: "data.txt"
    output: "snakemake.txt"
    container: "docker://busybox:1.36"
    resources: mem_mb=100, runtime=5
    shell: "echo $SEQERA_LABEL_TEAM $SEQERA_LABEL_PROJECT > {output}"
"""
TOOL = """\
cwlVersion: v1.2
class: CommandLineTool
requirements:
  ResourceRequirement: {ramMin: 96, coresMin: 1}
baseCommand: [echo, counted]
stdout: cwl.txt
inputs:
  data: {type: File}
outputs:
  out: {type: stdout}
"""


def test_every_engine_gets_the_same_wiring(tmp_path: Path, resolver: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "seqera.yaml").write_text("history: history.db\nlabels: {team: genomics}\n")
    (project / "data.txt").write_text("x" * INPUT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQERA_")}
    env.update(SEQERA_RESOLVER_URL=resolver, SEQERA_LABELS="project=rnaseq")
    expected = _answer(resolver)
    assert expected != DECLARED  # the resolver has an opinion, so it shows

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True,
                              timeout=300, check=False)  # fmt: skip

    # seqera run
    seqera = (sys.executable, "-m", "seqera_core.cli", "run", "--name", "count")
    done = run(*seqera, "--memory", "100MB", "--", "sh", "-c", LABELS)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "genomics rnaseq\n"

    # snakemake --executor seqera
    (project / "Snakefile").write_text(SNAKEFILE)
    snakemake = shutil.which("snakemake", path=str(Path(sys.executable).parent))
    assert snakemake is not None
    done = run(snakemake, "--executor", "seqera", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert (project / "snakemake.txt").read_text() == "genomics rnaseq\n"

    # cwltool-seqera (cwltool gives the tool a clean environment: labels stay outside it)
    (project / "count.cwl").write_text(TOOL)
    cwltool = shutil.which("cwltool-seqera", path=str(Path(sys.executable).parent))
    assert cwltool is not None
    outdir = str(project / "out")
    done = run(cwltool, "--no-container", "--outdir", outdir, "count.cwl", "--data", "data.txt")
    assert done.returncode == 0, done.stderr
    assert (project / "out" / "cwl.txt").read_text() == "counted\n"

    # the sidecar's runs API, on the same project's configuration
    # no --history: the sidecar's history is the project's, from seqera.yaml
    state = str(project / "state" / "runs.db")
    process, served = start_sidecar(
        None, TOKEN, "--backend", "local", "--state", state, cwd=project, environ=env
    )
    url = served.url
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        run_id = httpx.post(f"{url}/v1/runs", json={"name": "r"}, headers=auth).json()["id"]
        task = {"name": "count", "command": ["sh", "-c", LABELS],
                "resources": {"process": "count", "memory_bytes": DECLARED,
                              "input_bytes": INPUT}}  # fmt: skip
        (submitted,) = httpx.post(f"{url}/v1/runs/{run_id}/tasks", json={"tasks": [task]},
                                  headers=auth).json()["tasks"]  # fmt: skip
        base = f"{url}/v1/runs/{run_id}/tasks/{submitted['id']}"
        deadline = time.monotonic() + 60
        while httpx.get(base, headers=auth).json()["state"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert httpx.get(f"{base}/logs", headers=auth).text == "genomics rnaseq\n"
        deadline = time.monotonic() + 30
        while {r.engine for r in open_history(project / "history.db").records()} != {
            "seqera-run",
            "snakemake",
            "cwltool",
            "seqera-sidecar",
        }:
            assert time.monotonic() < deadline, "a finished task is missing from the history"
            time.sleep(0.2)
    finally:
        stop_sidecar(process)

    rows = {r.engine: r for r in open_history(project / "history.db").records()}
    assert set(rows) == {"seqera-run", "snakemake", "cwltool", "seqera-sidecar"}
    for engine, row in rows.items():
        assert row.process == "count" and row.succeeded, engine
        assert row.memory == expected, (engine, row.memory, expected)
        assert row.attempt == 1 and row.realtime is not None, engine
    # What each engine knew before the task ran, for the right-sizer to learn from.
    assert {e: r.input_bytes for e, r in rows.items()} == {
        "seqera-run": None,
        "snakemake": INPUT,
        "cwltool": INPUT,
        "seqera-sidecar": INPUT,
    }
    assert rows["snakemake"].container == "docker://busybox:1.36"
