"""Resolve latency of a real ``seqera-sidecar serve`` on loopback, at a fixed request rate.

``uv run python benchmarks/sidecar_resolve.py [--rate 300] [--seconds 10] [--tasks N]
[--resolver predictive|max]``: starts the sidecar on a free port of 127.0.0.1 with a
history fed the recorded nf-core/chipseq weblog stream (2,938 tasks, 57 processes), and
with ``--tasks N`` as many more attempts of the same processes written to the history
first (their input sizes spread over 1 MB-10 GB), then sends resolve requests at ``--rate`` per
second for ``--seconds`` (open loop: a request is sent on schedule whether or not the
previous one answered) and reports p50/p99/max latency, for single requests and for
batches of 100. The sidecar is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from seqera_core.history import TaskRecord, open_history

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.seqera_sidecar.conftest import start_sidecar, stop_sidecar  # the tests' launcher

__all__ = ["main"]

WEBLOG = Path(__file__).parents[1] / "tests/seqera_sidecar/data/chipseq-weblog.jsonl.gz"


def _events() -> list[dict[str, object]]:
    with gzip.open(WEBLOG, "rt") as stream:
        return [json.loads(line) for line in stream]


async def _load(
    url: str, bodies: list[tuple[str, object]], rate: float, seconds: float
) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    total = int(rate * seconds)
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=10) as client:

        async def one(index: int) -> None:
            nonlocal errors
            path, body = bodies[index % len(bodies)]
            started = time.perf_counter()
            response = await client.post(path, json=body)
            latencies.append(time.perf_counter() - started)
            if response.status_code not in (200, 204):
                errors += 1

        start = time.perf_counter()
        tasks = []
        for index in range(total):
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(index)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "requests": total,
        "achieved/s": round(total / elapsed, 1),
        "p50 ms": round(statistics.median(latencies) * 1000, 2),
        "p99 ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "max ms": round(latencies[-1] * 1000, 2),
        "errors": errors,
    }


def _synthetic(path: Path, processes: list[str], tasks: int, rng: random.Random) -> None:
    history = open_history(path)
    for start in range(0, tasks, 10_000):
        history.record(
            TaskRecord("synthetic", str(i), processes[i % len(processes)], True,
                       peak_memory=rng.randrange(10**7, 10**10), realtime=rng.uniform(1, 3600),
                       input_bytes=rng.randrange(10**6, 10**10), cpu_percent=100.0)
            for i in range(start, min(start + 10_000, tasks))
        )  # fmt: skip
    history.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=300)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--tasks", type=int, default=0, help="extra history rows")
    parser.add_argument("--resolver", choices=("predictive", "max"), default="predictive")
    args = parser.parse_args(argv)
    events = _events()
    processes = sorted({e["trace"]["process"] for e in events if "trace" in e})  # type: ignore[index]
    rng = random.Random(0)
    single = [("/v1/resources/resolve", {"process": p, "memory_bytes": 2**30, "cpus": 2,
                                          "input_bytes": rng.randrange(10**6, 10**10)})
              for p in processes for _ in range(5)]  # fmt: skip
    batch = [("/v1/resources/resolve/batch",
              {"requests": [single[(i + k) % len(single)][1] for k in range(100)]})
             for i in range(len(single))]  # fmt: skip
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "history.db"
        _synthetic(path, processes, args.tasks, rng)
        process, served = start_sidecar(path, None, "--resolver", args.resolver)
        try:
            httpx.post(f"{served.url}/v1/weblog", json=events, timeout=120).raise_for_status()
            # The first resolve reads the whole history into the models; time it apart.
            started = time.perf_counter()
            httpx.post(f"{served.url}{single[0][0]}", json=single[0][1], timeout=120)
            print(
                f"history of {args.tasks + 2938} attempts; first resolve (loads it) "
                f"{(time.perf_counter() - started) * 1000:.0f} ms",
                flush=True,
            )
            rows = []
            for name, bodies, rate in (("single", single, args.rate),
                                       ("batch of 100", batch, args.rate / 10)):  # fmt: skip
                result = asyncio.run(_load(served.url, bodies, rate, args.seconds))
                rows.append({"kind": name, "target/s": rate, **result})
                print(rows[-1], flush=True)
        finally:
            stop_sidecar(process)
    header = list(rows[0])
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in header) + " |")
    return 0 if all(row["errors"] == 0 for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
