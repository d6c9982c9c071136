"""How a local job becomes a process: its log files, its environment, then a fork of the
fork server or a new process (``subprocess``, in a new session), wrapped when its backend
keeps records.

The job's leader is started in a new session, so signals go to the whole process group.
A job whose argv is ``PYTHON -m MODULE ...`` of a package the fork server preloaded
(``_forking``) starts as a fork of that server instead of a new interpreter: same log
files, directory, environment, session and exit code; its ``ru_maxrss`` counts from the
fork, since every page resident then is the job's own. Every other job starts as a new
process. A backend with a ``state`` directory keeps both kinds re-adoptable: a new
process runs in a ``sh`` wrapper (``_records.wrap``) that writes its exit status; a fork
is given its record directory, where the server and the job write the same (``_marks``).
A command that cannot start fails as a shell reports it: 127 not found, 126 otherwise.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Sequence
from typing import IO

from attrs import frozen

from ...labels import env_name
from ._cgroup import MemoryCgroups, joined
from ._forking import ForkServer
from ._job import LocalJob
from ._procfs import own_peak_rss
from ._records import JobRecords, wrap

__all__ = ["NotStarted", "environment", "launch"]


@frozen
class NotStarted:
    """Why a job did not start: its exit code (as a shell's), if any, and the reason."""

    code: int | None
    reason: str


def environment(job: LocalJob) -> dict[str, str]:
    """The job's environment: this process's, the job's identity and labels, its own."""
    env = dict(os.environ)
    env["SEQERA_JOB_ID"] = job.handle.native_id
    env["SEQERA_JOB_NAME"] = job.spec.name
    env["SEQERA_CPUS"] = str(job.cpus)
    for key, value in {**job.spec.request.labels, **job.spec.labels}.items():
        env[env_name(key)] = value
    env.update(job.spec.env)
    return env


def launch(
    job: LocalJob,
    *,
    forker: ForkServer | None,
    records: JobRecords | None,
    calls: Counter[str],
    cgroups: MemoryCgroups | None = None,
) -> NotStarted | None:
    """Start ``job``'s leader; on success its ``pid`` (and ``pidfd``, ``process`` or
    ``forked``) are set and ``None`` is returned. Counts ``spawn`` and ``fork`` in ``calls``.
    With ``cgroups`` and a memory request, the job starts in a cgroup of its own holding
    the request as its limit (``job.cgroup``), joined before its command runs (a fork of
    the server joins it first thing)."""
    spec = job.spec
    if cgroups is not None and job.memory:
        try:
            job.cgroup = cgroups.make(f"job-{job.handle.native_id}", job.memory)
        except OSError as exc:
            return NotStarted(None, f"cannot make its memory cgroup: {exc}")
    procs = None if job.cgroup is None or cgroups is None else cgroups.procs(job.cgroup)
    calls["spawn"] += 1
    job.baseline_rss = own_peak_rss()
    stdout, stderr = job.handle.stdout, job.handle.stderr
    assert stdout is not None and stderr is not None
    try:
        out = open(stdout, "wb")  # noqa: SIM115 - handed to the child, closed below
    except OSError as exc:
        return NotStarted(None, f"cannot open a log file: {exc}")
    try:
        err = out if stderr == stdout else open(stderr, "wb")  # noqa: SIM115
    except OSError as exc:
        out.close()
        return NotStarted(None, f"cannot open a log file: {exc}")
    try:
        record = None if records is None else str(records.directory(job.handle.native_id))
        if _fork(job, forker, out, err, procs, record):
            calls["fork"] += 1
            return None
        env = environment(job)
        argv: Sequence[str] = spec.command
        if records is not None:
            exit_file = records.exit_file(job.handle.native_id)
            argv = wrap(spec.command, exit_file, spec.workdir, env.get("PATH"))
        if procs is not None:
            argv = joined(procs, list(argv))
        job.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=spec.workdir,
            env=env,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        # The shell's conventions: 127 not found, 126 found but not executable.
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        reason = f"cannot start {spec.command[0]!r}: {exc}"
        err.write(f"seqera: {reason}\n".encode())
        return NotStarted(code, reason)
    finally:
        out.close()
        if err is not out:
            err.close()
    job.pid = job.process.pid
    try:
        job.pidfd = os.pidfd_open(job.process.pid)
    except (AttributeError, OSError):
        job.pidfd = None
    return None


def _fork(
    job: LocalJob,
    forker: ForkServer | None,
    out: IO[bytes],
    err: IO[bytes],
    procs: str | None,
    record: str | None,
) -> bool:
    """Start ``job`` as a fork of the preloaded server, if it is one it can start."""
    if forker is None or not forker.accepts(job.spec.command):
        return False
    streams = [out.fileno()] if err is out else [out.fileno(), err.fileno()]
    pid = forker.spawn(job.spec.command, job.spec.workdir, environment(job), streams, procs, record)
    if pid is None:
        return False
    job.forked, job.pid = True, pid
    job.baseline_rss = 0  # the child's high-water mark starts at its own size
    return True
