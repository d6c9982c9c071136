"""What a local job leaves on disk about its leader, for a backend that re-adopts it.

Written by three hands, read by one (``_records``): the backend (the leader's ``pid``
line, right after it spawns it), the ``sh`` wrapper of a job started as a new process
(its ``exit`` file, ``_records.wrap``), and, for a job started as a fork, the fork server
(``_forkserver``: the ``pid`` line before it says the job started, the ``exit`` file from
the wait status before it reaps the leader) and the forked job itself (its own ``exit``
file as it ends, so a job whose server died still leaves its status). Standard library
only: the fork server imports it in a fresh interpreter.

Formats: ``pid`` is ``PID TICKS WALL`` (TICKS: the leader's start time after boot in
clock ticks, field 22 of ``/proc/<pid>/stat``, proc(5), so a recycled pid is never taken
for the job; WALL: ``time.time()`` at its start); ``exit`` is one integer, the exit code,
or ``-N`` for a leader killed by signal N (``os.waitstatus_to_exitcode``'s form; the
``sh`` wrapper writes ``128 + N`` as shells do).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from attrs import frozen

__all__ = ["EXIT", "PID", "SERVER_NAME", "Leader", "leader", "read_exit", "start_ticks",
           "write_exit", "write_pid", "write_whole"]  # fmt: skip

PID = "pid"
EXIT = "exit"
#: The fork server's name in ps (``comm``): a zombie whose parent is one gets its status.
SERVER_NAME = "seqera-forks"


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (0600): a crash never leaves half."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.part")  # two writers never share one
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(text)
    os.replace(partial, path)


@frozen
class Leader:
    """A job leader as ``/proc`` shows it: its start ticks, whether it is a zombie (ended,
    not yet reaped by its parent), and whether that parent is a fork server, which
    writes the job's exit status before it reaps it."""

    ticks: int
    zombie: bool
    parent: int = 0

    @property
    def status_coming(self) -> bool:
        """Ended, and its status not written yet but about to be (its parent serves forks)."""
        if not self.zombie or self.parent <= 1:
            return False
        try:
            with open(f"/proc/{self.parent}/comm") as file:
                return file.read().strip() == SERVER_NAME
        except OSError:
            return False


def leader(pid: int) -> Leader | None:
    """What ``/proc`` says of ``pid``; None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    return Leader(int(fields[19]), fields[0] in (b"Z", b"X"), int(fields[1]))


def start_ticks(pid: int) -> int | None:
    """The process's start time after boot in clock ticks; None if gone or a zombie."""
    found = leader(pid)
    return None if found is None or found.zombie else found.ticks


def write_pid(directory: Path, pid: int, wall: float | None = None) -> None:
    """Record the leader ``pid`` of the job whose record is ``directory``."""
    wall = time.time() if wall is None else wall
    found = leader(pid)
    ticks = None if found is None else found.ticks
    write_whole(directory / PID, f"{pid} {ticks} {wall}\n")


def write_exit(directory: Path, code: int) -> None:
    """Record the job's exit code (``-N``: killed by signal N); never raises (the job's
    own end must not fail for it: a record pruned meanwhile, a full disk)."""
    with contextlib.suppress(OSError):
        write_whole(directory / EXIT, f"{code}\n")


def read_exit(directory: Path) -> int | None:
    """The recorded exit code, or None if none was written."""
    try:
        return int((directory / EXIT).read_text().strip())
    except (OSError, ValueError):
        return None
