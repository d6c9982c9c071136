"""On-disk records of local jobs, so a new LocalBackend re-adopts what a dead one started.

One directory per job under the backend's ``state`` directory (0700; files 0600, since
the spec holds the job's environment):

* ``job.json``: the handle and the spec, written when the job is queued;
* ``pid``: the leader's pid and its start time in clock ticks after boot (field 22 of
  ``/proc/<pid>/stat``, proc(5)), so a recycled pid is never taken for the job;
* ``exit``: the exit status, written by a ``sh`` wrapper around the command when the
  command ends, whether or not a backend is still watching;
* ``final.json``: how the job ended as its backend saw it (state, reason, flags, usage),
  written when a live backend finishes it.

:func:`recover` reads one directory back: finished (``final.json``, or a dead leader and
its ``exit``), running (the leader alive with the same start time, or found by its
``SEQERA_JOB_ID`` in ``/proc/*/environ`` when the old backend died between spawning it
and writing ``pid``), or never started (queued: its old queue died with its backend).
A leader that died with no ``exit`` was killed while no backend watched it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from ... import wire
from ...models import ResourceRequest
from ..base import JobHandle, JobSpec

__all__ = ["KEY_VARIABLE", "JobRecords", "Recovered", "job_key", "wrap"]

KEY_VARIABLE = "SEQERA_SUBMISSION_KEY"
# "$1" is the exit file; the command follows. No trap: a signal to the job's group ends
# the shell too, so the leader's own status still says "killed by SIGTERM".
_WRAPPER = 'e=$1; shift; "$@"; s=$?; echo "$s" > "$e"; exit "$s"'
_PRUNE_AFTER = 7 * 86400


def wrap(command: tuple[str, ...], exit_file: Path, cwd: str | None, path: str | None) -> list[str]:
    """The argv that runs ``command`` and writes its exit status to ``exit_file``.

    Raises what ``Popen`` would for a command that cannot start (FileNotFoundError,
    PermissionError), so the caller keeps its "cannot start" outcome.
    """
    program = command[0]
    if os.sep in program:
        target = Path(cwd or ".") / program
        if not target.exists():
            raise FileNotFoundError(2, "No such file or directory", program)
        if not os.access(target, os.X_OK) or target.is_dir():
            raise PermissionError(13, "Permission denied", program)
    elif shutil.which(program, path=path) is None:
        raise FileNotFoundError(2, "No such file or directory", program)
    return ["/bin/sh", "-c", _WRAPPER, "seqera-job", str(exit_file), *command]


def job_key(spec: JobSpec) -> str | None:
    """The submission key a job carries: the spec's ``key``, else its environment's."""
    return spec.key if spec.key is not None else spec.env.get(KEY_VARIABLE)


def start_ticks(pid: int) -> int | None:
    """The process's start time after boot in clock ticks; None if gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    return None if fields[0] == b"Z" else int(fields[19])


def _find_by_environment(native_id: str) -> int | None:
    needle = f"SEQERA_JOB_ID={native_id}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{name}/environ", "rb") as file:
            if needle in file.read().split(b"\0"):
                return int(name)
    return None


@frozen
class Recovered:
    """One job read back: ``kind`` is ``finished``, ``running`` or ``queued``."""

    kind: str
    handle: JobHandle
    spec: JobSpec
    pid: int = 0
    started_wall: float | None = None
    ended_wall: float | None = None
    exit_code: int | None = None
    final: Mapping[str, Any] | None = None


def _spec_document(spec: JobSpec) -> dict[str, Any]:
    document = {f.name: getattr(spec, f.name) for f in attrs.fields(JobSpec)}
    document.update(command=list(spec.command), env=dict(spec.env), labels=dict(spec.labels),
                    request=wire.unstructure(spec.request))  # fmt: skip
    return document


def _spec(document: Mapping[str, Any]) -> JobSpec:
    known = {f.name for f in attrs.fields(JobSpec)}
    values = {k: v for k, v in document.items() if k in known}
    values["request"] = wire.structure(document["request"], ResourceRequest)
    return JobSpec(**values)


class JobRecords:
    """The ``state`` directory of one local backend (at most one backend at a time)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _dir(self, native_id: str) -> Path:
        return self.root / native_id

    def exit_file(self, native_id: str) -> Path:
        """Where the job's wrapper writes its exit status."""
        return self._dir(native_id) / "exit"

    def _write(self, path: Path, text: str) -> None:
        # Written whole or not at all: a crash never leaves half a record.
        partial = path.with_name(path.name + ".part")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(text)
        os.replace(partial, path)

    def queued(self, handle: JobHandle, spec: JobSpec) -> None:
        """Record a job as it enters the queue."""
        directory = self._dir(handle.native_id)
        directory.mkdir(mode=0o700, exist_ok=True)
        document = {"handle": attrs.asdict(handle), "spec": _spec_document(spec),
                    "queued": time.time()}  # fmt: skip
        self._write(directory / "job.json", json.dumps(document))

    def started(self, native_id: str, pid: int, started_wall: float) -> None:
        """Record the leader's pid and start time, right after spawning it."""
        self._write(self._dir(native_id) / "pid", f"{pid} {start_ticks(pid)} {started_wall}\n")

    def finished(self, native_id: str, final: Mapping[str, Any]) -> None:
        """Record how a job ended, as its backend saw it."""
        with contextlib.suppress(FileNotFoundError):  # a job whose record was pruned
            self._write(self._dir(native_id) / "final.json", json.dumps(dict(final)))

    def __iter__(self) -> Iterator[Recovered]:
        """Every job recorded here, read back (unreadable records are skipped)."""
        now = time.time()
        for directory in sorted(self.root.iterdir()):
            if not directory.is_dir():
                continue
            try:
                found = self._recover(directory)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a record cut short before job.json was whole: never queued
            if found.kind == "finished" and (found.ended_wall or now) < now - _PRUNE_AFTER:
                shutil.rmtree(directory, ignore_errors=True)
                continue
            yield found

    def _recover(self, directory: Path) -> Recovered:
        document = json.loads((directory / "job.json").read_text())
        handle, spec = JobHandle(**document["handle"]), _spec(document["spec"])
        with contextlib.suppress(FileNotFoundError):
            final = json.loads((directory / "final.json").read_text())
            return Recovered("finished", handle, spec, started_wall=final.get("started"),
                             ended_wall=final.get("ended"), exit_code=final.get("exit_code"),
                             final=final)  # fmt: skip
        pid, ticks, started_wall = 0, None, None
        with contextlib.suppress(FileNotFoundError):
            first, second, third = (directory / "pid").read_text().split()
            pid, ticks, started_wall = int(first), second, float(third)
        if pid and ticks != "None" and str(start_ticks(pid)) == ticks:
            return Recovered("running", handle, spec, pid, started_wall)
        exit_file = directory / "exit"
        if not pid:
            found = _find_by_environment(handle.native_id)
            if found is not None:  # spawned, but its backend died before writing pid
                return Recovered("running", handle, spec, found, os.stat(directory).st_mtime)
            if not exit_file.exists():
                return Recovered("queued", handle, spec)
        code = None
        ended = None
        with contextlib.suppress(FileNotFoundError, ValueError):
            ended = exit_file.stat().st_mtime
            code = int(exit_file.read_text().strip())
        return Recovered("finished", handle, spec, pid, started_wall, ended, code)
