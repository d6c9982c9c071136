"""``snakemake --executor seqera --seqera-backend batch`` against the emulator, with S3 storage.

AWS Batch has no shared filesystem: Snakemake's S3 storage provider carries inputs and
outputs, and each job is the Snakemake command in the job's container overrides. The
emulated container runs nothing, so the test plays its part: when the job appears it
writes the job's output to the (emulated) bucket, as the job would have, and ends it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from seqera_core.backends.awslogs import wrapped
from tests.conftest import require

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator

pytestmark = pytest.mark.integration

SNAKEFILE = """
rule all:
    input: "greeting.txt"

rule greet:
    output: "greeting.txt"
    threads: 2
    resources: mem_mb=3000, runtime=20
    shell: "echo hello > {output}"
"""


def _play_the_container(emulator: BatchEmulator, bucket: str, seen: list[Any]) -> None:
    s3 = boto3.client("s3", endpoint_url=emulator.url)
    deadline = time.monotonic() + 280
    while time.monotonic() < deadline:
        jobs = list(emulator.state()._jobs.values())
        if jobs:
            seen.append(jobs[0])
            s3.put_object(Bucket=bucket, Key="run/greeting.txt", Body=b"hello\n")
            emulator.finish(jobs[0].job_id, exit_code=0)
            return
        time.sleep(0.1)


def test_a_workflow_runs_through_aws_batch_with_s3_storage(
    batch_emulator: BatchEmulator, tmp_path: Path
) -> None:
    require("snakemake_storage_plugin_s3", "AWS Batch jobs exchange files through S3 storage")
    batch_emulator.hold()  # the job runs until the test ends it
    bucket = "seqera-snakemake"
    boto3.client("s3", endpoint_url=batch_emulator.url).create_bucket(Bucket=bucket)
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    seen: list[Any] = []
    player = threading.Thread(target=_play_the_container, args=(batch_emulator, bucket, seen))
    player.start()
    env = {**os.environ, **batch_emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "2",
         "--seqera-backend", "batch", "--seqera-batch-queue", "seqera",
         "--seconds-between-status-checks", "1",
         "--shared-fs-usage", "none", "--default-storage-provider", "s3",
         "--default-storage-prefix", f"s3://{bucket}/run",
         "--storage-s3-endpoint-url", batch_emulator.url,
         "--storage-s3-access-key", "testing", "--storage-s3-secret-key", "testing"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    player.join()
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
