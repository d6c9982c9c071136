"""``seqera plan`` on generated jobs: cost against the bound and a known optimum, time, memory.

Run: ``uv run python benchmarks/plan.py [--sizes 1000,10000,100000] [--seeds 1,2,3]
[--repeat 5] [--results FILE]``.

Workloads, on the shipped EC2 catalogue (seqera_core/data/ec2-us-east-1-2026-11.yaml):

- cut: whole instances of the catalogue's non-GPU types, each cut into 1-8 jobs that
  fill it exactly (cores in halves, memory in quarter GiB), shuffled. The price of
  those instances is what an optimal plan costs at most ("optimum" below; the LP bound
  sits under it, since mixing families can be cheaper still);
- uniform: 0.5-16 vCPUs (powers of two), 0.5-64 GiB in 0.5 GiB steps, independent;
- bimodal: half compute-heavy (8-16 vCPUs, 2-16 GiB), half memory-heavy (1-2 vCPUs,
  32-128 GiB);
- tiny+huge: 99% tiny (0.25-1 vCPU, 0.25-2 GiB), 1% huge (48-96 vCPUs, 192-700 GiB).

For each workload, size and variant (the published CAVATICA algorithm and
``--lookahead``) it reports the plan's hourly cost over the lower bound
(:func:`seqera_core.planning._planner.lower_bound`, the LP relaxation), over the optimum where one
is known, and the CPU seconds :func:`~seqera_core.planning._planner.schedule` took. Then, end to
end, the wall time of the ``seqera`` command itself (a fresh process: start-up, parse,
plan, write the table or ``--json``) on the largest cut workload, median of
``--repeat`` runs, and its peak memory (VmHWM) at three sizes, to show it grows
linearly with the jobs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _emit import Emitter, add_argument

from seqera_core.planning import Job, lower_bound, schedule
from seqera_core.planning import catalogue as catalogues
from seqera_core.planning.catalogue import InstanceType
from seqera_core.units import GIB

__all__ = ["WORKLOADS", "cut", "main"]

Workload = Callable[[random.Random, int], tuple[list[Job], float | None]]


def cut(r: random.Random, count: int) -> tuple[list[Job], float | None]:
    """Jobs that fill whole non-GPU instances exactly, shuffled; and those instances' price."""
    types: list[InstanceType] = [t for t in catalogues.default().types if not t.gpus]
    jobs: list[Job] = []
    cost = 0.0
    while len(jobs) < count:
        t = r.choice(types)
        halves, quarters = int(t.vcpus * 2), t.memory // (GIB // 4)
        pieces = min(r.randint(1, 8), halves)
        cores = sorted(r.sample(range(1, halves), pieces - 1))
        sizes = sorted(r.sample(range(1, quarters), pieces - 1))
        for c0, c1, m0, m1 in zip(
            [0, *cores], [*cores, halves], [0, *sizes], [*sizes, quarters], strict=True
        ):
            jobs.append(Job(f"j{len(jobs)}", (c1 - c0) / 2, (m1 - m0) * (GIB // 4)))
        cost += t.price
    r.shuffle(jobs)
    return jobs, cost


def _uniform(r: random.Random, count: int) -> tuple[list[Job], float | None]:
    cpus = [0.5, 1, 2, 4, 8, 16]
    return [Job(f"u{n}", r.choice(cpus), r.randint(1, 128) * GIB // 2) for n in range(count)], None


def _bimodal(r: random.Random, count: int) -> tuple[list[Job], float | None]:
    jobs = []
    for n in range(count):
        if r.random() < 0.5:
            jobs.append(Job(f"c{n}", r.choice([8, 12, 16]), r.randint(2, 16) * GIB))
        else:
            jobs.append(Job(f"m{n}", r.choice([1, 2]), r.randint(32, 128) * GIB))
    return jobs, None


def _tiny_huge(r: random.Random, count: int) -> tuple[list[Job], float | None]:
    jobs = []
    for n in range(count):
        if r.random() < 0.01:
            jobs.append(Job(f"h{n}", r.choice([48, 64, 96]), r.randint(192, 700) * GIB))
        else:
            jobs.append(Job(f"t{n}", r.choice([0.25, 0.5, 1]), r.randint(1, 8) * GIB // 4))
    return jobs, None


WORKLOADS: dict[str, Workload] = {
    "cut": cut,
    "uniform": _uniform,
    "bimodal": _bimodal,
    "tiny+huge": _tiny_huge,
}

# the seqera command in a fresh process; prints its own peak memory (KiB) on stderr:
# VmHWM, the peak of this process's own memory, since ru_maxrss keeps across exec the
# size of the parent it was forked from (this benchmark, holding 100,000 jobs)
_COMMAND = """
import resource, sys
from seqera_core.cli import main
status = main(sys.argv[1:])
used = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/status") as status_file:
    peak = next(int(line.split()[1]) for line in status_file if line.startswith("VmHWM"))
print("maxrss", peak, used.ru_utime + used.ru_stime, file=sys.stderr)
sys.exit(status)
"""


def _command(jobs_file: Path, *flags: str) -> tuple[float, int, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _COMMAND, "plan", str(jobs_file), *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    line = next(line for line in done.stderr.splitlines() if line.startswith("maxrss"))
    return wall, int(line.split()[1]), float(line.split()[2])


def _write(jobs: Sequence[Job], path: Path) -> None:
    path.write_text(
        json.dumps([{"name": j.name, "cpus": j.cpus, "memory": j.memory} for j in jobs])
    )


def _plans(emit: Emitter, sizes: list[int], seeds: list[int]) -> None:
    catalogue = catalogues.default()
    print(f"catalogue: {catalogue.source} ({catalogue.date})")
    print(
        f"{'workload':<10} {'seed':>4} {'jobs':>7} {'bound $/h':>10} {'optimum':>9} | "
        f"{'published':>9} {'/bound':>6} {'/opt':>6} {'cpu s':>6} | "
        f"{'lookahead':>9} {'/bound':>6} {'/opt':>6} {'cpu s':>6}"
    )
    for name, workload in WORKLOADS.items():
        for size in sizes:
            for seed in seeds if name == "cut" else seeds[:1]:
                jobs, optimum = workload(random.Random(seed), size)
                bound = lower_bound(catalogue, jobs).hourly
                row = f"{name:<10} {seed:>4} {len(jobs):>7} {bound:>10.2f} "
                row += f"{optimum:>9.2f} |" if optimum else f"{'-':>9} |"
                for variant in ("published", "lookahead"):
                    start = time.process_time()
                    cost = schedule(catalogue, jobs, lookahead=variant == "lookahead").hourly_cost
                    spent = time.process_time() - start
                    case = {"workload": name, "jobs": len(jobs), "seed": seed, "variant": variant}
                    emit.figure("cost over bound", round(cost / bound, 5), "x", **case)
                    emit.figure("schedule cpu", round(spent, 3), "s", **case)
                    over = f"{cost / optimum:>6.3f}" if optimum else f"{'-':>6}"
                    if optimum:
                        emit.figure("cost over optimum", round(cost / optimum, 5), "x", **case)
                    row += f" {cost:>9.2f} {cost / bound:>6.3f} {over} {spent:>6.2f} |"
                print(row.rstrip(" |"), flush=True)


def _end_to_end(emit: Emitter, size: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "jobs.json"
        jobs, _ = cut(random.Random(1), size)
        _write(jobs, path)
        print(f"\n`seqera plan` on {len(jobs)} cut jobs, a fresh process, median of {repeat}:")
        for variant in ("published", "lookahead"):
            for output in ("text", "json"):
                flags = ["--lookahead"] * (variant == "lookahead") + ["--json"] * (output == "json")
                runs = [_command(path, *flags) for _ in range(repeat)]
                wall = statistics.median(w for w, _, _ in runs)
                cpu = statistics.median(c for _, _, c in runs)
                case = {"jobs": len(jobs), "variant": variant, "output": output}
                emit.figure("command wall", round(wall, 3), "s", **case)
                emit.figure("command cpu", round(cpu, 3), "s", **case)
                low, high = min(w for w, _, _ in runs), max(w for w, _, _ in runs)
                print(
                    f"  {variant:<9} {output:<4}  wall {wall:.2f} s (min {low:.2f}, "
                    f"max {high:.2f}), cpu {cpu:.2f} s"
                )
        print("peak memory of the command (--lookahead --json):")
        for part in (4, 2, 1):
            jobs, _ = cut(random.Random(1), size // part)
            _write(jobs, path)
            _, rss, _ = _command(path, "--lookahead", "--json")
            emit.figure("command maxrss", rss // 1024, "MiB", jobs=len(jobs))
            print(f"  {len(jobs):>7} jobs: {rss / 1024:.0f} MiB")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables and append the figures to the results file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--seeds", default="1,2,3", help="seeds of the cut workload")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the command to time")
    parser.add_argument("--command-only", action="store_true", help="only the command's figures")
    add_argument(parser)
    args = parser.parse_args(argv)
    emit = Emitter("plan", args.results)
    sizes = [int(s) for s in args.sizes.split(",")]
    if not args.command_only:
        _plans(emit, sizes, [int(s) for s in args.seeds.split(",")])
    _end_to_end(emit, max(sizes), args.repeat)
    emit.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
