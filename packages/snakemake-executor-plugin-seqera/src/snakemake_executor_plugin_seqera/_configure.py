"""The executor's ``--seqera-*`` settings as seqera-core's config keys (flags over the
config files and ``SEQERA_*``, as every entry point merges them), and the run's session
opened on them."""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from seqera_core.backends.local import ForkServer
from seqera_core.config import Config, key_value, load_config
from seqera_core.history import DEFAULT_HISTORY
from seqera_core.session import Session

from ._preload import PRELOAD
from .settings import ExecutorSettings

__all__ = ["config_from", "open_session"]


def _listed(items: Sequence[str] | str | None) -> list[str] | None:
    """A list setting's items. ConfigArgParse may hand over a list as its text (from
    ``$SNAKEMAKE_SEQERA_*``, and seen for a ``nargs="+"`` flag too): "[a, b]" or "a,b"."""
    if not items:
        return None
    if isinstance(items, str):
        loaded = yaml.safe_load(items) if items.lstrip().startswith("[") else None
        items = [str(p) for p in loaded] if isinstance(loaded, list) else items.split(",")
    return [item.strip() for item in items if item.strip()] or None


def _labels(pairs: Sequence[str] | str | None) -> dict[str, str] | None:
    items = _listed(pairs)
    return None if items is None else dict(key_value("--seqera-labels", p) for p in items)


def config_from(settings: ExecutorSettings) -> Config:
    """The run's config: the settings as flags over files and environment."""
    flags = {
        "backend": settings.backend,
        "platform": None if settings.platform is None else str(settings.platform),
        "resolver.url": settings.resolver_url,
        "resolver.token": settings.resolver_token,
        "history": settings.history,
        "local.cpus": settings.local_cores,
        "labels": _labels(settings.labels),
        "ecs.cluster": settings.ecs_cluster,
        "ecs.execution_role": settings.ecs_execution_role,
        "ecs.task_role": settings.ecs_task_role,
        "ecs.subnets": settings.ecs_subnets,
        "ecs.security_groups": settings.ecs_security_groups,
        "ecs.capacity_provider": settings.ecs_capacity_provider,
        "ecs.logs_group": settings.ecs_log_group,
        "ecs.region": settings.ecs_region,
        "batch.queue": settings.batch_queue,
        "batch.job_role": settings.batch_job_role,
        "batch.execution_role": settings.batch_execution_role,
        "batch.platform": settings.batch_platform,
        "batch.region": settings.batch_region,
        "squash.mode": settings.squash,
        "squash.max_jobs": settings.squash_max_jobs,
        "squash.max_time": settings.squash_max_time,
        "squash.cpus": settings.squash_cpus,
        "sizing.shrink_self_sizing": settings.shrink_self_sizing or None,
        "slurm.tmp": settings.slurm_tmp,
        "slurm.qos": settings.slurm_qos,
        "slurm.reservation": settings.slurm_reservation,
        "slurm.clusters": settings.slurm_clusters,
        "slurm.requeue": settings.slurm_requeue or None,
        "slurm.signal": settings.slurm_signal,
        "slurm.jobname_prefix": settings.slurm_jobname_prefix,
        "slurm.no_account": settings.slurm_no_account or None,
        "route.backends": _listed(settings.route_backends),
        "route.objective": settings.route_objective,
        "route.pin": _listed(settings.route_pin),
        "route.max_cost_per_hour_saved": settings.route_max_cost_per_hour_saved,
    }
    return load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)


def open_session(
    settings: ExecutorSettings,
    workdir: Path,
    jobdir: Path,
    run_id: str,
    server: ForkServer | None,
    warn: Callable[[str], None],
) -> Session:
    """The run's session: its config from ``settings``, its jobs and ledger in ``jobdir``."""
    return Session(
        config_from(settings),
        "snakemake",
        run_id=run_id,
        work_dir=jobdir,
        metadata={
            "run-id": run_id,
            "user": getpass.getuser(),
            "project": workdir.name,
        },
        # Every job is `python -m snakemake ...`: a squashed allocation's launcher, or
        # the local backend's fork server, loads Snakemake and its plugins once and
        # starts each job as a fork of itself.
        preload=PRELOAD,
        fork_server=server,
        warn=warn,
        ledger=jobdir / "runs",
        # recorded for the summary and `seqera report` even without --seqera-history,
        # which alone makes jobs sized from the history
        record_to=DEFAULT_HISTORY,
    )
