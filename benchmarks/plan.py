"""The CAVATICA planner on generated workloads: cost over the lower bound, and plan time.

Run: ``uv run python benchmarks/plan.py [--sizes 100,1000,10000,100000] [--seed 1]``.

Workloads, on the shipped EC2 catalogue (seqera_core/data/ec2-us-east-1-2026-11.yaml):

- uniform: 0.5-16 vCPUs (powers of two), 0.5-64 GiB in 0.5 GiB steps, independent;
- bimodal: half compute-heavy (8-16 vCPUs, 2-16 GiB), half memory-heavy (1-2 vCPUs,
  32-128 GiB);
- tiny+huge: 99% tiny (0.25-1 vCPU, 0.25-2 GiB), 1% huge (48-96 vCPUs, 192-700 GiB).

For each it prints the seed algorithm's instances, hourly cost, the lower bound (for
every dimension, total demand times the cheapest price per unit; the largest), the
ratio and the CPU seconds :func:`seqera_core.planner.schedule` took; then the same for
the lookahead variant (``schedule(..., lookahead=True)``, ``seqera plan --lookahead``)
and its gain over the seed.

The seed's weak spot: it opens the cheapest type that holds the *first* waiting job
alone, so that job nearly fills it and the rest of the queue rarely fits beside it;
with EC2's linear prices most instances carry one or two jobs and the dimension the
first job does not use (memory on a compute-sized job's box, cores on a memory-sized
one's) is paid for and left idle. The lookahead variant packs every type that holds
the first job on trial, with the seed's own first-fit fill over the whole queue, and
opens the one whose packed jobs are worth the most lower-bound value (each job's
largest demand at the cheapest unit price) per dollar.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from seqera_core import catalogue as catalogues
from seqera_core.planner import Job, lower_bound, schedule
from seqera_core.units import GIB

__all__ = ["WORKLOADS", "main"]

Workload = Callable[[random.Random, int], list[Job]]


def _uniform(r: random.Random, count: int) -> list[Job]:
    return [
        Job(f"u{n}", r.choice([0.5, 1, 2, 4, 8, 16]), r.randint(1, 128) * GIB // 2)
        for n in range(count)
    ]


def _bimodal(r: random.Random, count: int) -> list[Job]:
    jobs = []
    for n in range(count):
        if r.random() < 0.5:
            jobs.append(Job(f"c{n}", r.choice([8, 12, 16]), r.randint(2, 16) * GIB))
        else:
            jobs.append(Job(f"m{n}", r.choice([1, 2]), r.randint(32, 128) * GIB))
    return jobs


def _tiny_huge(r: random.Random, count: int) -> list[Job]:
    jobs = []
    for n in range(count):
        if r.random() < 0.01:
            jobs.append(Job(f"h{n}", r.choice([48, 64, 96]), r.randint(192, 700) * GIB))
        else:
            jobs.append(Job(f"t{n}", r.choice([0.25, 0.5, 1]), r.randint(1, 8) * GIB // 4))
    return jobs


WORKLOADS: dict[str, Workload] = {
    "uniform": _uniform,
    "bimodal": _bimodal,
    "tiny+huge": _tiny_huge,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Print one row per workload and size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    catalogue = catalogues.default()
    header = (
        f"{'workload':<10} {'jobs':>7} {'instances':>9} {'$/hour':>10} {'bound':>10} "
        f"{'ratio':>6} {'cpu s':>6} | {'variant $/h':>11} {'ratio':>6} {'gain':>6} {'cpu s':>6}"
    )
    print(f"catalogue: {catalogue.source} ({catalogue.date})")
    print(header)
    for name, workload in WORKLOADS.items():
        for size in (int(s) for s in args.sizes.split(",")):
            jobs = workload(random.Random(args.seed), size)
            start = time.process_time()
            plan = schedule(catalogue, jobs)
            seconds = time.process_time() - start
            bound = lower_bound(catalogue, jobs).hourly
            cost = plan.hourly_cost
            row = (
                f"{name:<10} {size:>7} {len(plan.instances):>9} {cost:>10.2f} {bound:>10.2f} "
                f"{cost / bound:>6.3f} {seconds:>6.2f}"
            )
            start = time.process_time()
            better = schedule(catalogue, jobs, lookahead=True).hourly_cost
            spent = time.process_time() - start
            gain = 1 - better / cost
            row += f" | {better:>11.2f} {better / bound:>6.3f} {gain:>6.1%} {spent:>6.2f}"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
