"""A Snakemake DAG of a few hundred jobs of three shapes: routed between this machine and a
one-node Slurm (``--seqera-backend route``), against Snakemake's own local executor (the
floor) and against squashing everything into Slurm allocations, medians of N runs.

Run as root: ``uv run python benchmarks/route_snakemake.py [--small 300] [--medium 6]
[--wide 4] [--repeat 3] [--cpus 16] [--results FILE] [--work DIR]``. It starts a throw-away cluster
(``slurm_jobs._cluster``, unless ``SLURM_CONF`` is set) and writes one Snakefile:
``--small`` trivial rules (an ``echo``; ``runtime=1``), ``--medium`` one-core rules of
``--medium-seconds`` (``runtime=2``) and ``--wide`` four-thread rules of 10 s
(``runtime=2``), all independent. Variants, interleaved so load from elsewhere hits
each alike:

- ``floor``: ``snakemake --cores LOCAL`` (this machine's cores), no cluster;
- ``squash``: ``--seqera-backend slurm --seqera-squash squash``;
- ``route``: ``--seqera-backend route`` over local (``--seqera-local-cores LOCAL``) and
  Slurm, with a history the route's first, untimed run (``VARIANT-cold`` of the first
  route variant, reported apart) filled: the right-sizer's run times are what the
  policy estimates finish times from;
- ``route-squash``: the same, its Slurm candidate squashing (``--seqera-squash squash``).

Every run's wall time and where its jobs ran (the history's ``backend`` column) are
printed and appended to the benchmarks' JSON-lines file (``_emit.py``); then the median
wall per variant and its ratio to the floor's. The goal (issue 33): route within 1.5 x
the floor, and faster than squash.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _emit import Emitter, add_argument
from slurm_jobs import _cluster  # the benchmark's own cluster recipe
from snakemake_slurm import _compile, _default_conf

__all__ = ["main"]

SNAKEFILE = """
rule all:
    input:
        expand("small/{{i}}.txt", i=range({small})),
        expand("medium/{{i}}.txt", i=range({medium})),
        expand("wide/{{i}}.txt", i=range({wide})),

rule small:
    output: "small/{{i}}.txt"
    resources: mem_mb=100, runtime=1
    shell: "echo {{wildcards.i}} > {{output}}"

rule medium:
    output: "medium/{{i}}.txt"
    resources: mem_mb=100, runtime=2
    shell: "sleep {seconds}; echo {{wildcards.i}} > {{output}}"

rule wide:
    output: "wide/{{i}}.txt"
    threads: 4
    resources: mem_mb=100, runtime=2
    shell: "sleep 10; echo {{wildcards.i}} > {{output}}"
"""


def _argv(variant: str, local: int, total: int, history: Path) -> list[str]:
    variant = variant.removesuffix("-cold")
    base = [sys.executable, "-m", "snakemake"]
    if variant == "floor":
        return [*base, "--cores", str(local)]
    seqera = [*base, "--executor", "seqera", "--jobs", str(total)]
    if variant == "squash":
        return [*seqera, "--seqera-backend", "slurm", "--seqera-squash", "squash"]
    route = [*seqera, "--seqera-backend", "route", "--seqera-route-backends", "local", "slurm",
             "--seqera-local-cores", str(local), "--seqera-history", str(history),
             "--seconds-between-status-checks", "1"]  # fmt: skip
    # route-squash: the Slurm candidate squashes what it is sent into allocations
    return [*route, "--seqera-squash", "squash"] if variant == "route-squash" else route


def _where(history: Path, before: set[str]) -> dict[str, int]:
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT run_id, process, backend FROM task_history").fetchall()
    return dict(collections.Counter(f"{p}@{b}" for r, p, b in rows if r not in before))


def _runs(history: Path) -> set[str]:
    if not history.exists():
        return set()
    with sqlite3.connect(history) as db:
        return {r for (r,) in db.execute("SELECT DISTINCT run_id FROM task_history")}


def _run(variant: str, args: argparse.Namespace, workdir: Path, env: dict[str, str],
         history: Path) -> dict[str, Any]:  # fmt: skip
    workdir.mkdir(parents=True)
    text = SNAKEFILE.format(small=args.small, medium=args.medium, wide=args.wide,
                            seconds=args.medium_seconds)  # fmt: skip
    (workdir / "Snakefile").write_text(textwrap.dedent(text))
    total = args.small + args.medium + args.wide
    before = _runs(history)
    start = time.perf_counter()
    done = subprocess.run(_argv(variant, args.local, total, history), cwd=workdir, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    outputs = sum(len(list((workdir / d).glob("*.txt"))) for d in ("small", "medium", "wide"))
    where = _where(history, before) if variant.startswith("route") else {}
    return {"variant": variant, "ok": done.returncode == 0 and outputs == total,
            "outputs": outputs, "wall_s": round(wall, 2), "where": where}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--medium", type=int, default=6)
    parser.add_argument("--medium-seconds", type=int, default=20)
    parser.add_argument("--wide", type=int, default=4)
    parser.add_argument("--local", type=int, default=os.cpu_count() or 2, help="local cores")
    parser.add_argument("--cpus", type=int, default=16, help="CPUs the cluster advertises")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variants", default="floor,route,squash")
    parser.add_argument("--work", type=Path, help="keep the runs and their history here")
    add_argument(parser)
    args = parser.parse_args(argv)
    _compile()
    emit = Emitter("route_snakemake", args.results)
    rows: list[dict[str, Any]] = []
    shape = {"small": args.small, "medium": args.medium, "wide": args.wide,
             "local": args.local, "cpus": args.cpus}  # fmt: skip
    with _cluster(args.cpus) as cluster, contextlib.ExitStack() as stack:
        if args.work is not None:
            args.work.mkdir(parents=True)  # a fresh one: the history is part of the result
            base = str(args.work.absolute())
        else:
            base = stack.enter_context(tempfile.TemporaryDirectory())
        env = {**os.environ, **cluster, "XDG_CONFIG_HOME": f"{base}/xdg"}
        history = Path(base) / "history.db"
        variants = args.variants.split(",")
        # the untimed first run routes as the first route variant does, so the history
        # holds what that variant measures (a squashed job's run time; a plain Slurm job
        # has none without slurmdbd, and the policy would take its time limit instead)
        routed = [v for v in variants if v.startswith("route")]
        plan = [(f"{routed[0]}-cold", -1)] if routed else []
        plan += [(v, n) for n in range(args.repeat) for v in variants]
        for variant, n in plan:
            with _default_conf(env.get("SLURM_CONF")):
                row = _run(variant, args, Path(base) / f"{variant}-{n}", env, history)
            rows.append(row)
            print(json.dumps(row), flush=True)
            emit.figure("wall", row["wall_s"], "s", variant=variant, run=n, **shape)
    groups: dict[str, list[float]] = {}
    for row in rows:
        groups.setdefault(row["variant"], []).append(row["wall_s"])
    floor = statistics.median(groups["floor"]) if "floor" in groups else None
    print("\n| variant | runs | median wall s | x floor | all ok |\n|---|---|---|---|---|")
    for variant, walls in groups.items():
        median = statistics.median(walls)
        ratio = round(median / floor, 2) if floor else None
        emit.figure("median wall", median, "s", variant=variant, runs=len(walls), **shape)
        if ratio is not None:
            emit.figure("x floor", ratio, "ratio", variant=variant, **shape)
        ok = all(r["ok"] for r in rows if r["variant"] == variant)
        print(f"| {variant} | {len(walls)} | {median:.1f} | {ratio or '-'} | {ok} |")
    emit.close()
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
