"""On-disk records of local jobs, so a new LocalBackend re-adopts what a dead one started.

One directory per job under the backend's ``state`` directory (0700; files 0600, since
the spec holds the job's environment), named by its native id ``INSTANCE.N``:

* ``job.json``: the handle and the spec, written when the job is queued;
* ``pid`` and ``exit`` (``_marks``): the leader's pid and start time, written when it is
  spawned (by the fork server too, for a fork, before it says the job started), and the
  exit status, written as the job ends whether or not a backend still watches (by a
  ``sh`` wrapper around a new process; by a forked job itself and its fork server);
* ``final.json``: how the job ended as its backend saw it (state, reason, flags, usage),
  written when a live backend finishes it.

Each backend instance holds ``INSTANCE.lock`` (``flock(2)``, exclusive) while it lives;
the kernel drops it when the process dies, ``kill -9`` included, as the resume ledger's
locks (``seqera_core.resume._ledger``). A new backend adopts only the jobs of instances
whose lock it can take, and keeps that lock: two backends on one directory (two runs of
one workflow directory) never take each other's jobs, and two successors never share a
dead one's.

:func:`recover` reads one directory back: finished (``final.json``, or a dead leader and
its ``exit``), running (the leader alive with the same start time, a fork server's
zombie whose status the server is about to write included, or found by its ``SEQERA_JOB_ID`` in
``/proc/*/environ`` when the old backend died between spawning it and writing ``pid``),
or never started (queued: its old queue died with its backend). A leader that died with
no ``exit`` was killed while no backend watched it.

Pruning: a finished job's record goes when a backend that reported its end to a poll
closes (:meth:`JobRecords.close`), or 7 days after it ended (a run that died before it
saw the end may still look for it until then); a dead instance's lock goes with its last
record.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import attrs
from attrs import frozen

from ... import wire
from ..._locks import take
from ...models import ResourceRequest
from ..base import JobHandle, JobSpec
from ._marks import EXIT, PID, leader, read_exit, write_pid, write_whole

__all__ = ["KEY_VARIABLE", "JobRecords", "Recovered", "job_key", "wrap"]

KEY_VARIABLE = "SEQERA_SUBMISSION_KEY"
# "$1" is the exit file; the command follows. No trap: a signal to the job's group ends
# the shell too, so the leader's own status still says "killed by SIGTERM". A command
# killed alone (by itself, or the OOM killer) ends the shell with the same signal, as
# its status says (128 + N, POSIX "Exit Status for Commands"), so the leader's status
# still reads "killed by SIGKILL". The shell's own stderr is /dev/null (the command's is
# fd 3's copy of it): its job-status note ("Killed") is no line of the job's log.
_WRAPPER = (
    'exec 3>&2 2>/dev/null; e=$1; shift; "$@" 2>&3 3>&-; s=$?; echo "$s" > "$e"; '
    'if [ "$s" -gt 128 ] && [ "$s" -le 192 ]; then kill -"$((s - 128))" "$$"; fi; exit "$s"'
)
_PRUNE_AFTER = 7 * 86400
_LOCK = ".lock"


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


def _instance(native_id: str) -> str:
    return native_id.partition(".")[0]


class JobRecords:
    """The ``state`` directory of local backends, as the one with ``instance`` sees it.

    Raises:
        RuntimeError: another live backend holds ``instance``.
    """

    def __init__(self, root: str | os.PathLike[str], instance: str) -> None:
        # Absolute: a forked job and a wrapper write its exit file from the job's directory.
        self.root = Path(root).absolute()
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.instance = instance
        own = take(self.root / f"{instance}{_LOCK}")
        if own is None:
            raise RuntimeError(f"local backend {instance} already holds {self.root}")
        self._held: dict[str, IO[bytes]] = {instance: own}  # instances whose jobs are ours
        self._refused: set[str] = set()  # instances a live backend holds

    def directory(self, native_id: str) -> Path:
        """The job's record directory."""
        return self.root / native_id

    def exit_file(self, native_id: str) -> Path:
        """Where the job's wrapper writes its exit status."""
        return self.directory(native_id) / EXIT

    def queued(self, handle: JobHandle, spec: JobSpec) -> None:
        """Record a job as it enters the queue."""
        directory = self.directory(handle.native_id)
        directory.mkdir(mode=0o700, exist_ok=True)
        document = {"handle": attrs.asdict(handle), "spec": _spec_document(spec),
                    "queued": time.time()}  # fmt: skip
        write_whole(directory / "job.json", json.dumps(document))

    def started(self, native_id: str, pid: int, started_wall: float) -> None:
        """Record the leader's pid and start time, right after spawning it."""
        write_pid(self.directory(native_id), pid, started_wall)

    def finished(self, native_id: str, final: Mapping[str, Any]) -> None:
        """Record how a job ended, as its backend saw it."""
        with contextlib.suppress(FileNotFoundError):  # a job whose record was pruned
            write_whole(self.directory(native_id) / "final.json", json.dumps(dict(final)))

    def _ours(self, instance: str) -> bool:
        """Whether the jobs of ``instance`` are this backend's: its own, or a dead one's
        (whose lock it then holds)."""
        if instance in self._held:
            return True
        if instance in self._refused:
            return False
        held = take(self.root / f"{instance}{_LOCK}")
        if held is None:
            self._refused.add(instance)
            return False
        self._held[instance] = held
        return True

    def __iter__(self) -> Iterator[Recovered]:
        """Every job of a dead backend recorded here, read back (unreadable records are
        skipped, and ones that ended more than 7 days ago pruned)."""
        now = time.time()
        for directory in sorted(self.root.iterdir()):
            if not directory.is_dir() or not self._ours(_instance(directory.name)):
                continue
            try:
                found = self._recover(directory)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a record cut short before job.json was whole: never queued
            if found.kind == "finished" and (found.ended_wall or now) < now - _PRUNE_AFTER:
                shutil.rmtree(directory, ignore_errors=True)
                continue
            yield found

    def close(self, prune: Iterable[str] = ()) -> None:
        """Delete the records of the jobs ``prune`` (native ids: ended, and their end
        reported), then release the locks, deleting those of instances with no record left."""
        for native_id in prune:
            shutil.rmtree(self.directory(native_id), ignore_errors=True)
        left = {_instance(p.name) for p in self.root.iterdir() if p.is_dir()}
        for instance, held in self._held.items():
            if instance not in left:
                with contextlib.suppress(OSError):
                    os.unlink(self.root / f"{instance}{_LOCK}")
            held.close()
        self._held.clear()

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
            first, second, third = (directory / PID).read_text().split()
            pid, ticks, started_wall = int(first), second, float(third)
        exit_file = directory / EXIT
        seen = leader(pid) if pid else None
        # A fork server's zombie with no status yet: the server writes it before reaping.
        if (
            seen is not None
            and str(seen.ticks) == ticks
            and (not seen.zombie or (seen.status_coming and not exit_file.exists()))
        ):
            return Recovered("running", handle, spec, pid, started_wall)
        if not pid:
            found = _find_by_environment(handle.native_id)
            if found is not None:  # spawned, but its backend died before writing pid
                return Recovered("running", handle, spec, found, os.stat(directory).st_mtime)
            if not exit_file.exists():
                return Recovered("queued", handle, spec)
        ended = None
        with contextlib.suppress(FileNotFoundError):
            ended = exit_file.stat().st_mtime
        code = read_exit(directory)
        return Recovered("finished", handle, spec, pid, started_wall, ended, code)
