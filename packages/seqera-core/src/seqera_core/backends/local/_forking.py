"""The local backend's side of the fork server (``_forkserver``): start it, ask, listen.

Started as a new interpreter, the server imports its preload on its own (about 2 s of CPU
for Snakemake without bytecode caches); started with ``fork=True`` while the caller still
runs one thread (the Snakemake executor does it when Snakemake builds its settings, before
it reads the Snakefile), it is a fork of the caller and has those modules already, so its
jobs can start about when the caller's own start-up ends instead of that much later.

A job is started as a fork when its argv is ``PYTHON -m MODULE ARGS`` with ``PYTHON``
the interpreter the server runs (same directory and same file, so another virtual
environment of the same Python is not mistaken for this one) and ``MODULE`` in a
package the server preloaded. Anything else, or anything the server cannot do (it
failed to start, to preload, to fork, or died), goes back to the backend's ordinary
``subprocess`` start: forking is a shortcut, never a condition for a job to run.

Not thread-safe: the local backend calls it under its own lock.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ._forkserver import receive, send, serve_forked

__all__ = ["ForkServer"]

# Not `-m`: the package's __init__ imports the module before runpy would run it as __main__.
_REPLY_TIMEOUT = 30.0  # seconds for a fork to be acknowledged
_SERVER = "; ".join(
    (
        "import sys",
        "from seqera_core.backends.local._forkserver import main",
        "sys.exit(main(sys.argv[1:]))",
    )
)


def _top(entry: str) -> str:
    return entry.partition(":")[0].split(".")[0]


def _one_thread() -> bool:
    """Whether this process runs one thread (the kernel's count: C libraries' threads too)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


