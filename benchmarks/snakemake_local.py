"""The README's example workflow through ``--executor seqera`` (local backend) against
``snakemake --cores`` on the same Snakefile: whole-process wall and CPU time.

Run: ``uv run --with 'snakemake>=9,<10' python benchmarks/snakemake_local.py [--runs 5]``.
The two commands run in turn (seqera, cores, seqera, ...) after one unmeasured warm-up
each, every run in a new directory; the ratio is taken pair by pair so a drift of the
machine's load moves both sides of it. Prints one JSON line per figure: the median
(and min, max) of each side's wall and CPU seconds (CPU: user + system of the command
and every process it waited for, from ``getrusage(RUSAGE_CHILDREN)``), and of the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

SNAKEFILE = Path(__file__).resolve().parent.parent / "examples" / "snakemake" / "Snakefile"
# The example's rule echoes variables the seqera executor sets; under Snakemake's
# `set -u` a plain run needs them defined.
LABELS = {"SEQERA_LABEL_SNAKEMAKE_RULE": "", "SEQERA_LABEL_SNAKEMAKE_WILDCARD_SAMPLE": ""}


def _commands(cores: int) -> dict[str, list[str]]:
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-q"]
    return {
        "seqera": [*snakemake, "--executor", "seqera", "--jobs", str(cores)],
        "cores": [*snakemake, "--cores", str(cores)],
    }


def _run(argv: list[str], root: Path) -> tuple[float, float]:
    directory = Path(tempfile.mkdtemp(dir=root))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [*argv, "-d", str(directory)],
        env={**os.environ, **LABELS},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or not (directory / "results" / "summary.txt").exists():
        sys.exit(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    shutil.rmtree(directory)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _line(figure: str, values: list[float], unit: str, runs: int) -> str:
    return json.dumps(
        {
            "benchmark": "snakemake_local",
            "figure": figure,
            "unit": unit,
            "median": round(statistics.median(values), 3),
            "min": round(min(values), 3),
            "max": round(max(values), 3),
            "runs": runs,
            "cpus": len(os.sched_getaffinity(0)),
            "load1": round(os.getloadavg()[0], 2),
        }
    )


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured pairs (default 5)")
    parser.add_argument("--cores", type=int, default=4, help="--jobs / --cores (default 4)")
    args = parser.parse_args(argv)
    commands = _commands(args.cores)
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="seqera-bench-") as tmp:
        root = Path(tmp)
        for name in commands:  # warm-up: caches, compiled bytecode
            _run(commands[name], root)
        for _ in range(args.runs):
            pair = {name: _run(command, root) for name, command in commands.items()}
            for name, (wall, cpu) in pair.items():
                figures.setdefault(f"{name} wall", []).append(wall)
                figures.setdefault(f"{name} cpu", []).append(cpu)
            figures.setdefault("seqera/cores wall", []).append(pair["seqera"][0] / pair["cores"][0])
    for figure, values in figures.items():
        unit = "ratio" if "/" in figure else "s"
        print(_line(figure, values, unit, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
