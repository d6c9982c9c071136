"""The on-disk protocol of a squashed allocation, shared by its launcher (``_launcher.py``)
and the backend (``_state``, ``_status``, ``_alloc``): the names below are its only
spelling. Standard library only: the backend copies this file beside the launcher.

``GROUP`` is a directory on the shared filesystem that every allocation of one group of
compatible jobs reads:

- ``queue/<job>.json``: ready jobs, one file each (job directory, script, outputs, cores,
  memory, time limit, environment: the file is 0600 in a 0700 directory).
- ``claimed/<job>@<allocation>.json``: a claimed job. A launcher claims a job with one
  ``rename`` from ``queue/`` to a name that carries its own allocation's name, so the claim
  and the record of who holds it are one atomic step: exactly one allocation wins, and no
  moment exists at which a job is out of the queue with no owner on disk. It claims only
  what it can start at once (cores and memory free, the job's time limit ending before
  the allocation's), so allocations that run faster take more jobs.
- ``cancel/<job>``: a request to kill a claimed job; ``cancelled/``: jobs taken out of
  the queue before any claim.
- ``drain``: the engine is done; exit as soon as nothing runs.

``ALLOC`` is this allocation's directory: ``allocation.json`` (cores, memory, time
limit, idle timeout) written by the backend, and ``started`` (time, host, the
scheduler's job id) written here.

In each job's directory the launcher writes ``claim`` (which allocation runs it and when
it started; for people: the backend reads ownership from ``claimed/``) and, when the job
ends, ``result.json``: exit code, signal, wall time, peak memory (``ru_maxrss`` of the
job's process tree from ``wait4``), and whether the job's own time limit or a
cancellation ended it; only then is the ``claimed/`` entry removed. The job's script
records its exit code in ``exitcode`` itself, so a job that finished is never run again
even if the launcher dies before writing its result.

Recovery (the backend's side): a ``claimed/`` entry whose allocation the scheduler
reports ended, with neither ``result.json`` nor ``exitcode`` (or an exit code that says
the signals ending the allocation killed it, ``INTERRUPTED``), goes back to ``queue/``;
the job had started, may have done part of its work, and runs again from the start.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

__all__ = [
    "ALLOCATION",
    "CANCEL",
    "CANCELLED",
    "CLAIM",
    "CLAIMED",
    "DRAIN",
    "EXIT_CODE",
    "GROUP_DIRS",
    "INTERRUPTED",
    "MARGIN",
    "QUEUE",
    "RESULT",
    "STARTED",
    "claimed_name",
    "parse_claimed",
    "write_private",
]

QUEUE = "queue"  # group: <job>.json, ready to be claimed
CLAIMED = "claimed"  # group: <job>@<allocation>.json, claimed by that allocation
CANCEL = "cancel"  # group: <job>, kill this claimed job
CANCELLED = "cancelled"  # group: <job>.json, taken out of the queue before any claim
DRAIN = "drain"  # group: the engine is done
GROUP_DIRS = (QUEUE, CLAIMED, CANCEL, CANCELLED)
ALLOCATION = "allocation.json"  # allocation: cores, memory, time, idle, preload
STARTED = "started"  # allocation: written when the launcher starts
CLAIM = "claim"  # job: which allocation runs it, since when (informational)
RESULT = "result.json"  # job: how it ended
EXIT_CODE = "exitcode"  # job: written by its script (the batch backend's EXIT_FILE)
MARGIN = 15.0  # a job starts only if it can end this long before the allocation does
# Exit codes a job's script records when the signals that end an allocation killed its
# command (scancel signals every process of the job, in no set order): with no result
# from a launcher, such a job did not finish and runs again.
INTERRUPTED = frozenset(
    128 + s for s in (signal.SIGHUP, signal.SIGINT, signal.SIGKILL, signal.SIGTERM)
)
_OWNER = "@"  # between a job's key and its allocation's name in claimed/


def claimed_name(key: str, allocation: str) -> str:
    """The ``claimed/`` file name of job ``key`` held by ``allocation``."""
    return f"{key}{_OWNER}{allocation}.json"


def parse_claimed(name: str) -> tuple[str, str] | None:
    """``(key, allocation)`` of a ``claimed/`` file name, or None for any other file."""
    if not name.endswith(".json") or _OWNER not in name:
        return None
    key, _, allocation = name[: -len(".json")].partition(_OWNER)
    return (key, allocation) if key and allocation else None


def write_private(path: Path, data: Any) -> None:
    """Write ``data`` as JSON, readable by its owner only; a reader never sees half a file."""
    partial = path.with_name(path.name + f".{os.getpid()}.part")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(data))
    os.replace(partial, path)
