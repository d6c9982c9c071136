"""End to end on the local backend: a rule whose command reads {resources.mem_mb} keeps it."""

from __future__ import annotations

from pathlib import Path

from seqera_core.history import TaskRecord, open_history
from seqera_core.units import MB
from tests.snakemake_executor_plugin_seqera.test_cli import _snakemake, _workflow, env

__all__ = ["env"]  # the fixture, imported to be found

SNAKEFILE = """
rule all:
    input: "sized.txt", "plain.txt"

rule sized:
    output: "sized.txt"
    resources: mem_mb=2000
    shell: "echo {resources.mem_mb} > {output}"

rule plain:
    output: "plain.txt"
    resources: mem_mb=2000
    shell: "echo 2000 > {output}"
"""


def test_a_rule_that_reads_its_memory_is_never_sized_below_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    db = tmp_path / "history.db"
    history = open_history(db)
    # Both rules used 50 MB every time so far: the right-sizer would give each far less.
    history.record(
        TaskRecord("before", f"{rule}{i}", rule, True, memory=2000 * MB, peak_memory=50 * MB,
                   realtime=1.0)
        for rule in ("sized", "plain") for i in range(12)
    )  # fmt: skip
    history.close()
    done = _snakemake(
        _workflow(tmp_path / "run", SNAKEFILE),
        {**env, "SNAKEMAKE_SEQERA_BACKEND": "local", "SEQERA_HISTORY": str(db)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    _, records = open_history(db).attempts()
    memory = {r.process: r.memory for r in records if r.run_id != "before"}
    assert memory["sized"] is not None and memory["sized"] >= 2000 * MB
    assert memory["plain"] is not None and memory["plain"] < 500 * MB
