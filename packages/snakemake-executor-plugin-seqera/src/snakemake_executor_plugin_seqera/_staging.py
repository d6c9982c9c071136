"""Which Snakemake jobs may leave the shared file system when a run routes between backends.

A job runs on a backend without this machine's files (ECS, AWS Batch) only if Snakemake
itself moves everything it needs: a default storage provider (``--default-storage-
provider``, ``StorageSettings.default_storage_provider``) and a ``--shared-fs-usage`` under
which jobs assume no common working directory and no shared sources (``none`` does it).
Snakemake's own ``StorageSettingsExecutorInterface.assume_common_workdir``
(snakemake-interface-executor-plugins, settings.py) is true when persistence, inputs and
outputs or software deployment are shared: then the main process retrieves storage inputs
into ``.snakemake/storage`` for the job to read (``RemoteExecutor.get_job_args`` waits for
them) and the job runs this machine's ``sys.executable`` (``get_python_executable``); with
shared sources it names the Snakefile by this machine's path. A cloud task sees none of
them, so the jobs of such a run stay on the local machine or the cluster.
"""

from __future__ import annotations

import attrs
from snakemake_interface_executor_plugins.settings import (
    SharedFSUsage,
    StorageSettingsExecutorInterface,
)

from seqera_core.backends import JobSpec

from ._jobcommand import command

__all__ = ["staged_form", "staging_refusal"]

# what a job reads from this machine under each: assume_common_workdir's four, and sources
_HOST_BOUND = frozenset({
    SharedFSUsage.PERSISTENCE, SharedFSUsage.INPUT_OUTPUT, SharedFSUsage.SOFTWARE_DEPLOYMENT,
    SharedFSUsage.SOFTWARE_DEPLOYMENT_CACHE, SharedFSUsage.SOURCES,
})  # fmt: skip


def staging_refusal(storage: StorageSettingsExecutorInterface) -> str | None:
    """Why this run's jobs cannot leave the shared file system (None: they can)."""
    if getattr(storage, "default_storage_provider", None) is None:
        return "no --default-storage-provider: Snakemake keeps the files on this file system"
    shared = sorted(u.name.lower().replace("_", "-") for u in storage.shared_fs_usage
                    if u in _HOST_BOUND)  # fmt: skip
    if shared:
        return (
            f"--shared-fs-usage includes {', '.join(shared)}: the jobs need this file "
            "system (give --shared-fs-usage none)"
        )
    return None


def staged_form(spec: JobSpec, text: str, image: str) -> JobSpec:
    """``spec`` for a backend without this machine's files: the job's Snakemake command
    through the image's shell (never a fork of this machine's Snakemake), in the
    Snakemake image, with no working directory or log file here."""
    request = attrs.evolve(spec.request, container=image)
    return attrs.evolve(spec, command=command(text, squashed=False), request=request,
                        workdir=None, stdout=None, stderr=None)  # fmt: skip
