"""What a process's first resolve costs the right-sizer: loading and fitting its windows.

``uv run python benchmarks/rightsize_first.py TRACE.csv [...] [--repeat N]``: each trace
recorded whole into an in-memory history; per repeat, a fresh
:class:`~seqera_core.resolvers.PredictiveResolver` (its construction reads the summaries)
and one first-attempt resolve of each process in turn, timed alone (the read of the
process's windows, the fits of its models, and the safety net's rehearsal of its last
runs), beside a second resolve of the same request (warm: the fits cached), in CPU
seconds of this process (wall seconds on a shared machine are mostly the queue for the
CPU). Prints, per
trace, the median and 90th percentile over processes of each process's median first
resolve, and their sum: what the first task of each process of a run waits.

It compares nothing itself: run it at two commits (or with the net's rehearsal off) and
read the two side by side. Nothing is written; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from seqera_core.history import open_history
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import PredictiveResolver
from seqera_sidecar.trace import read_trace

__all__ = ["main"]


def _time(path: str, repeat: int) -> tuple[str, int, list[float], list[float]]:
    records = read_trace(path)
    history = open_history(":memory:")
    history.record(records)
    requests = {}
    for r in records:  # each process's last task stands for its next one
        requests[r.process] = ResourceRequest(cpus=r.cpus, memory=r.memory, time=r.time or None,
                                              process=r.process, input_bytes=r.input_bytes,
                                              container=r.container)  # fmt: skip
    cold: dict[str, list[float]] = {p: [] for p in requests}
    warm: dict[str, list[float]] = {p: [] for p in requests}
    for _ in range(repeat):
        resolver = PredictiveResolver(history)
        for process, request in requests.items():
            start = time.process_time()
            resolver.resolve(request)
            middle = time.process_time()
            resolver.resolve(request)
            cold[process].append(middle - start)
            warm[process].append(time.process_time() - middle)
    history.close()
    name = Path(path).name.split(".")[0]
    return (name, len(records), [statistics.median(v) for v in cold.values()],
            [statistics.median(v) for v in warm.values()])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"load {os.getloadavg()[0]:.1f}, {args.repeat} repeats")
    print("| trace | rows | processes | first resolve CPU median ms | p90 ms | sum s "
          "| warm median ms |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for path in args.traces:
        name, rows, cold, warm = _time(path, args.repeat)
        cold.sort()
        p90 = cold[min(len(cold) - 1, int(0.9 * len(cold)))]
        print(f"| {name} | {rows} | {len(cold)} | {1e3 * statistics.median(cold):.1f} | "
              f"{1e3 * p90:.1f} | {sum(cold):.2f} | {1e3 * statistics.median(warm):.2f} |",
              flush=True)  # fmt: skip
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
