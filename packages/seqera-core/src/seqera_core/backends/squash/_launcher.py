"""The launcher that runs inside a squashed allocation: ``python _launcher.py GROUP ALLOC``.

Standard library only: the backend copies this file next to the jobs, and the compute
node runs it with the submitter's interpreter, so nothing needs to be installed there.
It claims what fits from ``GROUP``'s queue, runs each job and records how it ended, by
the on-disk protocol of ``_protocol.py`` (copied beside it; the backend reads the same
names): ``GROUP`` is the queue, claims and results of one group of compatible jobs,
``ALLOC`` this allocation's own directory.

Every job runs under a small guard process (a fork of the launcher, its own session,
``_launcher_job.py``, copied beside this file):
if the launcher dies, even by SIGKILL, the kernel tells the guard (``PR_SET_PDEATHSIG``)
and the guard kills the job's whole process group, so a job whose allocation is gone is
not left running beside its rerun. On SIGTERM (``scancel``, the allocation's time
limit) running jobs are killed and left without a result: the backend resubmits exactly
those.

Preloading: ``allocation.json`` may name Python entry points (``module`` or
``module:function``) to import, and call, once at start. A job whose entry carries ``fork``
(``python -m MODULE ARGS`` of a preloaded package) then runs in a fork of the launcher
instead of a new interpreter: a Snakemake job costs about 0.1 s of CPU that way instead
of 3.7 s, nearly all of it interpreter start-up, plugin discovery and the modules a job
imports while it parses its Snakefile (measured with Snakemake 9.27). The child sets up
exactly what the job's script would (session, working directory, environment, outputs)
and writes the exit-code file the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any


def _sibling(name: str) -> ModuleType:
    # the backend's copy runs as a script, whatever sys.path holds: its sibling's copy
    # is loaded from beside this file
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"no {name}.py beside {__file__}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


try:
    from ..local import _cgroup
    from . import _launcher_job as _child
    from . import _protocol as proto
except ImportError:  # not in its package: the backend's copies on the shared filesystem
    # (a launcher process alone: no __pycache__ beside them, which would be world-readable
    # in the owner-only directory and raced by every node's launcher)
    sys.dont_write_bytecode = True
    _child = _sibling("_launcher_job")
    _cgroup = _sibling("_cgroup")
    proto = _sibling("_protocol")

_TICK = 0.2  # seconds between looks at the queue when nothing ends sooner
_GRACE = 10.0  # SIGTERM to SIGKILL, for a job past its time limit or cancelled
_SETTLE = 1.0  # how long a job killed from outside waits for the launcher's own signal


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _preload(entries: list[str]) -> set[str]:
    """Import (and call) each ``module[:function]``; the top-level packages that loaded."""
    loaded = set()
    for item in entries:
        name, _, function = str(item).partition(":")
        try:
            module = importlib.import_module(name)
            if function:
                getattr(module, function)()
        except Exception:  # jobs then start as new processes, as without a preload
            print(f"seqera launcher: cannot preload {item}", file=sys.stderr)
            traceback.print_exc()
            continue
        loaded.add(name.split(".")[0])
    return loaded


def _run_as_main(module: str, args: list[Any]) -> int:
    """Run ``module`` in this process as ``python -m MODULE ARGS`` would; its exit status
    (the fork server's children run jobs through this too)."""
    return _child.run_as_main(module, args)


def _exit_code(directory: Path) -> int | None:
    try:
        return int((directory / proto.EXIT_CODE).read_text().strip())
    except (OSError, ValueError):
        return None


class _Running:
    def __init__(self, entry: dict[str, Any], pid: int) -> None:
        self.entry = entry
        self.pid = pid
        self.cgroup: Path | None = None  # its memory cgroup, where the kernel holds its limit
        self.started = time.time()
        self.term_at: float | None = None
        self.time_limit = False
        self.cancelled = False


class Launcher:
    """One allocation's loop: claim what fits, run it, record how it ended."""

    def __init__(self, group: Path, allocation: Path) -> None:
        self.group = group
        self.allocation = allocation
        spec = _read(allocation / proto.ALLOCATION) or {}
        self.cpus = float(spec.get("cpus", 1))
        self.memory = int(spec.get("memory", 0))
        self.idle = float(spec.get("idle", 30))
        self.name = str(spec.get("name", allocation.name))
        self.start = time.time()
        self.deadline = self.start + float(spec.get("time", 3600))
        self.running: dict[int, _Running] = {}
        self.stopping = False
        self.preload = list(spec.get("preload") or [])
        self.cgroups: Any = None  # _cgroup.MemoryCgroups, once run() looked for one
        self.forkable: set[str] = set()  # the preloaded packages, loaded at start
        (group / proto.CLAIMED).mkdir(mode=0o700, exist_ok=True)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        # A job's end wakes the loop at once (sigtimedwait below), so the next job starts
        # without waiting for a tick and the wall time is measured when the job ended.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        # Slurm, PBS, Grid Engine
        job_id = (
            os.environ.get("SLURM_JOB_ID")
            or os.environ.get("PBS_JOBID")
            or os.environ.get("JOB_ID")
        )
        started = {"time": self.start, "host": os.uname().nodename, "pid": os.getpid()}
        started["job_id"] = job_id
        proto.write_private(self.allocation / proto.STARTED, started)
        # at once, not with the first job: the backend may still be writing the queue
        self.forkable = _preload(self.preload)
        # each job's memory limit held by the kernel where a cgroup can be made (_cgroup),
        # else sampled nowhere here: said once, in the allocation's log
        self.cgroups, why = _cgroup.MemoryCgroups.open()
        if self.cgroups is None:
            print(f"seqera launcher: jobs' memory limits are not enforced here: {why}",
                  file=sys.stderr, flush=True)  # fmt: skip
        last_busy = time.time()
        while not self.stopping:
            self._reap()
            self._enforce()
            claimed = self._claim()
            now = time.time()
            if self.running or claimed:
                last_busy = now
            elif (self.group / proto.DRAIN).exists() or now - last_busy >= self.idle:
                break
            elif self._nothing_fits(now):
                break  # what is queued needs more time than this allocation has left
            signal.sigtimedwait({signal.SIGCHLD}, _TICK)
        self._kill_all()
        if self.cgroups is not None:
            self.cgroups.close()
        return 0

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _used(self) -> tuple[float, int]:
        cpus = sum(float(r.entry["cpus"]) for r in self.running.values())
        memory = sum(int(r.entry["memory"]) for r in self.running.values())
        return cpus, memory

    def _fits(self, entry: dict[str, Any], now: float) -> bool:
        cpus, memory = self._used()
        return (
            cpus + float(entry["cpus"]) <= self.cpus + 1e-9
            and memory + int(entry["memory"]) <= self.memory
            and now + float(entry["time"]) + proto.MARGIN <= self.deadline
        )

    def _queue(self) -> list[Path]:
        try:
            return sorted(p for p in (self.group / proto.QUEUE).iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return []

    def _nothing_fits(self, now: float) -> bool:
        entries = [_read(p) for p in self._queue()]
        entries = [e for e in entries if e]
        # an empty queue is idleness, not a reason to stop at once
        return bool(entries) and all(
            now + float(e["time"]) + proto.MARGIN > self.deadline for e in entries
        )

    def _claim(self) -> int:
        started = 0
        now = time.time()
        cpus, _ = self._used()
        for path in self._queue():
            if cpus >= self.cpus - 1e-9:
                break  # full: no need to read the rest of the queue
            entry = _read(path)
            if entry is None or not self._fits(entry, now):
                continue
            # claim and owner in one rename: no moment with the job nowhere
            mine = self.group / proto.CLAIMED / proto.claimed_name(path.stem, self.name)
            try:
                os.rename(path, mine)
            except FileNotFoundError:
                continue  # another allocation took it, or it was cancelled
            entry["key"] = path.stem
            self._start(entry)
            cpus, _ = self._used()
            started += 1
        return started

    def _start(self, entry: dict[str, Any]) -> None:
        directory = Path(entry["dir"])
        code = _exit_code(directory)
        if code in proto.INTERRUPTED:  # killed with an allocation that could not say so
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / proto.EXIT_CODE)
        elif code is not None:  # it ended in an allocation that died before saying so
            proto.write_private(
                directory / proto.RESULT, {"exit_code": code, "allocation": self.name}
            )
            self._unclaim(entry)
            return  # a job that finished is never run again
        proto.write_private(
            directory / proto.CLAIM, {"allocation": self.name, "started": time.time()}
        )
        fork = entry.get("fork")
        if not isinstance(fork, dict):
            fork = None
        elif str(fork.get("module", "")).split(".")[0] not in self.forkable:
            fork = None  # its package did not load here: run its script instead
        group, procs = None, None
        if self.cgroups is not None and int(entry.get("memory") or 0) > 0:
            try:
                group = self.cgroups.make(f"job-{entry['key']}", int(entry["memory"]))
                procs = self.cgroups.procs(group)
            except OSError as exc:
                print(f"seqera launcher: job {entry['key']}: no memory cgroup ({exc})",
                      file=sys.stderr, flush=True)  # fmt: skip
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child.guard(entry, fork, parent, proto.EXIT_CODE, procs)  # never returns
        self.running[pid] = _Running(entry, pid)
        self.running[pid].cgroup = group

    def _reap(self) -> None:
        while self.running:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            job = self.running.pop(pid, None)
            if job is None:
                continue
            wall = time.time() - job.started
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            code = 128 + sig if sig else os.WEXITSTATUS(status)
            if code in proto.INTERRUPTED and not (job.time_limit or job.cancelled):
                # Killed, not by this launcher: scancel signals every process of the
                # allocation, the launcher too, in no set order. Give its own signal a
                # moment; if it comes, the job was interrupted, not finished.
                time.sleep(_SETTLE)
                if self.stopping:
                    continue
            result = {
                "exit_code": code,
                "signal": sig,
                "wall_seconds": round(wall, 3),
                "peak_memory_bytes": self._peak(job) or usage.ru_maxrss * 1024,  # KiB
                "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
                "started": round(job.started, 3),
                "time_limit": job.time_limit,
                "cancelled": job.cancelled,
                "allocation": self.name,
            }
            if job.cgroup is not None and self.cgroups is not None:
                if self.cgroups.oom_killed(job.cgroup):
                    result["reason"] = "out of memory: killed at its memory limit"
                    result["out_of_memory"] = True
                self.cgroups.remove(job.cgroup)
            proto.write_private(Path(job.entry["dir"]) / proto.RESULT, result)
            self._unclaim(job.entry)  # after the result: never a moment with neither

    def _peak(self, job: _Running) -> int | None:
        """The job's peak from its cgroup (the kernel's count), if it has one."""
        if job.cgroup is None or self.cgroups is None:
            return None
        peak: int | None = self.cgroups.peak(job.cgroup)
        return peak

    def _unclaim(self, entry: dict[str, Any]) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.group / proto.CLAIMED / proto.claimed_name(entry["key"], self.name))

    def _enforce(self) -> None:
        now = time.time()
        for job in self.running.values():
            key = job.entry["key"]
            if job.term_at is None:
                if (self.group / proto.CANCEL / key).exists():
                    job.cancelled = True
                elif now - job.started >= float(job.entry["time"]):
                    job.time_limit = True
                else:
                    continue
                job.term_at = now
                self._signal(job, signal.SIGTERM)
            elif now - job.term_at >= _GRACE:
                self._signal(job, signal.SIGKILL)

    def _signal(self, job: _Running, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signum)

    def _kill_all(self) -> None:
        # The allocation is ending: running jobs get no result, so they are resubmitted.
        for job in self.running.values():
            self._signal(job, signal.SIGKILL)
        for pid in self.running:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def main(argv: list[str]) -> int:
    """Run the launcher for ``GROUP ALLOC``."""
    if len(argv) != 2:
        print("usage: _launcher.py GROUP_DIR ALLOCATION_DIR", file=sys.stderr)
        return 2
    return Launcher(Path(argv[0]), Path(argv[1])).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
