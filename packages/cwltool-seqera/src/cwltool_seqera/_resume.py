"""At start, what a dead ``cwltool-seqera`` over the same work directory left running.

cwltool's own way to resume is ``--cachedir``: each job's output directory is
``CACHEDIR/<hash of its command line and inputs>``, and cwltool reuses it when the file
beside it, ``<dir>.status``, reads ``success`` (``cwltool/command_line_tool.py``,
``CommandLineTool.job``). While a job runs, its cwltool holds an exclusive ``flock`` on
that file; a cwltool that finds no ``success`` takes the lock, *deletes* the directory and
runs the job again. The dead run's lock died with it, so a rerun would delete the
directory a job of the dead run is still writing to and send a second copy.

So before cwltool starts, :func:`resume` takes the dead run's place in that protocol: for
each job of a dead run whose output directory is in this run's cache, it takes the lock
cwltool would wait on, follows the job through the poller, writes ``success`` if the job
succeeded (cwltool then uses its outputs: no second copy) and releases the lock either
way (a job that failed runs again, as cwltool would run it). Jobs of a dead run whose
output directory no run can find again (no ``--cachedir``: cwltool makes a new one each
run) are cancelled at once: a rerun runs those steps again, as plain cwltool does, and no
job of the dead run keeps running beside them.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tarfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from seqera_core.backends import JobHandle, JobState
from seqera_core.errors import SeqeraError
from seqera_core.resume import Orphan
from seqera_core.session import Session

from ._poller import JobPoller
from ._staging import S3Staging, StagingError

__all__ = ["cachedir", "resume"]

_log = logging.getLogger("cwltool")


def cachedir(argv: Sequence[str]) -> Path | None:
    """The ``--cachedir`` cwltool is given in ``argv`` (absolute), if any."""
    for n, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--cachedir" and n + 1 < len(argv):
            return Path(os.path.abspath(argv[n + 1]))
        if arg.startswith("--cachedir="):
            return Path(os.path.abspath(arg.partition("=")[2]))
    return None


def _in_cache(orphan: Orphan, cache: Path | None) -> bool:
    workdir = orphan.workdir
    return cache is not None and workdir is not None and workdir.parent == cache


def _hold(status: Path) -> IO[str] | None:
    """``<dir>.status`` opened and locked as cwltool locks it; None when it already says
    ``success`` or someone holds it."""
    file = status.open("a+")
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        file.seek(0)
        if file.read() == "success":
            file.close()
            return None
    except OSError:
        file.close()
        return None
    return file


def _away(session: Session, handle: JobHandle) -> bool:
    """Whether the job ran where this machine's files are not (ECS): its outputs are in S3."""
    unshared = getattr(session.backend, "unshared", ())  # a routing backend's cloud ones
    return not session.entry.shared_fs or handle.backend in unshared


def _fetched(staging: S3Staging | None, orphan: Orphan, workdir: Path) -> bool:
    """Bring an adopted job's outputs home from S3 as its own run would have (False, and
    why logged, when they cannot be: it then runs again rather than leave an empty
    directory that says ``success``)."""
    name = orphan.meta.get("name", orphan.key)
    if staging is None:
        _log.error("[job %s] its outputs are in S3 and no --seqera-s3-prefix is given", name)
        return False
    stdout = orphan.meta.get("stdout", os.devnull)
    stderr = orphan.meta.get("stderr", os.devnull)
    try:
        staging.download_outputs(staging.job(orphan.key), str(workdir), stdout, stderr)
    except (StagingError, OSError, tarfile.TarError) as err:
        _log.error("[job %s] %s", name, err)
        return False
    return True


def _follow(
    poller: JobPoller, session: Session, orphan: Orphan, lock: IO[str], staging: S3Staging | None
) -> None:
    try:
        assert orphan.handle is not None and orphan.workdir is not None
        result = poller.follow(orphan.handle)
        session.settled([orphan.handle])
        if result.state is JobState.SUCCEEDED and (
            not _away(session, orphan.handle) or _fetched(staging, orphan, orphan.workdir)
        ):
            lock.seek(0)
            lock.truncate()
            lock.write("success")
            lock.flush()
            _log.info("[job %s] an earlier run's job ended: outputs kept", orphan.meta.get("name"))
    except Exception:  # the lock is released whatever happens, or cwltool waits forever
        _log.warning("following an earlier run's job failed", exc_info=True)
    finally:
        with contextlib.suppress(OSError):
            lock.close()


def resume(
    session: Session, poller: JobPoller, argv: Sequence[str], staging: S3Staging | None = None
) -> list[threading.Thread]:
    """Adopt the dead runs' jobs cached in this run's ``--cachedir``, cancel the others
    (see the module's docstring); returns the threads following the adopted ones. A job
    that ran in the cloud (its files through S3) has its outputs fetched with ``staging``
    before its directory says ``success``."""
    cache = cachedir(argv)
    try:
        orphans = session.orphans()
        cancelled = session.cancel_orphans(lambda o: not _in_cache(o, cache))
    except SeqeraError as err:
        _log.warning("seqera: the jobs an earlier run left could not be looked up: %s", err)
        return []
    if cancelled:
        _log.warning("seqera: cancelled %d job(s) an earlier run left running", len(cancelled))
    threads = []
    for orphan in orphans:
        if orphan.handle is None or orphan.done or not _in_cache(orphan, cache):
            continue
        lock = _hold(Path(f"{orphan.workdir}.status"))
        if lock is None:
            continue
        session.adopt([orphan])
        _log.info("[job %s] following %s, left by an earlier run", orphan.meta.get("name"),
                  orphan.handle.native_id)  # fmt: skip
        thread = threading.Thread(target=_follow, args=(poller, session, orphan, lock, staging),
                                  daemon=True)  # fmt: skip
        thread.start()
        threads.append(thread)
    return threads
