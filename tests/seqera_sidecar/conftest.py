"""A real sidecar process on 127.0.0.1 for the tests that need one, and the recorded stream."""

from __future__ import annotations

import gzip
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from attrs import frozen

WEBLOG = Path(__file__).parent / "data" / "chipseq-weblog.jsonl.gz"


def recorded_events() -> list[dict[str, Any]]:
    """The weblog stream of a real nf-core/chipseq run (see data/build_weblog.py)."""
    with gzip.open(WEBLOG, "rt") as stream:
        return [json.loads(line) for line in stream]


def expected_peaks() -> dict[str, int]:
    """The largest peak_rss of each process's successful tasks, read from the stream."""
    peaks: dict[str, int] = {}
    for document in recorded_events():
        trace = document.get("trace", {})
        if document["event"] == "process_completed" and trace.get("status") == "COMPLETED":
            name = trace["process"]
            peaks[name] = max(peaks.get(name, 0), trace.get("peak_rss", 0))
    return peaks


@frozen
class Served:
    """A running ``seqera-sidecar serve``: its URL and token."""

    url: str
    token: str | None
    history: Path | None

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header, when it has a token."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def client(self) -> httpx.Client:
        """An HTTP client for it, with its token."""
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=30)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_sidecar(
    history: Path | None,
    token: str | None = None,
    *extra: str,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    nofile: int | None = None,
) -> tuple[subprocess.Popen[str], Served]:
    """Start ``seqera-sidecar serve`` (in ``cwd``, with ``environ``, by default this
    process's, and at most ``nofile`` open descriptors when given) and wait until /health
    answers. Without ``history`` it comes from seqera config, as for a user."""
    port = _free_port()
    where = [] if history is None else ["--history", str(history)]
    argv = [sys.executable, "-m", "seqera_sidecar", "serve", "--port", str(port),
            *where, *extra]  # fmt: skip
    base = os.environ if environ is None else environ
    env = {k: v for k, v in base.items() if k != "SEQERA_SIDECAR_TOKEN"}
    if token:
        env["SEQERA_SIDECAR_TOKEN"] = token  # not --token: that shows in ps

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                               preexec_fn=limit if nofile is not None else None)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"sidecar exited: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, Served(url, token, history)
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("sidecar did not answer /health within 60 s")


def stop_sidecar(process: subprocess.Popen[str]) -> None:
    """Stop it as a service manager would (SIGTERM), then make sure it is gone."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A sidecar with a token, stopped by the test that started it."""
    process, info = start_sidecar(tmp_path / "history.db", token="s3cret")
    try:
        yield info
    finally:
        stop_sidecar(process)
