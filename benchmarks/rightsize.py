"""In-process cost of the predictive resolver over a large history, through the chain.

``uv run python benchmarks/rightsize.py [--tasks 100000] [--processes 60]``: writes
``--tasks`` synthetic attempts to an SQLite history in a temporary directory, times the
first refresh (reading them all into the models), then the p50/p99 of one ``resolve()``
through the resolver chain (as the sidecar's endpoint calls it) and of a batch of 100,
for the predictive resolver and the per-process maximum.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from seqera_core.history import TaskRecord, open_history
from seqera_core.models import ResourceRequest
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import MaximumResolver, PredictiveResolver, Resolver, resolve

__all__ = ["main"]


def _quantiles(samples: list[float]) -> str:
    samples.sort()
    p50, p99 = samples[len(samples) // 2], samples[int(len(samples) * 0.99) - 1]
    return f"p50 {p50 * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=60)
    args = parser.parse_args(argv)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as directory:
        history = open_history(Path(directory) / "history.db")
        history.record(
            TaskRecord("bench", str(i), f"P{i % args.processes}", True,
                       peak_memory=rng.randrange(10**7, 10**10), realtime=rng.uniform(1, 3600),
                       input_bytes=rng.randrange(10**6, 10**10), cpu_percent=100.0)
            for i in range(args.tasks)
        )  # fmt: skip
        requests = [
            ResourceRequest(memory=2**30, process=f"P{i % args.processes}",
                            input_bytes=rng.randrange(10**6, 10**10))
            for i in range(2000)
        ]  # fmt: skip
        for name, build in (("predictive", PredictiveResolver), ("max", MaximumResolver)):
            started = time.perf_counter()
            resolver: Resolver = build(history)  # the predictive one reads the history here
            resolve(requests[0], [resolver], defaults=DEFAULTS)
            first = time.perf_counter() - started
            single = []
            for request in requests:
                started = time.perf_counter()
                resolve(request, [resolver], defaults=DEFAULTS)
                single.append(time.perf_counter() - started)
            batch = []
            for start in range(0, 2000, 100):
                started = time.perf_counter()
                for request in requests[start : start + 100]:
                    resolve(request, [resolver], defaults=DEFAULTS)
                batch.append(time.perf_counter() - started)
            print(f"{name}: {args.tasks} attempts; built + first resolve {first * 1000:.0f} ms; "
                  f"single {_quantiles(single)}; batch of 100 {_quantiles(batch)}")  # fmt: skip
        history.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
