"""The right-sizer against issue 31's goals, trace by trace, seed by seed.

``uv run python benchmarks/rightsize_goals.py TRACE.csv [...] [--seed N ...]
[--sample 12,28] [--jobs N]``: replays each trace (``seqera-sidecar evaluate``'s
protocol) with the per-process maximum and with the right-sizer at its defaults, and
prints per run: waste relative to the maximum, MAQ of both, the share retried, the
processes the self-sizing guard flagged from their history (each a false alarm in a
replay unless the trace's own records show it), and the processes with 30 online tasks
or more that wasted more than under the maximum (beyond 0.005 GB-h: two processes held
at the 64 MiB floor by both waste the same). A last line counts the runs that miss a goal.

The defaults are what leave-one-pipeline-out chose in issue 19 (``lopo.GRID``); nothing
here tunes them.
"""

from __future__ import annotations

import argparse
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from seqera_sidecar.evaluate import Sample, Score, evaluate, split
from seqera_sidecar.trace import read_trace

__all__ = ["main"]

_SAME = 0.005  # GB-h: both at the floor, or rounding


def _run(work: tuple[str, int, Sample | None]) -> str:
    path, seed, sample = work
    records = read_trace(path)
    maximum: Score = evaluate(records, seed, "max", sample)
    ours: Score = evaluate(records, seed, "predictive", sample)
    online = Counter(task.process for task in split(records, seed, sample)[1])
    worse = [
        f"{p.rsplit(':', 1)[-1]} {ours.by_process.get(p, 0):.2f}>{maximum.by_process.get(p, 0):.2f}"
        for p, n in online.items()
        if n >= 30 and ours.by_process.get(p, 0) > maximum.by_process.get(p, 0) + _SAME
    ]
    name = Path(path).name.split(".")[0]
    relative = ours.wasted_gbh / max(maximum.wasted_gbh, 1e-9)
    return (f"| {name} | {seed} | {ours.tasks} | {maximum.wasted_gbh:.2f} | "
            f"{ours.wasted_gbh:.2f} | {relative:.3f} | {maximum.maq:.3f} | {ours.maq:.3f} | "
            f"{ours.retry_share:.2%} | {', '.join(ours.flagged) or '-'} | "
            f"{'; '.join(worse) or '-'} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--sample", help="HISTORY,ONLINE per process (as evaluate's)")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    sample = None
    if args.sample:
        history, online = (int(x) for x in args.sample.split(","))
        sample = Sample(history, online)
    work = [(path, seed, sample) for path in args.traces for seed in args.seed or [0]]
    print(
        "| trace | seed | online tasks | max GB-h | ours GB-h | relative | max MAQ | MAQ "
        "| retried | flagged | processes (>= 30 online) worse than max |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for row in pool.map(_run, work):
                print(row, flush=True)
    else:
        for w in work:
            print(_run(w), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
