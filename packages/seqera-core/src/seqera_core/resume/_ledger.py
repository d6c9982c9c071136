"""Each run's ledger of what it sent, on disk, so the run after a dead one knows its jobs.

One pair of files per run under the engine's work directory (``runs/``):

* ``<run>.lock``: locked (``flock(2)``, exclusive) by the run for as long as its process
  lives. The kernel drops the lock when the process dies, ``kill -9`` included, so a lock
  that can be taken belongs to a run that is gone; no pid is ever guessed at.
* ``<run>.jsonl``: one line per event, appended: ``{"sent": KEY, "meta": {...}}`` before
  a job with submission key KEY is handed to the backend (so a run killed during the
  submission still left its key), ``{"done": KEY}`` once the run saw the job end or
  cancelled it.

A ledger whose lock can be taken is an *orphan*: its keys sent and not done are jobs
nobody watches. The run that finds it takes its lock (two successors never share one),
and at :meth:`Ledger.close` writes the keys it did not settle into its own ledger before
it deletes the dead run's files: a key is always in at least one ledger until done.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from attrs import field, frozen

from .._locks import take

__all__ = ["Entry", "Ledger"]

_LOCK = ".lock"
_LOG = ".jsonl"
# The most a ledger file is read: a run of a million jobs writes about 100 MB.
_MAX_READ = 512 * 1024 * 1024


@frozen
class Entry:
    """A key a dead run sent: the job's metadata (name, working directory) and whether
    that run saw the job end."""

    key: str
    meta: Mapping[str, str] = field(factory=dict)
    done: bool = False


def _read(path: Path) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    try:
        with path.open("rb") as file:
            text = file.read(_MAX_READ).decode(errors="replace")
    except OSError:
        return entries
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the last line of a run killed mid-write
        if not isinstance(event, dict):
            continue
        if isinstance(event.get("sent"), str):
            meta = event.get("meta")
            meta = {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
            entries[event["sent"]] = Entry(event["sent"], meta)
        elif isinstance(event.get("done"), str) and event["done"] in entries:
            key = event["done"]
            entries[key] = Entry(key, entries[key].meta, done=True)
    return entries


class Ledger:
    """This run's ledger in ``directory``, and the orphans it found there at open.

    Args:
        directory: the engine's work directory's ``runs`` folder (created if missing).
        run_id: this run's id (a file-name-safe string).
    """

    def __init__(self, directory: Path, run_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.run_id = run_id
        lock = take(directory / f"{run_id}{_LOCK}")
        if lock is None:
            raise RuntimeError(f"run {run_id} already holds {directory}")
        self._lock = lock
        self._log = (directory / f"{run_id}{_LOG}").open("a", encoding="utf-8")
        # An engine's worker threads note their jobs' ends while a signal's handler may be
        # closing the run: a write after close is dropped (the next run's find() settles
        # that job), never an "I/O operation on closed file" in a worker.
        self._guard = threading.Lock()
        self._closed = False
        self._sent: dict[str, Mapping[str, str]] = {}
        self._done: set[str] = set()
        self._dead: dict[str, IO[bytes]] = {}  # dead run id -> its lock, held
        self.orphans: dict[str, Entry] = {}
        self._claim()

    def _claim(self) -> None:
        for path in sorted(self.directory.glob(f"*{_LOCK}")):
            run = path.name.removesuffix(_LOCK)
            if run == self.run_id:
                continue
            held = take(path)
            if held is None:
                continue  # a live run's
            self._dead[run] = held
            for key, entry in _read(self.directory / f"{run}{_LOG}").items():
                if key not in self.orphans or not entry.done:
                    self.orphans[key] = entry

    # -- this run's own events ------------------------------------------------------

    def _write(self, event: dict[str, Any]) -> None:
        self._log.write(json.dumps(event, separators=(",", ":")) + "\n")

    def sent(self, entries: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        """Record keys about to be handed to the backend (or adopted from a dead run):
        written and flushed before the call that sends them."""
        with self._guard:
            if self._closed:
                return
            for key, meta in entries:
                self._sent[key] = meta
                self._done.discard(key)
                self._write({"sent": key, "meta": dict(meta)})
            self._log.flush()

    def done(self, keys: Iterable[str]) -> None:
        """Record that this run saw these jobs end, or cancelled them."""
        with self._guard:
            if self._closed:
                return
            wrote = False
            for key in keys:
                if key in self._sent and key not in self._done:
                    self._done.add(key)
                    self._write({"done": key})
                    wrote = True
            if wrote:
                self._log.flush()

    def close(self, unsettled: Iterable[Entry] = ()) -> None:
        """Carry ``unsettled`` orphans (neither adopted nor ended) into this run's ledger,
        then delete the dead runs' files and, if every job this run sent has ended, its
        own; release the locks."""
        carried = [(e.key, e.meta) for e in unsettled if e.key not in self._sent]
        if carried:
            self.sent(carried)
        for run, held in self._dead.items():
            for suffix in (_LOG, _LOCK):
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / f"{run}{suffix}")
            held.close()
        self._dead.clear()
        with self._guard:
            self._closed = True
            finished = set(self._sent) <= self._done
            self._log.close()
        if finished:
            for suffix in (_LOG, _LOCK):
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / f"{self.run_id}{suffix}")
        self._lock.close()
