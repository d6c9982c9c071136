"""The CAVATICA planner on generated workloads: cost over the lower bound, and plan time.

Run: ``uv run python benchmarks/plan.py [--sizes 100,1000,10000,100000] [--seed 1]``.

Workloads, on the shipped EC2 catalogue (seqera_core/data/ec2-us-east-1-2026-11.yaml):

- uniform: 0.5-16 vCPUs (powers of two), 0.5-64 GiB in 0.5 GiB steps, independent;
- bimodal: half compute-heavy (8-16 vCPUs, 2-16 GiB), half memory-heavy (1-2 vCPUs,
  32-128 GiB);
- tiny+huge: 99% tiny (0.25-1 vCPU, 0.25-2 GiB), 1% huge (48-96 vCPUs, 192-700 GiB).

For each it prints the seed algorithm's instances, hourly cost, the lower bound (for
every dimension, total demand times the cheapest price per unit; the largest), the
ratio and the CPU seconds :func:`seqera_core.planner.schedule` took. Then the same for
the *lookahead* variant below, up to 10,000 jobs (it is a plain loop, not tuned).

The seed's weak spot: it opens the cheapest type that holds the *first* waiting job
alone, so that job nearly fills it and the rest of the queue rarely fits beside it;
with EC2's linear prices most instances carry one job and the unused dimension (memory
left on a compute-sized job's box, cores left on a memory-sized one's) is paid for.
The lookahead variant instead tries every type that holds the first job, packs the
next ``--window`` waiting jobs onto it the same first-fit way, and opens the type that
packs the most lower-bound value (each job's own bound: max over dimensions of demand
times the cheapest unit price) per dollar; it then fills that instance first-fit from
the next ``10 x window`` waiting jobs (the seed looks at the whole queue).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from seqera_core import catalogue as catalogues
from seqera_core.catalogue import Catalogue, InstanceType
from seqera_core.planner import Job, lower_bound, millicores, prioritize_jobs, schedule
from seqera_core.units import GIB

__all__ = ["WORKLOADS", "lookahead", "main"]

Workload = Callable[[random.Random, int], list[Job]]
_FILL_SPAN = 10  # the variant fills from up to this many windows of the queue


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


def _room(t: InstanceType) -> list[int]:
    return [round(t.vcpus * 1000), t.memory, t.gpus]


def lookahead(catalogue: Catalogue, jobs: Sequence[Job], window: int = 300) -> float:
    """The hourly cost of the lookahead variant's plan (see the module docstring)."""
    bound_unit = []
    for n in range(3):
        prices = [t.price / _room(t)[n] for t in catalogue.types if _room(t)[n] > 0]
        bound_unit.append(min(prices) if prices else 0.0)
    queue = list(prioritize_jobs(catalogue, jobs))
    demand = [(millicores(j.cpus), j.memory, j.gpus) for j in queue]
    value = [max(d[k] * bound_unit[k] for k in range(3)) for d in demand]
    taken = [False] * len(queue)
    head, cost = 0, 0.0
    while True:
        while head < len(queue) and taken[head]:
            head += 1
        if head == len(queue):
            return cost
        ahead: list[int] = []
        position = head
        while position < len(queue) and len(ahead) < window:
            if not taken[position]:
                ahead.append(position)
            position += 1
        first = queue[head]
        best: tuple[float, float, InstanceType, list[int]] | None = None
        for t in catalogue.types:
            room = _room(t)
            if first.instance_type not in (None, t.name) or any(
                demand[head][k] > room[k] for k in range(3)
            ):
                continue
            packed: list[int] = []
            worth = 0.0
            for p in ahead:
                d = demand[p]
                if queue[p].instance_type in (None, t.name) and all(
                    d[k] <= room[k] for k in range(3)
                ):
                    room = [room[k] - d[k] for k in range(3)]
                    packed.append(p)
                    worth += value[p]
            score = (worth / t.price if t.price else float("inf"), -t.price)
            if best is None or score > best[:2]:
                best = (score[0], score[1], t, packed)
        assert best is not None  # the first job's required type always qualifies
        chosen = best[2]
        cost += chosen.price
        # fill it as the seed does, in queue order, but only over a bounded stretch
        room = _room(chosen)
        for p in range(head, min(len(queue), head + _FILL_SPAN * window)):
            d = demand[p]
            if (
                not taken[p]
                and queue[p].instance_type in (None, chosen.name)
                and all(d[k] <= room[k] for k in range(3))
            ):
                room = [room[k] - d[k] for k in range(3)]
                taken[p] = True


def main(argv: Sequence[str] | None = None) -> int:
    """Print one row per workload and size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=300, help="the variant's lookahead")
    parser.add_argument("--variant-max", type=int, default=10_000, help="largest size for it")
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
            if size <= args.variant_max:
                start = time.process_time()
                better = lookahead(catalogue, jobs, args.window)
                spent = time.process_time() - start
                gain = 1 - better / cost
                row += f" | {better:>11.2f} {better / bound:>6.3f} {gain:>6.1%} {spent:>6.2f}"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
