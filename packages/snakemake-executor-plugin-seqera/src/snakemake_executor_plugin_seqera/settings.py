"""``--seqera-*`` settings (each also ``$SNAKEMAKE_SEQERA_*``), and the plugin's common settings.

A setting left unset falls back to seqera's own configuration (``SEQERA_*`` variables,
``seqera.yaml``, ``~/.config/seqera/config.yaml``), then to the built-in default.
"""

# No `from __future__ import annotations` and no `X | None`: Snakemake turns each field
# type into an argparse type at run time, and only understands typing.Optional/List.
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from snakemake_interface_executor_plugins.settings import CommonSettings, ExecutorSettingsBase

from seqera_core.backends.local import ForkServer
from seqera_core.backends.registry import BACKENDS

from ._preload import early_fork_server

__all__ = ["ExecutorSettings", "common_settings"]

# read from the registry: every installed backend (a third-party one too) is a choice
BACKEND_CHOICES = tuple(BACKENDS)


def _setting(help: str, *, env_var: bool = True, **extra: object) -> dict[str, object]:
    return {"help": help, "env_var": env_var, "required": False, **extra}


@dataclass
class ExecutorSettings(ExecutorSettingsBase):
    """Where jobs go, how they are checked and labelled, and each backend's own options."""

    backend: Optional[str] = field(
        default=None,
        metadata=_setting(
            f"Where jobs run: {', '.join(BACKEND_CHOICES)} (default: local).",
            choices=BACKEND_CHOICES,
        ),
    )
    platform: Optional[Path] = field(
        default=None,
        metadata=_setting(
            "Platform definition (YAML): queues and their limits. A job no queue can run "
            "fails before submission, with the reason."
        ),
    )
    resolver_url: Optional[str] = field(
        default=None,
        metadata=_setting("URL of a resource resolver (e.g. seqera-sidecar serve)."),
    )
    resolver_token: Optional[str] = field(
        default=None,
        metadata=_setting("Bearer token for the resolver; prefer the environment variable."),
    )
    history: Optional[str] = field(
        default=None,
        metadata=_setting(
            "Task history (a SQLite path, or a postgresql:// URL): jobs are sized from it "
            "(peak memory and run time per rule) and each finished job is recorded in it."
        ),
    )
    report: Optional[Path] = field(
        default=None,
        metadata=_setting(
            "Write the run's HTML report (requested vs used, waste, the right-sizer's "
            "advice) here at the end; without a history, one is kept in the job directory."
        ),
    )
    labels: Optional[List[str]] = field(
        default=None,
        metadata=_setting(
            "Run labels as KEY=VALUE, e.g. project=rnaseq team=genomics.", nargs="+", type=str
        ),
    )
    queue: Optional[str] = field(
        default=None,
        metadata=_setting(
            "Default Slurm partition or PBS queue for rules that set no slurm_partition."
        ),
    )
    account: Optional[str] = field(
        default=None,
        metadata=_setting("Default account for rules that set no slurm_account."),
    )
    jobdir: Optional[Path] = field(
        default=None,
        metadata=_setting(
            "Directory for job scripts and logs, visible from the compute nodes "
            "(default .snakemake/seqera in the working directory)."
        ),
    )
    keep_successful_logs: bool = field(
        default=False,
        metadata=_setting(
            "Keep the log of every successful job (by default it is deleted once the job "
            "succeeds, as --slurm-keep-successful-logs does; a failed job's is kept). Also "
            "turns off --seqera-delete-logfiles-older-than."
        ),
    )
    delete_logfiles_older_than: Optional[int] = field(
        default=None,
        metadata=_setting(
            "At the end of each run, delete the job logs older than this many days "
            "(default 10; 0 or less: none), as --slurm-delete-logfiles-older-than does."
        ),
    )
    local_cores: Optional[int] = field(
        default=None,
        metadata=_setting("Cores the local backend shares between jobs (default: all)."),
    )
    shrink_self_sizing: bool = field(
        default=False,
        metadata=_setting(
            "Let the right-sizer size a rule whose command, run: block or script reads "
            "resources.mem_mb below what it declares (by default it never does)."
        ),
    )
    squash: Optional[str] = field(
        default=None,
        metadata=_setting(
            "Put jobs together on slurm, pbs or torque: off (default), array (one "
            "sbatch --array / qsub -J per batch of same-shape jobs) or squash (small "
            "jobs with a runtime share allocations run by a launcher).",
            choices=("off", "array", "squash"),
        ),
    )
    squash_max_jobs: Optional[int] = field(
        default=None,
        metadata=_setting("Most jobs in one array call or squashed allocation (default 100)."),
    )
    squash_max_time: Optional[str] = field(
        default=None,
        metadata=_setting("Longest squashed allocation, e.g. 1h or 02:00:00 (default 1h)."),
    )
    squash_cpus: Optional[int] = field(
        default=None,
        metadata=_setting(
            "Cores of a squashed allocation (default: as many as its jobs can use at once, "
            "at most the largest node of their partition as sinfo reports it, within that "
            "node's memory; where the scheduler does not say (PBS, Torque) the largest job's)."
        ),
    )
    slurm_tmp: Optional[str] = field(
        default=None,
        metadata=_setting(
            "Send a rule's disk as sbatch --tmp: auto (default: only where the partition's "
            "nodes declare that much TmpDisk, else a note), always, or never.",
            choices=("auto", "always", "never"),
        ),
    )
    slurm_qos: Optional[str] = field(
        default=None, metadata=_setting("sbatch --qos for every job (a rule's qos wins).")
    )
    slurm_reservation: Optional[str] = field(
        default=None, metadata=_setting("sbatch --reservation for every job.")
    )
    slurm_clusters: Optional[str] = field(
        default=None,
        metadata=_setting(
            "sbatch/squeue/scancel --clusters for every job (a rule's clusters wins)."
        ),
    )
    slurm_requeue: bool = field(
        default=False, metadata=_setting("sbatch --requeue: Slurm requeues preempted jobs.")
    )
    slurm_signal: Optional[str] = field(
        default=None,
        metadata=_setting(
            "sbatch --signal, e.g. B:USR2@30: the job's shell gets SIGUSR2 30 s before its "
            "time limit, to save its state."
        ),
    )
    slurm_jobname_prefix: Optional[str] = field(
        default=None,
        metadata=_setting("Prefix of every job name (letters, digits, _ or -; at most 50)."),
    )
    slurm_no_account: bool = field(
        default=False,
        metadata=_setting("Send no --account where a rule names none (none is guessed)."),
    )
    route_backends: Optional[List[str]] = field(
        default=None,
        metadata=_setting(
            "Backends a route run sends each job between (default: local slurm).",
            nargs="+",
            type=str,
        ),
    )
    route_objective: Optional[str] = field(
        default=None,
        metadata=_setting(
            "What a route run sends each job by: finish (where it ends first, default), "
            "cost (where it costs least, the platform's rates) or cost-per-hour-saved (the "
            "cheapest unless a costlier backend saves time for at most "
            "--seqera-route-max-cost-per-hour-saved per hour saved).",
            choices=("finish", "cost", "cost-per-hour-saved"),
        ),
    )
    route_max_cost_per_hour_saved: Optional[str] = field(
        default=None,
        metadata=_setting(
            "AMOUNT >= 0: the most extra cost per hour of finish time saved that the "
            "cost-per-hour-saved objective pays.",
        ),
    )
    route_pin: Optional[List[str]] = field(
        default=None,
        metadata=_setting(
            "RULE=BACKEND: a route run always sends that rule's jobs there.",
            nargs="+",
            type=str,
        ),
    )
    image: Optional[str] = field(
        default=None,
        metadata=_setting(
            "Container image of ECS and AWS Batch jobs (default: snakemake/snakemake of "
            "this version)."
        ),
    )
    ecs_cluster: Optional[str] = field(
        default=None, metadata=_setting("ECS cluster name or ARN (backend ecs).")
    )
    ecs_execution_role: Optional[str] = field(
        default=None, metadata=_setting("ECS task execution role ARN (backend ecs).")
    )
    ecs_task_role: Optional[str] = field(
        default=None, metadata=_setting("ECS task role ARN the jobs run as (backend ecs).")
    )
    ecs_subnets: Optional[List[str]] = field(
        default=None,
        metadata=_setting("Subnet ids (default: the default VPC's).", nargs="+", type=str),
    )
    ecs_security_groups: Optional[List[str]] = field(
        default=None,
        metadata=_setting("Security group ids (default: the default VPC's).", nargs="+", type=str),
    )
    ecs_capacity_provider: Optional[str] = field(
        default=None, metadata=_setting("ECS Managed Instances capacity provider name.")
    )
    ecs_log_group: Optional[str] = field(
        default=None, metadata=_setting("CloudWatch Logs group (default /aws/ecs/seqera).")
    )
    ecs_region: Optional[str] = field(
        default=None, metadata=_setting("AWS region (default: boto3's own chain).")
    )
    batch_queue: Optional[str] = field(
        default=None, metadata=_setting("AWS Batch job queue (backend batch).")
    )
    batch_job_role: Optional[str] = field(
        default=None, metadata=_setting("IAM role ARN AWS Batch jobs run as (backend batch).")
    )
    batch_execution_role: Optional[str] = field(
        default=None, metadata=_setting("AWS Batch execution role ARN (needed on Fargate).")
    )
    batch_platform: Optional[str] = field(
        default=None, metadata=_setting("AWS Batch job definitions' platform: EC2 or FARGATE.")
    )
    batch_region: Optional[str] = field(
        default=None, metadata=_setting("AWS region of AWS Batch (default: boto3's chain).")
    )

    def __post_init__(self) -> None:
        # The earliest code of this plugin that Snakemake runs for the chosen executor
        # only, before its own start-up is over: see _preload.
        self._fork_server = early_fork_server(self.backend)

    def take_fork_server(self) -> Optional[ForkServer]:
        """The fork server started with these settings (once; the caller owns it)."""
        server, self._fork_server = getattr(self, "_fork_server", None), None
        return server


common_settings = CommonSettings(
    non_local_exec=True,
    # Slurm, PBS and local share a filesystem; ECS users name a default storage provider
    # and --shared-fs-usage none, as for any cloud executor.
    implies_no_shared_fs=False,
    # Only used when sources are not on a shared filesystem (ECS).
    job_deploy_sources=True,
    pass_default_storage_provider_args=True,
    pass_default_resources_args=True,
    # The environment travels as the job's own environment (and ECS container overrides),
    # not as `export` in front of the command.
    pass_envvar_declarations_to_cmd=False,
    # Jobs would pip-install every registered storage plugin each time; an ECS image
    # carries the one it needs instead.
    auto_deploy_default_storage_provider=False,
    init_seconds_before_status_checks=0,
    pass_group_args=True,
)
