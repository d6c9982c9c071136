"""A real PostgreSQL server on 127.0.0.1 for the tests that need one (history, faults).

``initdb`` into a temporary directory, ``pg_ctl start`` on a free port, trust
authentication, no fsync (the data is thrown away). As root the server runs as the
``postgres`` user, since it refuses root. A machine without the server installs it with
apt when it can, as the Slurm fixture does; otherwise the test skips, or fails under CI.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from .conftest import IN_CI, require

__all__ = ["PostgresServer", "free_port", "postgres_server"]


def _unavailable(why: str) -> None:
    if IN_CI:
        pytest.fail(f"PostgreSQL cannot start: {why}")
    pytest.skip(f"PostgreSQL cannot start: {why}")


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def free_port() -> int:
    """A TCP port of 127.0.0.1 nobody listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@attrs.frozen
class PostgresServer:
    """A running server: its URL, and ``stop``/``start`` to take it away and back."""

    directory: Path
    port: int
    pg_ctl: str
    as_user: tuple[str, ...]

    @property
    def url(self) -> str:
        """The ``postgres`` database as the ``postgres`` superuser (trust: no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.directory / "data"), *args],
                       check=True, capture_output=True, timeout=120)  # fmt: skip

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        options = (f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off")  # fmt: skip
        self._ctl("-l", str(self.directory / "log"), "-w", "-t", "60", "-o", options, "start")

    def stop(self) -> None:
        """Stop it the way a restart does: ``-m fast`` ends every session, then exits."""
        self._ctl("-m", "fast", "-w", "stop")


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """Start a fresh server; stop it and remove its files on the way out."""
    require("psycopg", "the PostgreSQL history needs the postgresql extra")
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if (initdb is None or pg_ctl is None) and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "postgresql"],
        ):
            subprocess.run(argv, env=env, capture_output=True, timeout=900, check=False)
        initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        _unavailable("initdb/pg_ctl not found (apt-get install -y postgresql)")
    assert initdb is not None and pg_ctl is not None
    as_user: tuple[str, ...] = ()
    directory = Path(tempfile.mkdtemp(prefix="seqera-pg-"))
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(directory)
            _unavailable("running as root and there is no postgres user")
        os.chown(directory, account.pw_uid, account.pw_gid)
        as_user = ("runuser", "-u", "postgres", "--")
    server = PostgresServer(directory, free_port(), pg_ctl, as_user)
    try:
        subprocess.run([*as_user, initdb, "-D", str(directory / "data"), "-A", "trust",
                        "-U", "postgres", "--no-sync"],
                       check=True, capture_output=True, timeout=120)  # fmt: skip
        server.start()
    except (subprocess.SubprocessError, OSError) as exc:
        log = directory / "log"
        detail = log.read_text() if log.exists() else ""
        shutil.rmtree(directory, ignore_errors=True)
        _unavailable(f"{exc} {getattr(exc, 'stderr', b'')!r} {detail}")
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
