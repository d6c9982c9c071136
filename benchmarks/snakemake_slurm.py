"""A 200-job Snakemake workflow on a one-node Slurm: this executor against the Slurm plugin.

Run as root: ``uv run --with snakemake-executor-plugin-slurm python
benchmarks/snakemake_slurm.py [--jobs 200] [--executors seqera,slurm]``. It starts a
throw-away cluster with tests/integration/slurm/slurm-up.sh (unless ``SLURM_CONF`` is
set), writes one Snakefile of ``--jobs`` independent trivial rules, and runs it once per
executor, same cluster, same Snakefile, each executor with its default settings and
``--jobs`` equal to the number of rules. Scheduler calls are counted by small wrappers in
front of ``sbatch``, ``squeue``, ``sacct``, ``scontrol``, ``scancel`` and ``sinfo``,
outside jobs only.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from slurm_jobs import _cluster  # the benchmark's own cluster recipe

__all__ = ["main"]

COMMANDS = ("sbatch", "squeue", "sacct", "scontrol", "scancel", "sinfo")
SNAKEFILE = """
N = {jobs}

rule all:
    input: expand("out/{{i}}.txt", i=range(N))

rule trivial:
    output: "out/{{i}}.txt"
    resources: mem_mb=300, runtime=5
    shell: "echo {{wildcards.i}} > {{output}}"
"""


def _shims(directory: Path, log: Path) -> None:
    directory.mkdir()
    for command in COMMANDS:
        real = shutil.which(command)
        if real is None:
            continue
        shim = directory / command
        # Calls made from inside jobs (the PATH travels with them) are the job's, not the
        # executor's: snakemake-executor-plugin-slurm runs `scontrol show config` on import.
        shim.write_text(
            f'#!/bin/sh\n[ -n "$SLURM_JOB_ID" ] || echo {command} >> {log}\nexec {real} "$@"\n'
        )
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)


# name -> (executor, its own arguments)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "seqera": ("seqera", ["--seqera-backend", "slurm"]),
    "seqera-array": ("seqera", ["--seqera-backend", "slurm", "--seqera-squash", "array"]),
    "seqera-squash": ("seqera", ["--seqera-backend", "slurm", "--seqera-squash", "squash"]),
    # allocations of 4 cores: a quarter of the launchers, each taking 4 jobs at a time
    "seqera-squash4": (
        "seqera",
        ["--seqera-backend", "slurm", "--seqera-squash", "squash", "--seqera-squash-cpus", "4"],
    ),
    # The cluster has no slurmdbd: sacct answers nothing, and the plugin would wait for
    # ever. squeue keeps finished jobs for MinJobAge (300 s here).
    "slurm": ("slurm", ["--slurm-status-command", "squeue"]),
    "slurm-array": ("slurm", ["--slurm-status-command", "squeue", "--slurm-array-jobs", "all"]),
}


def _run(variant: str, jobs: int, base: Path, env: dict[str, str]) -> dict[str, object]:
    executor, options = VARIANTS[variant]
    workdir = base / variant
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(SNAKEFILE.format(jobs=jobs)))
    log = workdir / "calls.log"
    log.touch()
    _shims(workdir / "shims", log)
    env = {**env, "PATH": f"{workdir / 'shims'}:{env['PATH']}"}
    argv = [sys.executable, "-m", "snakemake", "--executor", executor, "--jobs", str(jobs)]
    argv += options
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    calls = collections.Counter(log.read_text().split())
    finished = len(list((workdir / "out").glob("*.txt")))
    return {"executor": variant, "ok": done.returncode == 0, "outputs": finished,
            "wall s": round(wall, 1), **{c: calls.get(c, 0) for c in COMMANDS}}  # fmt: skip


@contextlib.contextmanager
def _default_conf(conf: str | None) -> Iterator[None]:
    # snakemake-executor-plugin-slurm's jobs run srun with an environment in which srun
    # finds no SLURM_CONF; on a real cluster slurm.conf sits where srun looks by default.
    default = Path("/etc/slurm/slurm.conf")
    if conf is None or default.exists():
        yield
        return
    default.parent.mkdir(parents=True, exist_ok=True)
    default.symlink_to(conf)
    try:
        yield
    finally:
        default.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument(
        "--executors", default="seqera,slurm", help=f"comma-separated: {', '.join(VARIANTS)}"
    )
    parser.add_argument("--cpus", type=int, default=32)
    args = parser.parse_args(argv)
    rows = []
    with _cluster(args.cpus) as cluster, tempfile.TemporaryDirectory() as base:
        env = {**os.environ, **cluster}
        for executor in args.executors.split(","):
            with _default_conf(env.get("SLURM_CONF")):
                rows.append(_run(executor, args.jobs, Path(base), env))
            print(rows[-1], flush=True)
    print()
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in header) + " |")
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
