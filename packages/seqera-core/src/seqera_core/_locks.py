"""An advisory lock file that says a live process holds something (a run's ledger, a local
backend's jobs): held while the process lives, released by the kernel when it dies."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO

__all__ = ["take"]


def take(path: Path) -> IO[bytes] | None:
    """The lock file, opened and locked; None while a live process holds it."""
    file = path.open("ab")
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        return None
    except BaseException:
        file.close()
        raise
    return file
