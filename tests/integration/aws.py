"""What the ECS and AWS Batch suites share: the test's part as the container, and each
engine's run (``seqera run``, Snakemake, ``cwltool-seqera``) against the emulator.

moto runs no containers. A :class:`Player` watches the emulated service and, for every job
it starts, does that job's part (``act``: run its command as a container would, write its
output to the emulated bucket, or nothing) and ends it with the exit code that gives, as
the service would report it. Both emulators (ecs/emulator.py, awsbatch/emulator.py) offer
the verbs it needs (:class:`Service`). The emulator fixtures themselves are in conftest.py
(``moto_server``, ``aws``) and each suite's own conftest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import boto3
import pytest

from seqera_core.backends import Backend, JobHandle, JobSpec, JobStatus
from seqera_core.models import ResourceRequest
from tests.conftest import IN_CI

__all__ = [
    "BUCKET",
    "IMAGE",
    "Isolated",
    "Player",
    "Service",
    "cwl_on_s3",
    "isolation_works",
    "job",
    "polled",
    "sent",
    "seqera",
    "snakemake_on_s3",
]

IMAGE = "public.ecr.aws/docker/library/ubuntu:24.04"
BUCKET = "seqera-cwl"
_CWL_DATA = Path(__file__).parents[1] / "cwltool_seqera" / "data"
_CWLTOOL_SEQERA = str(Path(sys.executable).parent / "cwltool-seqera")
# Empty tmpfs over the test's directory and /tmp: a container's view of this machine.
_ISOLATE = 'mount -t tmpfs seqera "$0" && mount -t tmpfs seqera /tmp && exec "$@"'
_SNAKEFILE = """
rule all:
    input: "greeting.txt"

rule greet:
    output: "greeting.txt"
    threads: 2
    resources: mem_mb=3000, runtime=20
    shell: "echo hello > {output}"
"""


class Service(Protocol):
    """What a test playing the container needs of an emulated service."""

    url: str

    @property
    def env(self) -> dict[str, str]:
        """What boto3 (and a subprocess) needs to reach the emulator."""

    def hold(self) -> None:
        """Keep jobs started from now on running until :meth:`end` ends them."""

    def started(self) -> list[Any]:
        """moto's records of the jobs the service started, oldest first."""

    def command(self, job: Any) -> list[str]:
        """The command a job's container runs."""

    def end(self, job: Any, exit_code: int, reason: str | None = None) -> None:
        """End a held job as the service would, its container having exited so."""


