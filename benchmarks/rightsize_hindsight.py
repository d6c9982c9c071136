"""How well any per-process constant allocation could do on a trace, knowing the future.

``uv run python benchmarks/rightsize_hindsight.py TRACE.csv [...] [--seed N ...]
[--sample 12,28]``: on the online tasks of ``seqera-sidecar evaluate``'s split, the MAQ of

- ``online max``: each process given the largest peak of its online tasks (no retry);
- ``best constant``: each process given the constant that wastes least when a task it
  does not hold is charged that allocation and then retried at exactly its peak (an
  oracle retry), with the share of tasks retried.

Neither can be run (both read the tasks' peaks before they run); they bound what a
right-sizer that sizes a process by one number, whatever its history, can reach. A
right-sizer above them is using the input size.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from seqera_sidecar.evaluate import Sample, split
from seqera_sidecar.trace import read_trace

__all__ = ["main"]


def _bounds(online: list[tuple[str, float, float]]) -> tuple[float, float, float]:
    """(online max MAQ, best constant MAQ, its retry share) over (process, peak, seconds)."""
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for process, peak, seconds in online:
        by[process].append((peak, seconds))
    used = sum(peak * seconds for runs in by.values() for peak, seconds in runs)
    most = sum(max(p for p, _ in runs) * s for runs in by.values() for _, s in runs)
    wasted = retries = 0.0
    for runs in by.values():
        # the best constant is one of the peaks: between two, waste only grows
        best = min(
            (sum((c - p) * s if c >= p else c * s for p, s in runs), sum(c < p for p, _ in runs))
            for c, _ in runs
        )
        wasted += best[0]
        retries += best[1]
    return used / most, used / (used + wasted), retries / len(online)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--sample", help="HISTORY,ONLINE per process (as evaluate's)")
    args = parser.parse_args(argv)
    sample = None
    if args.sample:
        history, online = (int(x) for x in args.sample.split(","))
        sample = Sample(history, online)
    print("| trace | seed | online max: MAQ | best constant: MAQ, retried |")
    print("|---|---|---|---|")
    for path in args.traces:
        records = read_trace(path)
        for seed in args.seed or [0]:
            _, online = split(records, seed, sample)
            rows = [(t.process, float(t.peak_memory or 0), t.realtime or 0.0) for t in online]
            most, constant, retried = _bounds(rows)
            print(f"| {path.rsplit('/', 1)[-1]} | {seed} | {most:.3f} | "
                  f"{constant:.3f}, {retried:.2%} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
