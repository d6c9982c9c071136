"""Watching a process end from outside it, for tests of cancellation and clean-up."""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["ends"]


def ends(pid: int, within: float) -> bool:
    """Whether ``pid`` is gone or a zombie within ``within`` seconds.

    A killed job's shell is orphaned and reaped by PID 1; a container's PID 1
    may never reap it, and a zombie answers ``kill(pid, 0)`` though it is dead.
    """
    deadline = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
