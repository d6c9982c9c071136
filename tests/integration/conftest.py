"""A real one-node Slurm for the integration tests, started once per session by slurm/slurm-up.sh.

The cluster is tuned to make the interesting cases quick: finished jobs leave ``squeue``
after ``MinJobAge=2`` s (about 10 s in practice: slurmctld purges on a timer), ``--mem`` is
enforced (``CR_Core_Memory`` with ``OverMemoryKill``, sampled every second), and a job over
its time limit gets ``KillWait=2`` s between SIGTERM and SIGKILL. It advertises 16 CPUs so
many small jobs run at once on a small machine, declares no TmpDisk (Slurm's default) and
a count-only ``tmpspace`` gres. Finished jobs are recorded by
``jobcomp/filetxt`` (``sacct -c``); there is no slurmdbd.

A second cluster, ``slurm_accounting``, started only for the tests that use it, keeps
accounting in slurmdbd on MariaDB (``WITH_DBD=1``; every port its own), so ``sacct``
reports what jobs used.

On a developer machine the tests skip, with the reason, when Slurm cannot start; with
``CI=true`` that is a failure.

The moto[server] emulator the ECS and AWS Batch suites run against is here too
(``moto_server``, ``aws``): one server for both, each suite's conftest sets up its service.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest

from seqera_core.backends import Backend, JobHandle, JobStatus
from tests.conftest import require

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SCRIPT = Path(__file__).parent / "slurm" / "slurm-up.sh"
CONF_LINES = (
    # a count-only generic resource, for the gres key (gres=tmpspace:10G)
    "GresTypes=tmpspace",
    "JobAcctGatherParams=OverMemoryKill",
    "JobAcctGatherFrequency=task=1",
    "DefMemPerCPU=64",
    "KillWait=2",
)


def unavailable(message: str) -> None:
    """Skip on a developer machine, fail under CI: a component that cannot start is a failure."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@attrs.frozen
class SlurmCluster:
    """A running cluster: its directory, slurm.conf and the environment its clients need."""

    directory: Path
    conf: Path

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm clients (and the Torque wrappers)."""
        return {"SLURM_CONF": str(self.conf)}

    def _pid(self) -> int | None:
        try:
            return int((self.directory / "run" / "slurmctld.pid").read_text())
        except (OSError, ValueError):
            return None

    def stop_controller(self) -> None:
        """Stop slurmctld (only the one this cluster started, by its PID file)."""
        pid = self._pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        raise AssertionError("slurmctld did not stop")

    def start_controller(self) -> None:
        """Start slurmctld again; it recovers queued jobs from its state directory."""
        subprocess.run(["slurmctld", "-f", str(self.conf)], check=True, timeout=60)


def _free_port() -> int:
    # Ports of our own, so a cluster someone else runs on 6817/6818 is left alone.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(directory: Path, **knobs: str) -> SlurmCluster:
    if os.geteuid() != 0:
        unavailable("starting Slurm daemons needs root")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        unavailable("Slurm is not installed and apt-get is not available to install it")
    env = {
        **os.environ,
        "SLURM_DIR": str(directory),
        "MIN_JOB_AGE": "2",
        "SLURM_CPUS": "16",
        "SELECT_PARAMS": "CR_Core_Memory",
        "EXTRA_CONF": "\n".join(CONF_LINES),
        "SLURMCTLD_PORT": str(_free_port()),
        "SLURMD_PORT": str(_free_port()),
        # no TmpDisk on the node (Slurm's default): --tmp is refused there
        "NODE_EXTRA": "Gres=tmpspace:10G",
        **knobs,
    }
    try:
        done = subprocess.run(
            ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=900
        )
    except subprocess.TimeoutExpired:
        unavailable("slurm-up.sh did not finish in 15 minutes")
        raise  # not reached
    if done.returncode != 0:
        log = directory / "log" / "slurmctld.log"
        tail = log.read_text()[-2000:] if log.exists() else ""
        unavailable(
            f"slurm-up.sh failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
            f"{done.stderr[-2000:]}\n{tail}"
        )
    return SlurmCluster(directory, directory / "slurm.conf")


def _down(directory: Path) -> None:
    """Stop the daemons slurm-up.sh started for ``directory`` (munged only if it did)."""
    subprocess.run(
        ["bash", str(SCRIPT), "down"],
        env={**os.environ, "SLURM_DIR": str(directory)},
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A one-node Slurm, SLURM_CONF set for the whole session, every daemon stopped after."""
    directory = tmp_path_factory.mktemp("slurm")
    try:
        cluster = _start(directory)
        with pytest.MonkeyPatch.context() as patch:
            # Commands run by the backends, and srun inside jobs, find the cluster this way.
            patch.setenv("SLURM_CONF", str(cluster.conf))
            yield cluster
    finally:
        _down(directory)


