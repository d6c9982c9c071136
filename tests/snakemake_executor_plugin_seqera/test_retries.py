"""End to end on the local backend: Snakemake's --retries get more memory after an
out-of-memory kill without any history (cause-driven retries), and a job the right-sizer
sized below its declaration that runs out is sent again at once at its declared size even
with --retries 0 (never a gate). Side effects are counted: one line per attempt started."""

from __future__ import annotations

import re
from pathlib import Path

from seqera_core.history import TaskRecord, open_history
from seqera_core.units import MB
from tests.snakemake_executor_plugin_seqera.test_cli import _snakemake, _workflow, env

__all__ = ["env"]  # the fixture, imported to be found

# Holds {need} MB for a second, long enough for any memory limit to catch it.
SNAKEFILE = """
rule big:
    output: "big.txt"
    resources: mem_mb={declared}
    shell:
        "echo start >> attempts.txt; "
        "python3 -c 'import time; x = bytearray({need} * 10**6); time.sleep(1.5)'; "
        "echo done > {{output}}"
"""


def test_a_retry_after_an_out_of_memory_kill_gets_twice_the_memory(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workflow = _workflow(tmp_path / "run", SNAKEFILE.format(declared=300, need=450))
    done = _snakemake(workflow, {**env, "SNAKEMAKE_SEQERA_BACKEND": "local"}, "--retries", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (workflow / "attempts.txt").read_text().split() == ["start", "start"]
    said = re.search(r"attempt 2: retry after out of memory at ([\d.]+) MiB: memory at least "
                     r"([\d.]+) MiB; cpus=1 memory=([\d.]+) MiB", done.stderr)  # fmt: skip
    assert said is not None, done.stderr[-3000:]
    had, least, given = (float(x) for x in said.groups())
    assert 280 < had < 300 and least == given == 2 * had


def test_the_right_sizer_never_fails_a_job_that_its_declaration_would_run(
    tmp_path: Path, env: dict[str, str]
) -> None:
    db = tmp_path / "history.db"
    history = open_history(db)
    # "big" used 50 MB every time so far: the right-sizer gives it far less than 1000 MB.
    history.record(
        TaskRecord("before", f"big{i}", "big", True, memory=1000 * MB, peak_memory=50 * MB,
                   realtime=1.0)
        for i in range(12)
    )  # fmt: skip
    history.close()
    workflow = _workflow(tmp_path / "run", SNAKEFILE.format(declared=1000, need=450))
    done = _snakemake(
        workflow,
        {**env, "SNAKEMAKE_SEQERA_BACKEND": "local", "SEQERA_HISTORY": str(db)},
        "--retries", "0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (workflow / "attempts.txt").read_text().split() == ["start", "start"]
    assert "sent again at once at its declared size" in done.stderr
    _, records = open_history(db).attempts()
    ours = sorted((r for r in records if r.run_id != "before"), key=lambda r: r.attempt)
    assert [r.cause for r in ours] == ["out_of_memory", None]
    assert ours[0].memory is not None and ours[0].memory < 1000 * MB
    assert (ours[1].memory or 0) >= 1000 * MB
