"""The fork server: one preloaded interpreter that starts ``python -m MODULE`` jobs as forks.

:func:`serve` imports (and calls) each ``module[:function]`` entry once, as the squash
launcher does (``_launcher._preload``), then serves requests on a Unix stream socket. The
local backend starts it once (``_forking.ForkServer``), before any job, in one of two
ways: a new interpreter (``main([FD, ENTRY...])`` through ``python -c``), or a fork of
the engine's own process taken while that process still runs one thread
(:func:`serve_forked`), which then has nearly everything imported already (Snakemake's
command line has loaded Snakemake by the time it builds the executor's settings). Either
way the jobs' parent is a process of its own that runs no thread but its main one: a fork
copies only the calling thread, and a lock another thread held at that moment would stay
locked forever in the child. It calls itself ``seqera-forks`` in ps (``comm``); a job
takes its interpreter's name back.

Messages, both ways: a 4-byte big-endian length, then that much JSON. File descriptors
ride on the length (``SCM_RIGHTS``, see unix(7)).

- ``spawn`` (id, module, args, cwd, env, cgroup, record), with the job's stdout and
  stderr descriptors (one when both streams share a file): the server forks; the child
  becomes the job exactly as ``python -m MODULE ARGS`` started with that environment, directory and
  streams would see it (its own session, the signal dispositions of a new interpreter,
  an empty signal mask, stdin from /dev/null, ``sys.argv``, ``sys.path[0]`` the
  directory, the environment replaced, not merged) and runs the module as ``__main__``; an uncaught
  exception prints its traceback and is exit code 1, ``sys.exit`` is honoured as the
  interpreter does. Reply: ``started`` (id, pid) or ``failed`` (id, reason). With a
  ``record`` (the job's directory in the backend's ``state``, ``_records``), the server
  writes the job's ``pid`` line there before it replies, the child its own exit code
  as it ends and the server the wait status before it reaps the leader (``_marks``): a
  backend that died meanwhile leaves a job the next one re-adopts as it would a job
  started as a new process.
- ``signal`` (pid, signum): sent to the job's process group only while its leader has
  not been reaped here, so a group id that the kernel recycled is never hit.
- ``exited`` (pid, status, maxrss, cpu), from the server when a job's leader ends: as the
  local backend does for its own children, what the job left in its group is killed
  while the zombie leader still holds the group id, then the leader is reaped with
  ``wait4``; ``status`` is the raw wait status, ``maxrss`` bytes (the child's
  high-water mark starts at its resident size when forked: every page then was its own)
  and ``cpu`` its rusage's user + system seconds.

End of input (the backend closed the socket or died): no more jobs start; the server
waits for the running ones (recording their ends where they have a ``record``), as
jobs started by ``subprocess`` would outlive the backend too, and exits at once
(``os._exit``: tearing down a preloaded interpreter is work for nothing).

What a fork does not reset: modules imported by the preload (or by the engine before
the server forked from it) stay imported (that is the point), with whatever they read
from the environment at import time; a job that needs an import-time variable to differ
from the backend's own environment must not be preloaded. Objects loaded before the
first job are frozen (``gc.freeze``), so a job's collector never touches their pages.
The squash launcher's child (``_launcher._child``) is the same recipe with a file-based
protocol; both run the module through ``_launcher._run_as_main``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

from ..squash._launcher import _preload, _run_as_main
from ._marks import SERVER_NAME, write_exit, write_pid

__all__ = ["MAX_FDS", "receive", "send", "serve_forked"]

MAX_FDS = 2
_MAX_FD = 1 << 20  # past any descriptor a process holds (closerange is close_range(2))
_HEADER = struct.Struct("!I")


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """Send one framed JSON message, with ``fds`` attached to its header."""
    payload = json.dumps(message).encode()
    header = _HEADER.pack(len(payload))
    if fds:
        socket.send_fds(sock, [header], fds)
    else:
        sock.sendall(header)
    sock.sendall(payload)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next message and the descriptors that came with it; ``None`` at end of input."""
    header = b""
    fds: list[int] = []
    while len(header) < _HEADER.size:
        data, more, _, _ = socket.recv_fds(sock, _HEADER.size - len(header), MAX_FDS)
        if not data:
            for fd in [*fds, *more]:
                os.close(fd)
            return None
        header += data
        fds.extend(more)
    (size,) = _HEADER.unpack(header)
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None
        chunks.append(chunk)
        left -= len(chunk)
    message = json.loads(b"".join(chunks))
    return (message if isinstance(message, dict) else {}), fds


