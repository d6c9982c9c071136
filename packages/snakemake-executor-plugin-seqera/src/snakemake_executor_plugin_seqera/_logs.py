"""How long the jobs' logs are kept, as snakemake-executor-plugin-slurm keeps its own.

Its rules (``snakemake_executor_plugin_slurm/__init__.py``, 2.x: ``check_active_jobs``,
``shutdown``, ``clean_old_logs``; ``utils.delete_empty_dirs``; ``docs/further.md``, "Log
Files"):

- a successful job's log is deleted as soon as its success is known: it repeats what
  Snakemake already showed (``--slurm-keep-successful-logs`` keeps it); a failed job's
  log is kept;
- at the end of every run, each ``*.log`` under the log directory whose modification time
  is more than ``--slurm-delete-logfiles-older-than`` days (default 10, counted as
  ``days * 86400`` seconds before now) is deleted, then every directory left empty;
  a value <= 0 deletes nothing, and neither does ``--slurm-keep-successful-logs``
  (its code returns before the sweep when either is set).

Here the log directory is the job directory's ``logs/``, and a log is ``*.log`` or, where
PBS copies the error stream back apart, ``*.err``. A failed job's logs, for Snakemake's
error report, are :func:`log_files`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from attrs import frozen

from seqera_core.backends import JobHandle, JobStatus
from seqera_core.errors import SeqeraError

__all__ = ["DEFAULT_DAYS", "LogRetention", "log_files"]

DEFAULT_DAYS = 10
_DAY = 86400
_SUFFIXES = (".log", ".err")


@frozen
class LogRetention:
    """What is deleted from ``directory``, and when.

    Attributes:
        directory: where the jobs' logs are (``<jobdir>/logs``).
        keep_successful: keep a successful job's log, and sweep nothing at the end.
        older_than_days: the age in days past which the end of a run deletes a log;
            <= 0: never.
    """

    directory: Path
    keep_successful: bool = False
    older_than_days: int = DEFAULT_DAYS

    def succeeded(self, paths: Iterable[str | None], warn: Callable[[str], None]) -> None:
        """Delete a successful job's logs (and its own directory, once empty)."""
        if self.keep_successful:
            return
        for text in dict.fromkeys(p for p in paths if p):
            path = Path(text)
            if self.directory not in path.parents:
                continue  # only what this executor wrote
            try:
                path.unlink(missing_ok=True)
                if path.parent != self.directory and not any(path.parent.iterdir()):
                    path.parent.rmdir()
            except OSError as exc:  # a log left behind never fails the job
                warn(f"could not delete the log {path}: {exc}")

    def sweep(self, now: float, warn: Callable[[str], None]) -> int:
        """At the end of a run: delete the logs older than the limit, then the directories
        left empty. Returns how many logs were deleted."""
        if self.keep_successful or self.older_than_days <= 0 or not self.directory.is_dir():
            return 0
        cutoff = self.older_than_days * _DAY
        deleted = 0
        for root, _, files in os.walk(self.directory):
            for name in files:
                path = Path(root, name)
                if path.suffix not in _SUFFIXES:
                    continue
                try:
                    if now - path.stat().st_mtime > cutoff:
                        path.unlink()
                        deleted += 1
                except FileNotFoundError:
                    continue  # another run over this directory took it first
                except OSError as exc:
                    warn(f"could not delete the log {path}: {exc}")
        # bottom-up, so a directory whose only content was empty directories goes too
        for root, _, _ in os.walk(self.directory, topdown=False):
            folder = Path(root)
            try:
                if folder != self.directory and not any(folder.iterdir()):
                    folder.rmdir()
            except OSError:
                continue  # written to meanwhile by a job of another run
        return deleted


def log_files(status: JobStatus, fetch: Callable[[JobHandle], str], directory: Path) -> list[str]:
    """The ended job's logs for Snakemake's error report: its own files or, with no shared
    file system (ECS), a copy in ``directory`` of what the backend can ``fetch``."""
    handle = status.handle
    paths = list(dict.fromkeys(p for p in (handle.stdout, handle.stderr) if p))
    if paths:
        return paths
    # No shared filesystem (ECS): keep a local copy of what the backend can fetch.
    try:
        text = fetch(handle)
    except SeqeraError as exc:
        text = f"(the job's log could not be fetched: {exc})\n"
    path = directory / f"{handle.name}.{handle.native_id.rsplit('/', 1)[-1]}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return [str(path)]