@pytest.fixture(scope="session")
def slurm_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Two slurmd on this machine (Debian's Slurm is built with multiple-slurmd), nodes
    ``n1`` and ``n2`` with 2 CPUs each, for real two-node jobs; clients reach it through
    ``cluster.env``. Started only for the tests that use it."""
    directory = tmp_path_factory.mktemp("slurm-pair")
    try:
        ports = f"{_free_port()} {_free_port()}"
        yield _start(directory, PAIR_PORTS=ports, SLURM_CPUS="2", NODE_EXTRA="")
    finally:
        _down(directory)


def _wait_for_accounting(cluster: SlurmCluster, limit: float = 120) -> None:
    # A fresh slurmctld first registers its cluster with slurmdbd, holding job records
    # back until then: wait until slurm-up.sh's smoke job (a --wrap, job 1) is recorded.
    deadline = time.monotonic() + limit
    argv = ["sacct", "-n", "-P", "-X", "-j", "1", "-o", "JobName,State"]
    env = {**os.environ, **cluster.env}
    while time.monotonic() < deadline:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if done.stdout.strip() == "wrap|COMPLETED":
            return
        time.sleep(0.5)
    unavailable(f"slurmdbd did not record the smoke job within {limit} s: {done.stdout!r}")


@pytest.fixture(scope="session")
def slurm_accounting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A one-node Slurm with slurmdbd accounting (``sacct`` MaxRSS and Elapsed); clients
    reach it through ``cluster.env``, not the session's SLURM_CONF."""
    directory = tmp_path_factory.mktemp("slurm-accounting")
    try:
        # The linux gatherer samples: every second, or a short job would show no MaxRSS.
        cluster = _start(
            directory,
            WITH_DBD="1",
            MIN_JOB_AGE="300",
            SLURM_CPUS="4",
            SELECT_PARAMS="CR_Core",
            EXTRA_CONF="JobAcctGatherFrequency=task=1",
            NODE_EXTRA="",
            DBD_PORT=str(_free_port()),
            MARIADB_PORT=str(_free_port()),
        )
        _wait_for_accounting(cluster)
        yield cluster
    finally:
        _down(directory)


def wait(
    backend: Backend, handles: Sequence[JobHandle], limit: float = 180, every: float = 0.5
) -> list[JobStatus]:
    """Poll until every job has finished; fail after ``limit`` seconds with their states."""
    deadline = time.monotonic() + limit
    while True:
        statuses = backend.poll(handles)
        if all(s.state.finished for s in statuses):
            return statuses
        assert time.monotonic() < deadline, f"not finished after {limit} s: {statuses}"
        time.sleep(every)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Emulator]:
    """moto's server on 127.0.0.1 (ECS, AWS Batch, S3, CloudWatch Logs), stopped at the end
    of the session."""
    require("moto.server", "the ECS and AWS Batch tests run against the moto[server] emulator")
    from tests.integration.ecs.emulator import moto_ecs

    with moto_ecs() as emulator:
        yield emulator


@pytest.fixture
def aws(moto_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """The server, which boto3 reaches through the environment alone (no profile or
    credentials file of this machine's in the way)."""
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in moto_server.env.items():
        monkeypatch.setenv(name, value)
    return moto_server
