"""Resolve latency of a real ``seqera-sidecar serve`` on loopback, at a fixed request rate.

``uv run python benchmarks/sidecar_resolve.py [--rate 300] [--seconds 10] [--tasks N]
[--resolver predictive|max]``: starts the sidecar on a free port of 127.0.0.1 with a
history fed the recorded nf-core/chipseq weblog stream (2,938 tasks, 57 processes), and
with ``--tasks N`` as many more attempts of the same processes written to the history
first (their input sizes spread over 1 MB-10 GB), then sends resolve requests at ``--rate`` per
second for ``--seconds`` (open loop: a request is sent on schedule whether or not the
previous one answered) and reports p50/p99/max latency, for single requests and for
batches of 100, after 2 s of the same load to warm up. Latency is measured by the client
(a bare HTTP/1.1 one, so as not to measure httpx) and by the sidecar's own histogram
(``server p99 ≤ ms``: the bucket bound under which 99 % fell). The sidecar is stopped at
the end.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from seqera_core.history import TaskRecord, open_history

sys.path.insert(0, str(Path(__file__).parents[1]))
from _emit import Emitter, add_argument

from tests.seqera_sidecar.conftest import start_sidecar, stop_sidecar  # the tests' launcher

__all__ = ["main"]

WEBLOG = Path(__file__).parents[1] / "tests/seqera_sidecar/data/chipseq-weblog.jsonl.gz"


def _events() -> list[dict[str, object]]:
    with gzip.open(WEBLOG, "rt") as stream:
        return [json.loads(line) for line in stream]


class _Connection:
    """One keep-alive HTTP/1.1 connection that sends prepared requests.

    httpx costs about 1.5 ms of CPU per request, on the same two cores as the sidecar,
    which measured the client more than the server; this writes bytes and reads
    Content-Length bodies, nothing else.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def send(self, request: bytes) -> int:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length:
            await self.reader.readexactly(length)
        return status


def _request(host: str, path: str, body: object) -> bytes:
    payload = json.dumps(body).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload


async def _load(
    url: str, bodies: list[tuple[str, object]], rate: float, seconds: float, connections: int = 8
) -> dict[str, float]:
    """Send ``rate`` requests per second, open loop, over ``connections`` kept alive.

    A request's latency runs from when it is due to be sent (up to the client's own timer
    slack) to its last byte, waiting for a free connection included: a stalled server
    holds later requests back and they count, rather than being sent late and timed short.
    """
    host, _, port = url.removeprefix("http://").partition(":")
    prepared = [_request(f"{host}:{port}", path, body) for path, body in bodies]
    pool: asyncio.Queue[_Connection] = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(_Connection(*await asyncio.open_connection(host, int(port))))
    latencies: list[float] = []
    errors = 0
    total = int(rate * seconds)

    async def one(index: int) -> None:
        nonlocal errors
        started = time.perf_counter()
        connection = await pool.get()
        try:
            status = await connection.send(prepared[index % len(prepared)])
        finally:
            pool.put_nowait(connection)
        latencies.append(time.perf_counter() - started)
        if status not in (200, 204):
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
    while not pool.empty():
        pool.get_nowait().writer.close()
    latencies.sort()
    return {
        "requests": total,
        "achieved/s": round(total / elapsed, 1),
        "p50 ms": round(statistics.median(latencies) * 1000, 2),
        "p99 ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "max ms": round(latencies[-1] * 1000, 2),
        "errors": errors,
    }


def _served(url: str, endpoint: str) -> dict[float, float]:
    """The sidecar's own latency histogram for ``endpoint``: cumulative count per bound."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {
        float(sample.labels["le"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.endswith("_bucket") and sample.labels.get("endpoint") == endpoint
    }


def _p99(before: dict[float, float], after: dict[float, float]) -> float:
    """The smallest histogram bound (ms) under which 99 % of the requests between fell."""
    total = after[math.inf] - before.get(math.inf, 0)
    for bound in sorted(after):
        if after[bound] - before.get(bound, 0) >= 0.99 * total:
            return bound * 1000
    return math.inf


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
    add_argument(parser)
    args = parser.parse_args(argv)
    emit = Emitter("sidecar_resolve", args.results)
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
            first = (time.perf_counter() - started) * 1000
            print(
                f"history of {args.tasks + 2938} attempts; first resolve (loads it) {first:.0f} ms",
                flush=True,
            )
            setup = {"history": args.tasks + 2938, "resolver": args.resolver}
            emit.figure("first resolve", round(first, 1), "ms", **setup)
            rows = []
            for name, endpoint, bodies, rate in (
                ("single", "resolve", single, args.rate),
                ("batch of 100", "batch", batch, args.rate / 10),
            ):
                # Warm the connections and every process's first answer; not counted.
                asyncio.run(_load(served.url, bodies, rate, 2))
                before = _served(served.url, endpoint)
                result = asyncio.run(_load(served.url, bodies, rate, args.seconds))
                server = _p99(before, _served(served.url, endpoint))
                rows.append({"kind": name, "target/s": rate, **result, "server p99 ≤ ms": server})
                print(rows[-1], flush=True)
                case = {**setup, "kind": name, "rate": rate, "seconds": args.seconds}
                for key, unit in (("p50 ms", "ms"), ("p99 ms", "ms"), ("max ms", "ms"),
                                  ("server p99 ≤ ms", "ms"), ("achieved/s", "requests/s"),
                                  ("errors", "requests")):  # fmt: skip
                    emit.figure(
                        key.replace(" ms", "").replace("/s", ""), rows[-1][key], unit, **case
                    )
        finally:
            stop_sidecar(process)
    header = list(rows[0])
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in header) + " |")
    emit.close()
    return 0 if all(row["errors"] == 0 for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
