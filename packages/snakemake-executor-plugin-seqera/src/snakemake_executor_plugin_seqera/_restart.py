"""What a restarted Snakemake run needs: job keys that outlive a run, and signals.

A job's submission key is made of what the job is: the workflow's directory, the rule (or
group), its outputs and its attempt (:func:`submission_key`), so the run after a crash
asks the backend for the same keys and adopts what the dead run left (see
:mod:`seqera_core.resume`).

Signals, as Snakemake itself defines them (``snakemake/scheduling/job_scheduler.py``
installs ``exit_gracefully`` for SIGTERM; its FAQ, "How do I exit a running Snakemake
workflow?": Ctrl-C kills the running jobs, a TERM signal stops the scheduling of new
jobs and waits for the running ones): SIGTERM keeps that meaning. SIGHUP (the terminal
closed) had none and killed Snakemake at once, leaving every job it had submitted to run
unwatched; it now does what Ctrl-C does (:class:`Interrupts`): the scheduler's
``KeyboardInterrupt`` path cancels every active job through the executor, and the run
ends with 128 + the signal (130, 129), as ``seqera run`` and cwltool-seqera end.

Ctrl-C often comes twice: ``uv run`` forwards a SIGINT it gets to its child when it is
not attached to a terminal (astral-sh/uv#13925), so a group's SIGINT reaches Snakemake
once from the sender and once from uv; an impatient user presses it again. A second
``KeyboardInterrupt`` raised while the first is being handled (in the middle of the
cancellation) printed its traceback and could leave jobs running. :class:`Interrupts`
lets the first SIGINT raise as Python's own handler does and ignores the others while
the run's jobs are cancelled (and for a moment after the first, so a forwarded copy that
lands before the cancellation begins is not a second interrupt).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from snakemake_interface_executor_plugins.jobs import JobExecutorInterface

from seqera_core.resume import job_key

__all__ = ["Interrupts", "run_onerror", "submission_key", "unfinished"]

# The handlers replaced: Python's own for SIGINT (KeyboardInterrupt), the default for
# SIGHUP (the process ends at once, its jobs left running).
_OWN: dict[int, Any] = {signal.SIGINT: signal.default_int_handler, signal.SIGHUP: signal.SIG_DFL}
# How long after the first SIGINT another one is taken for its copy (uv forwards at once).
_COPY_SECONDS = 2.0


def submission_key(job: JobExecutorInterface, workdir: Path) -> str:
    """The key of this attempt of ``job``: the same in every run of the workflow."""
    outputs = sorted(str(path) for path in job.output)
    return job_key("snakemake", str(workdir), job.name, outputs, job.attempt)


def unfinished(persistence: Any, jobs: Iterable[JobExecutorInterface]) -> set[int]:
    """The ids of the jobs whose outputs Snakemake still marks incomplete with the id
    of a submission: a run submitted them and Snakemake never took their result.

    ``external_jobids`` is Snakemake's persistence beyond the executor interface (whose
    ``dag.incomplete_external_jobid`` answers nothing under ``--rerun-incomplete``, the
    flag a restart after a job ended unwatched needs); without it, nothing is known.
    """
    lookup = getattr(persistence, "external_jobids", None)
    if not callable(lookup):
        return set()
    found = set()
    for job in jobs:
        try:
            if lookup(job):
                found.add(job.jobid)
        except Exception:  # a marker that cannot be read says nothing
            continue
    return found


class Interrupts:
    """The run's SIGINT and SIGHUP handlers (see the module's docstring), installed from
    the main thread only and only over Python's own (an embedding program's handler, or
    ``nohup``'s SIG_IGN, is left alone); ``cancelling`` is set by the executor while it
    cancels the run's jobs, :meth:`restore` puts the earlier handlers back."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self.first: float | None = None
        self.signum: int = signal.SIGINT
        self.cancelling = False
        self._installed: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, default in _OWN.items():
            if signal.getsignal(signum) is default:
                self._installed[signum] = default
                signal.signal(signum, self._handle)

    @property
    def exit_status(self) -> int:
        """128 + the signal, as a shell reports a command it ended (130 for Ctrl-C)."""
        return 128 + self.signum

    def restore(self) -> None:
        """The handlers from before (the run is over)."""
        if threading.current_thread() is threading.main_thread():
            for signum, handler in self._installed.items():
                signal.signal(signum, handler)
            self._installed = {}

    def _handle(self, signum: int, frame: object) -> None:
        now = self._clock()
        if self.cancelling or (self.first is not None and now - self.first < _COPY_SECONDS):
            return  # the same Ctrl-C again: the cancellation goes on
        self.first, self.signum = now, signum
        raise KeyboardInterrupt


def run_onerror(workflow: Any, logger: Any) -> None:
    """The workflow's ``onerror`` hook, as Snakemake runs it when its scheduler returns
    after Ctrl-C (``Workflow.execute`` in snakemake/workflow.py: not in a dry run, not
    with ``--no-hooks``). Snakemake keeps the hook in a private attribute; a Snakemake
    without it runs none."""
    hook = getattr(workflow, "_onerror", None)
    if hook is None or workflow.dryrun or workflow.execution_settings.no_hooks:
        return
    try:
        hook(workflow.logger_manager.get_logfile())
    except Exception as exc:  # the user's hook: said, and the run still ends as it must
        logger.error(f"seqera: the workflow's onerror handler failed: {exc}")