class Player(threading.Thread):
    """Plays the container of every job the service starts while in its ``with`` block:
    ``act`` does the job's part given its command and returns its exit code; the job then
    ends with that code (and ``reason``). ``jobs``: moto's records, in the order seen."""

    def __init__(
        self, service: Service, act: Callable[[list[str]], int], reason: str | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.service, self.act, self.reason = service, act, reason
        self.jobs: list[Any] = []
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            for job in self.service.started():
                if any(job is seen for seen in self.jobs):
                    continue
                self.jobs.append(job)
                self.service.end(job, self.act(self.service.command(job)), self.reason)
            time.sleep(0.05)

    def __enter__(self) -> Player:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join()


def job(name: str = "job", *command: str, **request: Any) -> JobSpec:
    """A job running ``command`` (``echo NAME`` by default) in ``IMAGE`` unless told."""
    request.setdefault("container", IMAGE)
    return JobSpec(name, command or ("echo", name), ResourceRequest(**request))


def polled(backend: Backend, handles: list[JobHandle], polls: int = 20) -> list[JobStatus]:
    """Poll until every job has finished; fail after ``polls`` polls with their states."""
    for _ in range(polls):
        statuses = backend.poll(handles)
        if all(s.state.finished for s in statuses):
            return statuses
    raise AssertionError(f"not finished after {polls} polls: {statuses}")


def sent(client: Any, operation: str) -> list[dict[str, Any]]:
    """Every ``operation`` body a boto3 client sends, as botocore is about to serialise it."""
    bodies: list[dict[str, Any]] = []
    service = client.meta.service_model.service_id.hyphenize()

    def hook(params: dict[str, Any], **_: Any) -> None:
        bodies.append(params)

    client.meta.events.register(f"provide-client-params.{service}.{operation}", hook)
    return bodies


def seqera(
    cwd: Path, *argv: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """``seqera ARGV`` as a user types it, with ``env`` added to this environment."""
    return subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", *argv],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, **env}, timeout=timeout,
        check=False,
    )  # fmt: skip


def snakemake_on_s3(
    service: Service, tmp_path: Path, *flags: str
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """A one-rule workflow (rule ``greet``: 2 threads, 3000 MB, 20 min) through
    ``snakemake --executor seqera`` and ``flags`` (the backend's), its files in an emulated
    S3 bucket; playing the job, the test writes the rule's output there as the job would.
    The run, and the jobs the service started."""
    service.hold()
    bucket = "seqera-snakemake"
    s3 = boto3.client("s3", endpoint_url=service.url)
    s3.create_bucket(Bucket=bucket)
    (tmp_path / "Snakefile").write_text(textwrap.dedent(_SNAKEFILE))

    def greet(_: list[str]) -> int:
        s3.put_object(Bucket=bucket, Key="run/greeting.txt", Body=b"hello\n")
        return 0

    env = {**os.environ, **service.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    with Player(service, greet) as player:
        done = subprocess.run(
            [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "2", *flags,
             "--seconds-between-status-checks", "1",
             "--shared-fs-usage", "none", "--default-storage-provider", "s3",
             "--default-storage-prefix", f"s3://{bucket}/run",
             "--storage-s3-endpoint-url", service.url,
             "--storage-s3-access-key", "testing", "--storage-s3-secret-key", "testing"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    return done, player.jobs


def isolation_works() -> None:
    """Skip (fail under CI) where an unprivileged mount namespace cannot be made."""
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs seqera /tmp"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        message = f"unshare -rm with a tmpfs mount is not permitted here: {probe.stderr}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


class Isolated:
    """A job's part as its container plays it: its command run in a fresh mount namespace
    where ``/tmp`` and ``hidden`` (the test's directory) are empty tmpfs mounts, so nothing
    of this machine's staging is visible. ``results``: every run, in order."""

    def __init__(self, hidden: Path) -> None:
        self.hidden = hidden
        self.results: list[subprocess.CompletedProcess[str]] = []

    def __call__(self, command: list[str]) -> int:
        done = subprocess.run(
            ["unshare", "-rm", "sh", "-c", _ISOLATE, str(self.hidden), *command],
            cwd="/", capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        self.results.append(done)
        return done.returncode


def cwl_on_s3(
    service: Service, tmp_path: Path, player: Player, executor: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    """``cwltool-seqera --executor EXECUTOR FLAGS`` on ecs_count.cwl (a file and a
    directory in, labelled ``EXECUTOR``), its files through the emulated ``BUCKET``, while
    ``player`` plays the jobs."""
    service.hold()  # each job runs until the player ends it
    boto3.client("s3", endpoint_url=service.url).create_bucket(Bucket=BUCKET)
    (tmp_path / "text.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "dir").mkdir()
    for name in ("a.txt", "b.txt"):
        (tmp_path / "dir" / name).write_text(name)
    order = tmp_path / "job.json"
    order.write_text(json.dumps({
        "text": {"class": "File", "path": "text.txt"},
        "dir": {"class": "Directory", "path": "dir"},
        "label": executor,
    }))  # fmt: skip
    env = {**os.environ, **service.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    with player:
        return subprocess.run(
            [_CWLTOOL_SEQERA, "--executor", executor, "--seqera-s3-prefix", f"s3://{BUCKET}/runs",
             *flags, "--seqera-poll-interval", "0.2",
             "--tmpdir-prefix", f"{tmp_path}/tmp/", "--tmp-outdir-prefix", f"{tmp_path}/outs/",
             "--outdir", str(tmp_path / "out"), str(_CWL_DATA / "ecs_count.cwl"), str(order)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
