"""Which jobs may leave the shared file system under routing: judged on Snakemake's own
``StorageSettings`` (what ``workflow.storage_settings`` is), and the staged form a cloud
backend gets."""

from __future__ import annotations

import pytest

from seqera_core.backends import JobSpec
from seqera_core.models import ResourceRequest

settings = pytest.importorskip("snakemake.settings.types")
SharedFSUsage = pytest.importorskip("snakemake_interface_executor_plugins.settings").SharedFSUsage

from snakemake_executor_plugin_seqera._staging import staged_form, staging_refusal  # noqa: E402


def test_only_a_default_storage_provider_without_shared_inputs_lets_jobs_leave() -> None:
    assert "no --default-storage-provider" in str(staging_refusal(settings.StorageSettings()))
    shared_io = settings.StorageSettings(default_storage_provider="s3")  # Snakemake's default
    assert "--shared-fs-usage includes input-output, persistence, " in str(
        staging_refusal(shared_io)
    )
    none = settings.StorageSettings(default_storage_provider="s3", shared_fs_usage=frozenset())
    assert staging_refusal(none) is None
    # each of these puts a path of this machine in the job's command or inputs
    for usage in ("SOURCES", "SOFTWARE_DEPLOYMENT", "PERSISTENCE"):
        one = frozenset({getattr(SharedFSUsage, usage)})
        why = staging_refusal(settings.StorageSettings("s3", shared_fs_usage=one))
        assert why is not None and usage.lower().replace("_", "-") in why
    # local copies and the source cache stay this machine's business
    caches = frozenset({SharedFSUsage.STORAGE_LOCAL_COPIES, SharedFSUsage.SOURCE_CACHE})
    assert staging_refusal(settings.StorageSettings("s3", shared_fs_usage=caches)) is None


def test_the_staged_form_runs_snakemake_through_the_images_shell() -> None:
    text = "python -m snakemake --snakefile Snakefile --default-storage-provider s3"
    spec = JobSpec("smk-wide-1", ["python", "-m", "snakemake"], ResourceRequest(cpus=4),
                   workdir="/home/u/wf", stdout="/home/u/wf/log", stderr="/home/u/wf/log",
                   key="k")  # fmt: skip
    staged = staged_form(spec, text, "snakemake/snakemake:v9.1.0")
    assert staged.command == ("/bin/sh", "-c", text)
    assert (staged.workdir, staged.stdout, staged.stderr) == (None, None, None)
    assert staged.request.container == "snakemake/snakemake:v9.1.0"
    assert staged.request.cpus == 4 and staged.key == "k"
