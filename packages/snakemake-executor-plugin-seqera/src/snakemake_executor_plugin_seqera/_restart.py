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
unwatched; it now does what Ctrl-C does (:func:`hangup_cancels`): the scheduler's
``KeyboardInterrupt`` path cancels every active job through the executor.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from snakemake_interface_executor_plugins.jobs import JobExecutorInterface

from seqera_core.resume import job_key

__all__ = ["hangup_cancels", "submission_key", "unfinished"]


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


def _hangup(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def hangup_cancels() -> None:
    """SIGHUP raises KeyboardInterrupt in the main thread, as Ctrl-C does (see the
    module's docstring); nothing where the executor is not built in the main thread."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGHUP, _hangup)