def _child(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become ``python -m MODULE ARGS``, then exit with its code."""
    code = 1
    try:
        sock.close()
        signal.set_wakeup_fd(-1)
        _name(os.path.basename(sys.executable))  # as `ps` shows a new interpreter
        os.setsid()  # its own session and process group, signalled as a whole
        if request.get("cgroup"):
            # its memory cgroup first: what it allocates from here on is the job's, under
            # its limit (pages it shares with the server stay the server's)
            with open(str(request["cgroup"]), "w") as procs:
                procs.write("0")
        # What a new interpreter has: only the server's own changes are undone
        # (SIGPIPE and SIGXFSZ stay ignored, as Python sets them at start-up).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        stdin = os.open(os.devnull, os.O_RDONLY)
        out = fds[0]
        err = fds[1] if len(fds) > 1 else out
        for source, target in ((stdin, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
        for fd in {stdin, *fds}:
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})
        _stdio()
        cwd = request.get("cwd")
        if cwd:
            try:
                os.chdir(str(cwd))
            except OSError as exc:  # as subprocess reports it, with the shell's code
                print(f"seqera: cannot start in {cwd!r}: {exc}", file=sys.stderr)
                code = 127
                return
        sys.path[0] = os.getcwd()  # what `python -m` puts first
        code = _run_as_main(str(request["module"]), list(request.get("args") or []))
    except BaseException:  # the set-up failed: say why in the job's log
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        if request.get("record"):  # before it ends: its server may be gone by then
            with contextlib.suppress(BaseException):
                write_exit(Path(str(request["record"])), code & 0xFF)
        os._exit(code)


def _stdio() -> None:
    """New text streams over descriptors 0, 1 and 2, made as a new interpreter makes them
    (``create_stdio`` in CPython's ``pylifecycle.c``): the server's own may be another
    program's (a fork of the engine keeps whatever replaced them there, e.g. a capture)."""
    encoding, _, errors = (os.environ.get("PYTHONIOENCODING") or "").partition(":")
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))  # the job runs `python -m`, no -u
    streams = []
    for fd, original in ((0, sys.__stdin__), (1, sys.__stdout__), (2, sys.__stderr__)):
        default = "backslashreplace" if fd == 2 else getattr(original, "errors", None)
        stream = open(  # noqa: SIM115 - the job's own stream, closed with its process
            fd,
            "r" if fd == 0 else "w",
            encoding=encoding or getattr(original, "encoding", None),
            errors=errors or default,
            closefd=False,
            # stderr is line-buffered, stdout only on a terminal (or with PYTHONUNBUFFERED)
            buffering=-1,
        )
        if fd:
            stream.reconfigure(
                line_buffering=fd == 2 or unbuffered or os.isatty(fd), write_through=unbuffered
            )
        streams.append(stream)
    for name, stream in zip(("stdin", "stdout", "stderr"), streams, strict=True):
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)  # a new interpreter's originals are these


