"""A Snakemake workflow of N trivial rules on a one-node Slurm: the floor and each executor.

Run as root: ``uv run python benchmarks/snakemake_slurm.py [--jobs 200,2000]
[--executors floor,seqera-squash,seqera] [--repeat 3] [--cpus 8] [--results FILE]``
(``uv run --with snakemake-executor-plugin-slurm ...`` to add ``slurm``). It starts a
throw-away cluster with tests/integration/slurm/slurm-up.sh (unless ``SLURM_CONF`` is set),
writes one Snakefile of N independent trivial rules (``mem_mb=300, runtime=5``, an
``echo`` each), and runs it with every executor, same cluster, same Snakefile, each with
its default settings and ``--jobs N``. ``floor`` is Snakemake's own local executor on the
same machine (``--cores CPUS``, no cluster at all): what a cluster executor can approach,
measured in the same run so the ratio means something on a shared machine.

Every run appends its figures (``wall``, and the calls of each scheduler command) to the
benchmarks' JSON-lines file (``_emit.py``: ``--results``, default ``results.jsonl``);
then, per executor and N, the median wall time (``median wall``) and its ratio to the
floor's (``x floor``), and prints a table. Scheduler calls are
counted by small wrappers in front of ``sbatch``, ``squeue``, ``sacct``, ``scontrol``,
``scancel`` and ``sinfo``, outside jobs only. An executor whose run takes more than
``--slow`` seconds is not repeated, nor run at the larger sizes (``seqera`` off: about 14
minutes at 200 jobs).

The environment's packages are byte-compiled first (as pip does at install; uv only with
``--compile-bytecode``): with ``PYTHONDONTWRITEBYTECODE`` set and no ``.pyc``, every
interpreter, the floor's included, would compile Snakemake from source at each start.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _emit import Emitter, add_argument
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


# name -> (executor, its own arguments); None: Snakemake's local executor, the floor
VARIANTS: dict[str, tuple[str | None, list[str]]] = {
    "floor": (None, []),
    "seqera": ("seqera", ["--seqera-backend", "slurm"]),
    "seqera-array": ("seqera", ["--seqera-backend", "slurm", "--seqera-squash", "array"]),
    "seqera-squash": ("seqera", ["--seqera-backend", "slurm", "--seqera-squash", "squash"]),
    # allocations of one core each: the default before allocations were sized to the node
    "seqera-squash1": (
        "seqera",
        ["--seqera-backend", "slurm", "--seqera-squash", "squash", "--seqera-squash-cpus", "1"],
    ),
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


def _run(variant: str, jobs: int, cpus: int, workdir: Path, env: dict[str, str]) -> dict[str, Any]:
    executor, options = VARIANTS[variant]
    workdir.mkdir(parents=True)
    (workdir / "Snakefile").write_text(textwrap.dedent(SNAKEFILE.format(jobs=jobs)))
    log = workdir / "calls.log"
    log.touch()
    _shims(workdir / "shims", log)
    env = {**env, "PATH": f"{workdir / 'shims'}:{env['PATH']}"}
    argv = [sys.executable, "-m", "snakemake"]
    if executor is None:
        argv += ["--cores", str(cpus)]
    else:
        argv += ["--executor", executor, "--jobs", str(jobs), *options]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    calls = collections.Counter(log.read_text().split())
    finished = len(list((workdir / "out").glob("*.txt")))
    return {
        "executor": variant,
        "jobs": jobs,
        "ok": done.returncode == 0 and finished == jobs,
        "outputs": finished,
        "wall_s": round(wall, 2),
        **{c: calls.get(c, 0) for c in COMMANDS},
    }


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


def _compile() -> None:
    paths = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    argv = [sys.executable, "-m", "compileall", "-q", "-j", "0", *paths]
    subprocess.run(argv, capture_output=True, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="200", help="comma-separated rule counts")
    parser.add_argument(
        "--executors",
        default="floor,seqera-squash,seqera",
        help=f"comma-separated: {', '.join(VARIANTS)}",
    )
    parser.add_argument("--cpus", type=int, default=8, help="CPUs the cluster advertises")
    parser.add_argument("--repeat", type=int, default=3, help="runs at the first size")
    parser.add_argument("--slow", type=float, default=300.0, help="seconds: run such once")
    add_argument(parser)
    args = parser.parse_args(argv)
    variants = args.executors.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"--executors: {unknown[0]!r} is not one of {', '.join(VARIANTS)}")
    sizes = [int(n) for n in args.jobs.split(",")]
    _compile()
    emit = Emitter("snakemake_slurm", args.results)
    rows: list[dict[str, Any]] = []
    with _cluster(args.cpus) as cluster, tempfile.TemporaryDirectory() as base:
        env = {**os.environ, **cluster}
        slow: set[str] = set()
        for jobs in sizes:
            # interleaved, so a burst of load from elsewhere hits every executor alike
            for n in range(args.repeat if jobs == sizes[0] else 1):
                for variant in variants:
                    if variant in slow:
                        continue
                    workdir = Path(base) / f"{variant}-{jobs}-{n}"
                    with _default_conf(env.get("SLURM_CONF")):
                        row = _run(variant, jobs, args.cpus, workdir, env)
                    shutil.rmtree(workdir, ignore_errors=True)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    case = {"executor": variant, "jobs": jobs, "cpus": args.cpus, "run": n}
                    emit.figure("wall", row["wall_s"], "s", **case)
                    for command in COMMANDS:
                        emit.figure(f"{command} calls", row[command], "calls", **case)
                    if row["wall_s"] > args.slow:
                        slow.add(variant)
    medians = _medians(rows)
    for m in medians:
        case = {"executor": m["executor"], "jobs": m["jobs"], "cpus": args.cpus}
        emit.figure("median wall", m["median_wall_s"], "s", runs=m["runs"], **case)
        if m["x_floor"] is not None:
            emit.figure("x floor", m["x_floor"], "ratio", **case)
    emit.close()
    print()
    print("| executor | jobs | runs | median wall s | x floor | sbatch | squeue | all ok |")
    print("|---|---|---|---|---|---|---|---|")
    for m in medians:
        ratio = "-" if m["x_floor"] is None else f"{m['x_floor']:.2f}"
        print(
            f"| {m['executor']} | {m['jobs']} | {m['runs']} | {m['median_wall_s']:.1f} | "
            f"{ratio} | {m['sbatch']} | {m['squeue']} | {m['ok']} |"
        )
    return 0 if all(row["ok"] for row in rows) else 1


def _medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["executor"], row["jobs"]), []).append(row)
    floors = {j: statistics.median(r["wall_s"] for r in g) for (e, j), g in groups.items()
              if e == "floor"}  # fmt: skip
    result = []
    for (executor, jobs), group in groups.items():
        median = statistics.median(r["wall_s"] for r in group)
        floor = floors.get(jobs)
        result.append(
            {
                "executor": executor,
                "jobs": jobs,
                "runs": len(group),
                "median_wall_s": round(median, 2),
                "x_floor": round(median / floor, 2) if floor else None,
                "sbatch": statistics.median(r["sbatch"] for r in group),
                "squeue": statistics.median(r["squeue"] for r in group),
                "ok": all(r["ok"] for r in group),
            }
        )
    return result


if __name__ == "__main__":
    raise SystemExit(main())