class _Process(Protocol):
    pid: int

    def kill(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class _Forked:
    """A forked child, waited for and killed as a ``Popen`` is."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # someone else in this process reaped it
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"fork server {self.pid}", timeout or 0)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self.returncode


def _fork(ours: socket.socket, theirs: socket.socket, preload: Sequence[str]) -> _Forked:
    for stream in (sys.stdout, sys.stderr):  # or the child would write it out a second time
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:  # the server: it never returns into the caller's code
        try:
            ours.close()
            serve_forked(theirs, list(preload))
        finally:
            os._exit(1)
    return _Forked(pid)


def _same_interpreter(a: str, b: str) -> bool:
    if not (os.path.isabs(a) and os.path.isabs(b)):
        return False
    # A venv's python links to the base interpreter: the directory tells venvs apart.
    return os.path.dirname(os.path.abspath(a)) == os.path.dirname(
        os.path.abspath(b)
    ) and os.path.realpath(a) == os.path.realpath(b)


class ForkServer:
    """A fork server process, started at once so its preload overlaps the caller's work.

    Args:
        preload: ``module`` or ``module:function`` entries it imports (and calls) once.
        python: the interpreter it runs; jobs must name the same one.
        ready_timeout: seconds the preload may take; past them jobs start as new processes.
        fork: start it as a fork of this process (keeping what this process has imported)
            if ``python`` is this interpreter and this process runs one thread; otherwise,
            or if the fork fails, as a new interpreter.
    """

    def __init__(
        self,
        preload: Sequence[str],
        *,
        python: str = sys.executable,
        ready_timeout: float = 120,
        fork: bool = False,
    ) -> None:
        self.python = python
        self._declared = frozenset(_top(entry) for entry in preload)
        self._loaded: frozenset[str] | None = None  # known once the server says ready
        self._exits: dict[int, tuple[int | None, int, float | None]] = {}
        self._running: set[int] = set()
        self._serial = 0
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock: socket.socket | None = ours
        self._process: _Process | None = None
        #: Whether the server is a fork of this process (not a new interpreter).
        self.forked = False
        try:
            if fork and python == sys.executable and _one_thread():
                with contextlib.suppress(OSError):
                    self._process = _fork(ours, theirs, preload)
                    self.forked = True
            if self._process is None:
                self._process = subprocess.Popen(
                    [python, "-c", _SERVER, str(theirs.fileno()), *preload],
                    stdin=subprocess.DEVNULL,
                    pass_fds=[theirs.fileno()],
                    start_new_session=True,  # a Ctrl-C of the caller's terminal is not for it
                )
        except OSError:
            self._process = None
            self._dead()
        finally:
            theirs.close()
        self._deadline = time.monotonic() + ready_timeout

    @property
    def pid(self) -> int | None:
        """The server's process id (``None`` if it could not start)."""
        return None if self._process is None else self._process.pid

    @property
    def alive(self) -> bool:
        """Whether jobs can still be forked."""
        return self._sock is not None

    def fileno(self) -> int:
        """A descriptor readable when the server has something to say (-1 once it is gone)."""
        return -1 if self._sock is None else self._sock.fileno()

    def holds(self, command: Sequence[str]) -> bool:
        """Whether ``command`` should wait for the preload (still under way) to fork."""
        if self._loaded is not None or not self.accepts(command):
            return False
        if time.monotonic() >= self._deadline:
            self._declared = frozenset()  # too slow: every job starts as a process
            return False
        return True

    @property
    def ready_deadline(self) -> float | None:
        """When jobs stop waiting for the preload (monotonic clock), while they wait."""
        return self._deadline if self._loaded is None and self._declared else None

    def accepts(self, command: Sequence[str]) -> bool:
        """Whether ``command`` is ``PYTHON -m MODULE ...`` of a preloaded package."""
        return (
            self._sock is not None
            and len(command) >= 3
            and command[1] == "-m"
            and _top(command[2]) in (self._declared if self._loaded is None else self._loaded)
            and _same_interpreter(command[0], self.python)
        )

    def spawn(
        self,
        command: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str],
        streams: Sequence[int],
        cgroup: str | None = None,
        record: str | None = None,
    ) -> int | None:
        """Fork ``command`` with these directory, environment and (stdout[, stderr]) fds;
        the child joins ``cgroup`` (a ``cgroup.procs`` file) before anything else. With
        ``record`` (the job's record directory, ``_records``), the server records the
        job's pid before it answers, and its exit status when it ends.

        Returns the job's pid (leader of its own session), or ``None`` if the server
        cannot (or has not preloaded yet): the caller then starts a new process.
        """
        if self._loaded is None or not self.accepts(command):
            return None
        self._serial += 1
        request = {
            "op": "spawn",
            "id": self._serial,
            "module": command[2],
            "args": list(command[3:]),
            "cwd": cwd,
            "env": dict(env),
            "cgroup": cgroup,
            "record": record,
        }
        if not self._send(request, list(streams)):
            return None
        deadline = time.monotonic() + _REPLY_TIMEOUT
        while self._sock is not None:
            message = self._next(timeout=max(0.0, deadline - time.monotonic()))
            if message is None:
                if self._sock is not None and time.monotonic() >= deadline:
                    # A server that cannot fork in that long is stuck: end it.
                    if self._process is not None:
                        self._process.kill()
                    self._dead()
                continue
            if message.get("id") == self._serial:
                if message.get("op") != "started":
                    return None
                pid = int(message["pid"])
                self._running.add(pid)
                return pid
        return None

    def signal(self, pid: int, signum: int) -> None:
        """Signal the process group of the job ``pid`` while it runs."""
        if pid in self._running and not self._send({"op": "signal", "pid": pid, "signum": signum}):
            # The server is gone; the job may not be, and nobody else will stop it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signum)

    def collect(self) -> None:
        """Read what the server has said, without waiting."""
        while self._sock is not None and self._next(timeout=0) is not None:
            pass

    def exit_status(self, pid: int) -> tuple[int | None, int, float | None] | None:
        """``(wait status, peak bytes, CPU seconds)`` of an ended job (status ``None``: lost
        with the server), or ``None`` while it runs."""
        return self._exits.pop(pid, None)

    def detach(self) -> None:
        """Stop talking to the server and leave its jobs running: it waits for them (and
        records their ends where they have a record), then exits on its own."""
        self._running.clear()  # not ours to stop or report any more
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def close(self, timeout: float = 5.0) -> None:
        """End the server: it lets running jobs finish, so call it when none run."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._dead()
        process, self._process = self._process, None
        if process is not None:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # -- internals --------------------------------------------------------------------

    def _send(self, message: dict[str, Any], fds: list[int] | None = None) -> bool:
        if self._sock is None:
            return False
        try:
            send(self._sock, message, fds)
        except OSError:
            self._dead()
            return False
        return True

    def _next(self, timeout: float | None) -> dict[str, Any] | None:
        """One message, handled; ``None`` if none came within ``timeout`` or the server ended."""
        if self._sock is None:
            return None
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            return None
        try:
            received = receive(self._sock)
        except (OSError, ValueError):
            received = None
        if received is None:
            self._dead()
            return None
        message, fds = received
        for fd in fds:  # the server sends none; never leak one
            os.close(fd)
        op = message.get("op")
        if op == "ready":
            self._loaded = frozenset(str(name) for name in message.get("loaded") or ())
        elif op == "exited":
            pid = int(message["pid"])
            self._running.discard(pid)
            cpu = message.get("cpu")
            self._exits[pid] = (
                int(message["status"]),
                int(message.get("maxrss") or 0),
                float(cpu) if isinstance(cpu, int | float) else None,
            )
        return message

    def _dead(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        # Jobs it had started have no one left to report their end: stop them, lost.
        for pid in self._running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            self._exits[pid] = (None, 0, None)
        self._running.clear()
