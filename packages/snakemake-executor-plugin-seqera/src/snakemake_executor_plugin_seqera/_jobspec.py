"""The JobSpec of a Snakemake job whose resources seqera-core prepared: its name, command,
log files, submission key and, where its backend needs them, its image and staged form."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs
from attrs import frozen
from snakemake_interface_executor_plugins.jobs import JobExecutorInterface

from seqera_core.backends import JobSpec
from seqera_core.pipeline import Prepared

from ._jobcommand import command
from ._restart import submission_key
from ._staging import staged_form
from .resources import RUNNER_MEMORY

__all__ = ["JobLayout", "job_spec"]


@frozen
class JobLayout:
    """What every job of a run shares, fixed when the executor starts.

    Attributes:
        jobdir: the run's job directory (each job's logs under ``logs/``).
        run_id: the run's id (the first 8 characters name each attempt's log).
        shared: the backend shares this host's file system (logs and the working
            directory are this host's paths).
        apart: the errors get their own file (PBS copies each stream back on its own).
        forks: jobs go as argv where they can start as forks of a preloaded Snakemake.
        image: the image of a job that runs Snakemake itself (no shared file system).
        staged: a routing backend with a cloud candidate, and Snakemake stages the files:
            each job carries its staged form.
    """

    jobdir: Path
    run_id: str
    shared: bool
    apart: bool
    forks: bool
    image: str
    staged: bool


def job_spec(
    job: JobExecutorInterface,
    prepared: Prepared,
    layout: JobLayout,
    *,
    text: str,
    env: Mapping[str, str],
    workdir: Path,
) -> JobSpec:
    """The spec of ``job`` (``text``: its command line, ``env``: its environment,
    ``workdir``: Snakemake's working directory, absolute)."""
    name = f"{job.name}-{job.jobid}" if not job.is_group() else f"group-{job.jobid}"
    logdir = layout.jobdir / "logs" / name
    logdir.mkdir(parents=True, exist_ok=True)
    # one log per attempt: a failed attempt's log is kept when a retry succeeds
    log = logdir / f"{layout.run_id[:8]}.{job.attempt}.log"
    shared = layout.shared
    # One log for both streams, as the Slurm plugin keeps it; PBS copies each stream
    # back on its own, so there the errors get their own file.
    apart = layout.apart
    request = prepared.request
    if request.memory is not None and request.memory < RUNNER_MEMORY:
        # a resolver sized the rule's command alone; the job also runs Snakemake
        request = attrs.evolve(request, memory=RUNNER_MEMORY)
    if not shared:
        # The job runs Snakemake itself: the task's image is Snakemake's, whatever
        # image the rule's own command uses.
        request = attrs.evolve(request, container=layout.image)
    spec = JobSpec(
        name=f"smk-{name}",
        command=command(text, squashed=layout.forks),
        request=request,
        workdir=str(workdir) if shared else None,
        env=env,
        labels=prepared.labels,
        stdout=str(log) if shared else None,
        stderr=(str(log.with_suffix(".err")) if apart else str(log)) if shared else None,
        key=submission_key(job, workdir),
    )
    if layout.staged:
        here, image = spec, layout.image
        spec = attrs.evolve(spec, staged=lambda: staged_form(here, text, image))
    return spec
