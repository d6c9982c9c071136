"""A squashed job's own processes, forked from the launcher (``_launcher.py``): the guard
that kills the job's process group when the launcher dies, and the job itself, which
either runs its script or, forked from a launcher that preloaded its package, runs
``python -m MODULE ARGS`` in place and writes its exit-code file as the script would.

Standard library only, like the launcher: the backend copies this file beside it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import runpy
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

__all__ = ["guard", "run_as_main"]

_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def _die_with_parent(parent: int) -> None:
    """Have the kernel send SIGHUP when the launcher dies (Linux ``PR_SET_PDEATHSIG``)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGHUP), 0, 0, 0)
    if os.getppid() != parent:  # it died before the request was in place
        os.killpg(0, signal.SIGKILL)


def guard(
    entry: dict[str, Any],
    fork: dict[str, Any] | None,
    parent: int,
    exit_name: str,
    procs: str | None = None,
) -> None:
    """In the forked guard: run the job as its own child, kill it if the launcher dies,
    and end as it ended (its exit code, or the signal that killed it). With ``procs`` (a
    memory cgroup's ``cgroup.procs``) the guard joins it first: the job is born inside."""
    code = 1
    try:
        os.setsid()  # its own session and process group, killed as a whole
        if procs is not None:
            with open(procs, "w") as joining:
                joining.write("0")
        # the launcher signals the whole group: the guard waits for the job to end
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, lambda *_: os.killpg(0, signal.SIGKILL))
        _die_with_parent(parent)
        child = os.fork()
        if child == 0:
            _job(entry, fork, exit_name)  # never returns
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except ChildProcessError:
                status = 1 << 8
                break
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig not in (signal.SIGKILL, signal.SIGSTOP):  # these two cannot be caught
                signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
            os.kill(os.getpid(), sig)  # end as the job ended
        code = os.WEXITSTATUS(status)
    finally:
        os._exit(code)


def _job(entry: dict[str, Any], fork: dict[str, Any] | None, exit_name: str) -> None:
    """In the job's process: become the job, as its script would, then exit with its code."""
    code = 127
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)  # exec keeps an ignored signal ignored
        _unblock_sigchld()
        stdin = os.open(os.devnull, os.O_RDONLY)
        out = os.open(entry["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = out
        if entry["stderr"] != entry["stdout"]:
            err = os.open(entry["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for source, target in ((stdin, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
        if fork is None:
            os.chdir(entry["dir"])
            os.execv(entry["script"], [entry["script"]])  # never returns on success
        code = _run_module(entry, fork, exit_name)
    except BaseException:  # the script cannot start: what Popen would call an OSError
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


def _run_module(entry: dict[str, Any], fork: dict[str, Any], exit_name: str) -> int:
    os.environ.update({str(k): str(v) for k, v in (fork.get("env") or {}).items()})
    os.chdir(fork.get("cwd") or entry["dir"])
    code = run_as_main(str(fork["module"]), fork.get("args") or [])
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    exit_file = Path(entry["dir"]) / exit_name
    partial = exit_file.with_name(exit_name + ".part")
    partial.write_text(f"{code}\n")
    os.replace(partial, exit_file)
    return code


def run_as_main(module: str, args: list[Any]) -> int:
    """Run ``module`` in this process as ``python -m MODULE ARGS`` would; its exit status
    (the fork server's children run jobs through this too)."""
    sys.argv = [module, *map(str, args)]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException:  # the job's own failure, reported as its exit code
        traceback.print_exc()
        return 1


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
