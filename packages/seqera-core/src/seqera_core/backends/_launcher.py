"""The launcher that runs inside a squashed allocation: ``python _launcher.py GROUP ALLOC``.

Standard library only: the backend copies this file next to the jobs, and the compute
node runs it with the submitter's interpreter, so nothing needs to be installed there.

``GROUP`` is a directory on the shared filesystem that every allocation of one group of
compatible jobs reads:

- ``queue/*.json``: ready jobs, one file each (job directory, script, outputs, cores,
  memory, time limit). A launcher claims a job by renaming its file into
  ``claimed/`` (``rename`` is atomic, so exactly one allocation wins), and only when it
  can start the job at once: it has the cores and memory free, and the job's time limit
  ends before the allocation's. Allocations that run faster therefore take more jobs.
- ``cancel/<job>``: a request to kill a claimed job.
- ``drain``: the engine is done; exit as soon as nothing runs.

``ALLOC`` is this allocation's directory: ``allocation.json`` (cores, memory, time
limit, idle timeout) written by the backend, and ``started`` written here.

In each job's directory the launcher writes ``claim`` (which allocation runs it and
when it started) and, when the job ends, ``result.json``: exit code, signal, wall time,
peak memory (``ru_maxrss`` of the job's process tree from ``wait4``), and whether the
job's own time limit or a cancellation ended it. The job's script records its exit code
in ``exitcode`` itself, so a job that finished is never run again even if the launcher
dies before writing its result.

On SIGTERM (``scancel``, the allocation's time limit) running jobs are killed and left
without a result: the backend resubmits exactly those.

Preloading: ``allocation.json`` may name Python entry points (``module`` or
``module:function``) to import, and call, once. A job whose entry carries ``fork``
(``python -m MODULE ARGS`` of a preloaded package) then runs in a fork of the launcher
instead of a new interpreter: a Snakemake job costs about 0.2 s of CPU that way instead
of 3.7 s, nearly all of it interpreter start-up and plugin discovery (measured with
Snakemake 9.27). The child sets up exactly what the job's script would (session, working
directory, environment, outputs) and writes the exit-code file the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

_TICK = 0.2  # seconds between looks at the queue
_GRACE = 10.0  # SIGTERM to SIGKILL, for a job past its time limit or cancelled
_MARGIN = 15.0  # a job starts only if it can end this long before the allocation does


def _write(path: Path, data: Any) -> None:
    partial = path.with_name(path.name + f".{os.getpid()}.part")
    partial.write_text(json.dumps(data))
    os.replace(partial, path)  # a reader never sees half a file


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


def _child(entry: dict[str, Any], fork: dict[str, Any]) -> None:
    """In the forked child: become the job, as its script would, then exit with its code."""
    code = 1
    try:
        os.setsid()  # its own session and process group, killed as a whole
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        _unblock_sigchld()
        stdin = os.open(os.devnull, os.O_RDONLY)
        out = os.open(entry["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = out
        if entry["stderr"] != entry["stdout"]:
            err = os.open(entry["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for source, target in ((stdin, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
        os.environ.update({str(k): str(v) for k, v in (fork.get("env") or {}).items()})
        os.chdir(fork.get("cwd") or entry["dir"])
        sys.argv = [str(fork["module"]), *map(str, fork.get("args") or [])]
        try:
            runpy.run_module(str(fork["module"]), run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except BaseException:  # the job's own failure, reported as its exit code
            traceback.print_exc()
            code = 1
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        exit_file = Path(entry["dir"]) / "exitcode"
        partial = exit_file.with_name("exitcode.part")
        partial.write_text(f"{code}\n")
        os.replace(partial, exit_file)
    finally:
        os._exit(code)


def _exit_status(value: object) -> int:
    # sys.exit(None) is 0, sys.exit(n) is n, sys.exit("message") prints it and is 1
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _unblock_sigchld() -> None:
    # exec keeps the signal mask: a job must not inherit the launcher's blocked SIGCHLD
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def _exit_code(directory: Path) -> int | None:
    try:
        return int((directory / "exitcode").read_text().strip())
    except (OSError, ValueError):
        return None


class _Running:
    def __init__(self, entry: dict[str, Any], pid: int) -> None:
        self.entry = entry
        self.pid = pid
        self.started = time.time()
        self.term_at: float | None = None
        self.time_limit = False
        self.cancelled = False


class Launcher:
    """One allocation's loop: claim what fits, run it, record how it ended."""

    def __init__(self, group: Path, allocation: Path) -> None:
        self.group = group
        self.allocation = allocation
        spec = _read(allocation / "allocation.json") or {}
        self.cpus = float(spec.get("cpus", 1))
        self.memory = int(spec.get("memory", 0))
        self.idle = float(spec.get("idle", 30))
        self.name = str(spec.get("name", allocation.name))
        self.start = time.time()
        self.deadline = self.start + float(spec.get("time", 3600))
        self.running: dict[int, _Running] = {}
        self.stopping = False
        self.preload = list(spec.get("preload") or [])
        self.forkable: set[str] | None = None  # loaded with the first job that can use it
        (group / "claimed").mkdir(exist_ok=True)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        # A job's end wakes the loop at once (sigtimedwait below), so the next job starts
        # without waiting for a tick and the wall time is measured when the job ended.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        _write(self.allocation / "started", {"time": self.start, "host": os.uname().nodename})
        last_busy = time.time()
        while not self.stopping:
            self._reap()
            self._enforce()
            claimed = self._claim()
            now = time.time()
            if self.running or claimed:
                last_busy = now
            elif (self.group / "drain").exists() or now - last_busy >= self.idle:
                break
            elif self._nothing_fits(now):
                break  # what is queued needs more time than this allocation has left
            signal.sigtimedwait({signal.SIGCHLD}, _TICK)
        self._kill_all()
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
            and now + float(entry["time"]) + _MARGIN <= self.deadline
        )

    def _queue(self) -> list[Path]:
        try:
            return sorted(p for p in (self.group / "queue").iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return []

    def _nothing_fits(self, now: float) -> bool:
        entries = [_read(p) for p in self._queue()]
        entries = [e for e in entries if e]
        # an empty queue is idleness, not a reason to stop at once
        return bool(entries) and all(
            now + float(e["time"]) + _MARGIN > self.deadline for e in entries
        )

    def _claim(self) -> int:
        started = 0
        now = time.time()
        for path in self._queue():
            entry = _read(path)
            if entry is None or not self._fits(entry, now):
                continue
            mine = self.group / "claimed" / path.name
            try:
                os.rename(path, mine)
            except FileNotFoundError:
                continue  # another allocation took it, or it was cancelled
            self._start(entry)
            started += 1
        return started

    def _start(self, entry: dict[str, Any]) -> None:
        directory = Path(entry["dir"])
        code = _exit_code(directory)
        if code is not None:  # it ended in an allocation that died before saying so
            _write(directory / "result.json", {"exit_code": code, "allocation": self.name})
            self._unclaim(entry)
            return  # a job that finished is never run again
        _write(directory / "claim", {"allocation": self.name, "started": time.time()})
        fork = entry.get("fork")
        if isinstance(fork, dict) and self.forkable is None:
            self.forkable = _preload(self.preload)
        if isinstance(fork, dict) and str(fork.get("module", "")).split(".")[0] in (
            self.forkable or ()
        ):
            pid = os.fork()
            if pid == 0:
                _child(entry, fork)  # never returns
            self.running[pid] = _Running(entry, pid)
            return
        with open(entry["stdout"], "wb") as out:
            err = out if entry["stderr"] == entry["stdout"] else open(entry["stderr"], "wb")  # noqa: SIM115
            try:
                process = subprocess.Popen(
                    [entry["script"]],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    cwd=str(directory),
                    start_new_session=True,  # its own process group, killed as a whole
                    preexec_fn=_unblock_sigchld,  # safe: the launcher has one thread
                )
            except OSError as exc:
                _write(directory / "result.json", {"exit_code": 127, "reason": str(exc)})
                self._unclaim(entry)
                return
            finally:
                if err is not out:
                    err.close()
        process.returncode = 0  # reaped by wait4 below, never by Popen
        self.running[process.pid] = _Running(entry, process.pid)

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
            result = {
                "exit_code": code,
                "signal": sig,
                "wall_seconds": round(wall, 3),
                "peak_memory_bytes": usage.ru_maxrss * 1024,  # kilobytes on Linux
                "time_limit": job.time_limit,
                "cancelled": job.cancelled,
                "allocation": self.name,
            }
            _write(Path(job.entry["dir"]) / "result.json", result)
            self._unclaim(job.entry)

    def _unclaim(self, entry: dict[str, Any]) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.group / "claimed" / f"{entry['key']}.json")

    def _enforce(self) -> None:
        now = time.time()
        for job in self.running.values():
            key = job.entry["key"]
            if job.term_at is None:
                if (self.group / "cancel" / key).exists():
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
