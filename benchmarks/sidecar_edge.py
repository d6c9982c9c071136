"""What a hostile or stuck request costs a real ``seqera-sidecar serve``: memory and /health.

``uv run python benchmarks/sidecar_edge.py [--mb 60] [--src DIR]``: starts the sidecar on
a free port of 127.0.0.1, then

1. posts a ``--mb`` MB JSON body to ``/v1/weblog`` while another thread asks ``/health``
   every 50 ms: the answer's status, the time it took, the sidecar's peak resident
   memory (``VmHWM``) before and after, and the slowest ``/health`` meanwhile;
2. holds a write lock on the history (another SQLite connection) and posts one weblog
   event, which waits for SQLite's 5 s busy timeout: the slowest ``/health`` meanwhile.

``--src`` runs the sidecar from another source tree (e.g. an export of an older
``packages/seqera-nextflow-sidecar/src``), to compare versions on one machine; numbers
taken on a loaded machine are noisy, compare them side by side.
"""

from __future__ import annotations

import argparse
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

EVENT = ('{"runName": "r", "runId": "1", "event": "process_completed", "trace": {"task_id": '
         '%d, "process": "P", "status": "COMPLETED", "exit": 0, "peak_rss": 1000}}')  # fmt: skip


def _peak(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class _Watch:
    """Asks /health every 50 ms in a thread; keeps the slowest answer."""

    def __init__(self, url: str) -> None:
        self.url, self.slowest, self.failed = url, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            started = time.monotonic()
            try:
                httpx.get(f"{self.url}/health", timeout=60)
            except httpx.HTTPError:
                self.failed += 1
            self.slowest = max(self.slowest, time.monotonic() - started)

    def __enter__(self) -> _Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=60)
    parser.add_argument("--src", help="a source tree to run the sidecar from instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = dict(os.environ)
        if args.src:
            env["PYTHONPATH"] = os.pathsep.join([args.src, env.get("PYTHONPATH", "")])
        history = Path(tmp) / "history.db"
        argv = [sys.executable, "-m", "seqera_sidecar", "serve", "--port", str(port),
                "--history", str(history)]  # fmt: skip
        process = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    httpx.get(f"{url}/health", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            count = args.mb * 2**20 // (len(EVENT) + 8)
            body = ("[" + ",".join(EVENT % n for n in range(count)) + "]").encode()
            before = _peak(process.pid)
            with _Watch(url) as watch:
                started = time.monotonic()
                answer = httpx.post(f"{url}/v1/weblog", content=body, timeout=600,
                                    headers={"Content-Type": "application/json"})  # fmt: skip
                took = time.monotonic() - started
            print(f"{len(body) / 2**20:.0f} MB body: {answer.status_code} in {took:.2f} s; "
                  f"sidecar peak RSS {before / 2**20:.0f} -> {_peak(process.pid) / 2**20:.0f} MB;"
                  f" slowest /health meanwhile {watch.slowest * 1000:.0f} ms")  # fmt: skip
            holder = sqlite3.connect(history, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            with _Watch(url) as watch:
                started = time.monotonic()
                answer = httpx.post(f"{url}/v1/weblog", content=EVENT % 1, timeout=60,
                                    headers={"Content-Type": "application/json"})  # fmt: skip
                took = time.monotonic() - started
            holder.execute("ROLLBACK")
            print(
                f"history locked: weblog {answer.status_code} in {took:.2f} s; "
                f"slowest /health meanwhile {watch.slowest * 1000:.0f} ms"
            )
        finally:
            process.terminate()
            process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