class _Server:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.children: dict[int, str | None] = {}  # pid -> its record directory
        self.accepting = True

    def run(self) -> None:
        wake_read, wake_write = os.pipe()
        for fd in (wake_read, wake_write):
            os.set_blocking(fd, False)
        # A child's end writes to the pipe, which wakes select(): no polling tick.
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        while self.accepting or self.children:
            watched = [wake_read, self.sock.fileno()] if self.accepting else [wake_read]
            ready, _, _ = select.select(watched, [], [], 1.0)
            if wake_read in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
            self._reap()
            if self.sock.fileno() in ready:
                self._serve_one()

    def _serve_one(self) -> None:
        try:
            received = receive(self.sock)
        except OSError:
            received = None
        if received is None:
            self.accepting = False
            return
        message, fds = received
        try:
            if message.get("op") == "spawn":
                self._spawn(message, fds)
            elif message.get("op") == "signal":
                pid, signum = int(message["pid"]), int(message["signum"])
                if pid in self.children:  # not reaped: the group id is still the job's
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signum)
        finally:
            for fd in fds:
                os.close(fd)

    def _spawn(self, message: dict[str, Any], fds: list[int]) -> None:
        if not fds:
            self._reply({"op": "failed", "id": message.get("id"), "reason": "no output streams"})
            return
        try:
            pid = os.fork()
        except OSError as exc:
            self._reply({"op": "failed", "id": message.get("id"), "reason": str(exc)})
            return
        if pid == 0:
            _child(self.sock, message, fds)  # never returns
        record = message.get("record")
        self.children[pid] = str(record) if record else None
        if record:  # before "started": the backend may die the moment it reads it
            with contextlib.suppress(OSError):
                write_pid(Path(str(record)), pid)
        self._reply({"op": "started", "id": message.get("id"), "pid": pid})

    def _reap(self) -> None:
        for pid in list(self.children):
            try:
                ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                self.children.pop(pid, None)
                continue
            if ended is None:
                continue
            record = self.children[pid]
            if record:  # before reaping: while the zombie lasts, a reader waits for this
                killed = ended.si_code != os.CLD_EXITED
                write_exit(Path(record), -ended.si_status if killed else ended.si_status)
            # The zombie leader still holds the group id: this cannot reach a recycled group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            del self.children[pid]
            maxrss = usage.ru_maxrss * 1024  # kilobytes on Linux
            cpu = round(usage.ru_utime + usage.ru_stime, 3)
            self._reply({"op": "exited", "pid": pid, "status": status, "maxrss": maxrss,
                         "cpu": cpu})  # fmt: skip

    def _reply(self, message: dict[str, Any]) -> None:
        if not self.accepting:
            return  # nobody is listening any more
        try:
            send(self.sock, message)
        except OSError:
            self.accepting = False


def serve(sock: socket.socket, entries: list[str]) -> int:
    """Preload ``entries``, say ``ready`` on ``sock``, and serve until its end of input and
    the last job's end; the exit code."""
    _name(SERVER_NAME)
    # Stray prints of a preloaded module go to stderr; stdin is not for them either.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the jobs; the backend ends us
    loaded = _preload(entries)
    # Every job is a fork: what is loaded now is shared, and the collector of a job never
    # walks (and so copies) the preloaded objects' pages (see gc.freeze).
    gc.freeze()
    try:
        send(sock, {"op": "ready", "loaded": sorted(loaded), "pid": os.getpid()})
    except OSError:  # nobody waits for it any more (the engine ended, or took no server)
        return 0
    _Server(sock).run()
    return 0


def serve_forked(sock: socket.socket, entries: list[str]) -> NoReturn:
    """In a fork of the engine's own process (one thread, see ``ForkServer``): undo what
    that process set up that a new interpreter would not have, then :func:`serve`.

    Kept: the modules it had imported (the point: they need no second import) and the
    signals it ignored (a new interpreter inherits those too). Undone: its session (the
    server leads its own, as ``start_new_session`` gives), its other file descriptors
    (``close_fds``), and the Python handlers it had installed.
    """
    code = 1
    try:
        os.setsid()
        keep = sock.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, _MAX_FD)
        signal.set_wakeup_fd(-1)
        for signum in signal.valid_signals():
            with contextlib.suppress(OSError, ValueError, TypeError):
                if callable(signal.getsignal(signum)):
                    signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        code = serve(sock, entries)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        _exit(code)


def _exit(code: int) -> NoReturn:
    # Not sys.exit: tearing down a preloaded interpreter (every module freed one by one)
    # takes longer than all that a server does, and nothing of it is needed.
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _name(name: str) -> None:
    """This process's name in ps and /proc (``comm``): a fork server, or a job's interpreter."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(name[:15])


def main(argv: list[str]) -> int:
    """Serve on the socket ``argv[0]`` after preloading ``argv[1:]``."""
    if not argv or not argv[0].isdigit():
        print("usage: fork server FD [ENTRY...]", file=sys.stderr)
        return 2
    _exit(serve(socket.socket(fileno=int(argv[0])), argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
