"""``snakemake --executor seqera --seqera-backend batch`` against the emulator, with S3 storage.

AWS Batch has no shared filesystem: Snakemake's S3 storage provider carries inputs and
outputs, and each job is the Snakemake command in the job's container overrides. The
emulated container runs nothing, so the test plays its part (``aws.snakemake_on_s3``):
when the job appears it writes the job's output to the (emulated) bucket, as the job
would have, and ends it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seqera_core.backends.awslogs import wrapped
from tests.conftest import require
from tests.integration.aws import snakemake_on_s3

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator

pytestmark = pytest.mark.integration


def test_a_workflow_runs_through_aws_batch_with_s3_storage(
    batch_emulator: BatchEmulator, tmp_path: Path
) -> None:
    require("snakemake_storage_plugin_s3", "AWS Batch jobs exchange files through S3 storage")
    done, seen = snakemake_on_s3(
        batch_emulator, tmp_path, "--seqera-backend", "batch", "--seqera-batch-queue", "seqera"
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (job,) = seen
    command = job.container_overrides["command"]
    assert command[:4] == wrapped([])  # the usage wrapper, then the job
    shell, flag, line = command[4:]
    assert (shell, flag) == ("/bin/sh", "-c")
    assert "-m snakemake" in line and "--default-storage-provider 's3'" in line
    assert job.container_overrides["resourceRequirements"] == [
        {"type": "VCPU", "value": "2"}, {"type": "MEMORY", "value": "2862"}]  # fmt: skip
    assert job.job_definition.container_properties["image"].startswith("snakemake/snakemake:v")
    tags = batch_emulator.client("batch").list_tags_for_resource(resourceArn=job.arn)["tags"]
    assert tags["snakemake/rule"] == "greet"
