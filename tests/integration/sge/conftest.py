"""A real one-node Son of Grid Engine for the Grid Engine tests, started once per session
by sge-up.sh (this folder's copy of the recipe; ports of its own, so it runs beside the
Slurm clusters and anyone else's cell).

The cell is tuned to make the interesting cases quick: the scheduler runs every second,
accounting is written the moment a job ends (``accounting_flush_time=00:00:00``), the
host has 4 slots and a parallel environment ``smp`` of 4. Its packages are downloaded
once (``apt-get download``) and unpacked into a cache, never installed: Debian's
``gridengine-client`` and ``slurm-wlm-torque`` both own ``/usr/bin/qsub``.

On a developer machine the tests skip, with the reason, when Grid Engine cannot start;
with ``CI=true`` that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from ..conftest import unavailable

SCRIPT = Path(__file__).parent / "sge-up.sh"


@attrs.frozen
class SgeCell:
    """A running cell: its directory and the environment its clients need."""

    directory: Path
    env: dict[str, str]

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """A Grid Engine command (qacct, qstat, ...) against this cell."""
        return subprocess.run(
            argv, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=60
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _settings(directory: Path) -> dict[str, str]:
    # settings.sh: "export A=1 B=2 ..." lines, and PATH with the binaries first
    env: dict[str, str] = {}
    for line in (directory / "sge.env").read_text().splitlines():
        for word in line.removeprefix("export ").split():
            name, _, value = word.partition("=")
            if name != "PATH":
                env[name] = value
    env["PATH"] = f"{env['SGE_BIN']}:{os.environ.get('PATH', '')}"
    return env


@pytest.fixture(scope="session")
def sge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SgeCell]:
    """A one-node Grid Engine cell, its daemons stopped after the session."""
    if os.geteuid() != 0:
        unavailable("starting Grid Engine daemons needs root")
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        unavailable("Grid Engine comes from Debian's packages: apt-get and dpkg are needed")
    directory = tmp_path_factory.mktemp("sge")
    env = {
        **os.environ,
        "SGE_DIR": str(directory),
        "SGE_QMASTER_PORT": str(_free_port()),
        "SGE_EXECD_PORT": str(_free_port()),
    }
    try:
        try:
            done = subprocess.run(
                ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=900
            )
        except subprocess.TimeoutExpired:
            unavailable("sge-up.sh did not finish in 15 minutes")
        if done.returncode != 0:
            unavailable(f"sge-up.sh failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
                        f"{done.stderr[-2000:]}")  # fmt: skip
        yield SgeCell(directory, _settings(directory))
    finally:
        subprocess.run(["bash", str(SCRIPT), "down"], env=env, capture_output=True,
                       timeout=120, check=False)  # fmt: skip
