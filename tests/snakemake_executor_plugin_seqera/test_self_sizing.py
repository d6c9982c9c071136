"""End to end on the local backend: a rule whose command, run: block or script reads
{resources.mem_mb} keeps it, unless the user opts out (--seqera-shrink-self-sizing)."""

from __future__ import annotations

from pathlib import Path

from seqera_core.history import TaskRecord, open_history
from seqera_core.units import MB
from tests.snakemake_executor_plugin_seqera.test_cli import _snakemake, _workflow, env

__all__ = ["env"]  # the fixture, imported to be found

SNAKEFILE = """
rule all:
    input: "sized.txt", "plain.txt", "ran.txt", "scripted.txt"

rule sized:
    output: "sized.txt"
    resources: mem_mb=2000
    shell: "echo {resources.mem_mb} > {output}"

rule plain:
    output: "plain.txt"
    resources: mem_mb=2000
    shell: "echo 2000 > {output}"

rule ran:
    output: "ran.txt"
    resources: mem_mb=2000
    run:
        with open(output[0], "w") as out:
            out.write(str(resources.mem_mb))

rule scripted:
    output: "scripted.txt"
    resources: mem_mb=2000
    script: "scripts/heap.py"
"""

SCRIPT = """
with open(snakemake.output[0], "w") as out:
    out.write(str(snakemake.resources.mem_mb))
"""

RULES = ("sized", "plain", "ran", "scripted")


def _run(tmp_path: Path, env: dict[str, str], *args: str) -> dict[str, int | None]:
    """The memory each rule ran with, after 12 runs of each that used 50 MB."""
    db = tmp_path / "history.db"
    history = open_history(db)
    # Every rule used 50 MB every time so far: the right-sizer would give each far less.
    history.record(
        TaskRecord("before", f"{rule}{i}", rule, True, memory=2000 * MB, peak_memory=50 * MB,
                   realtime=1.0)
        for rule in RULES for i in range(12)
    )  # fmt: skip
    history.close()
    workflow = _workflow(tmp_path / "run", SNAKEFILE)
    (workflow / "scripts").mkdir()
    (workflow / "scripts" / "heap.py").write_text(SCRIPT)
    done = _snakemake(
        workflow, {**env, "SNAKEMAKE_SEQERA_BACKEND": "local", "SEQERA_HISTORY": str(db)}, *args
    )
    assert done.returncode == 0, done.stderr[-3000:]
    _, records = open_history(db).attempts()
    return {r.process: r.memory for r in records if r.run_id != "before"}


def test_a_rule_that_reads_its_memory_is_never_sized_below_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    memory = _run(tmp_path, env)
    for rule in ("sized", "ran", "scripted"):
        assert (memory[rule] or 0) >= 2000 * MB, rule
    assert memory["plain"] is not None and memory["plain"] < 500 * MB
    assert (tmp_path / "run" / "scripted.txt").read_text() == "2000"


def test_the_user_may_opt_out(tmp_path: Path, env: dict[str, str]) -> None:
    memory = _run(tmp_path, env, "--seqera-shrink-self-sizing")
    assert all((memory[rule] or 0) < 500 * MB for rule in RULES), memory
