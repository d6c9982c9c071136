"""``snakemake --executor seqera --seqera-backend route`` over the local machine and the ECS
emulator: files decide what may go to the cloud. Without a default storage provider a job
the machine cannot hold is refused before anything is sent, naming each backend's reason;
with S3 storage and ``--shared-fs-usage none`` it goes to ECS as the Snakemake command in
the Snakemake image. The test plays the container (``tests/integration/aws.py``): it
writes the job's output to the (emulated) bucket and ends the task."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from tests.conftest import require
from tests.integration.aws import Player
from tests.integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration

BUCKET = "seqera-route-smk"
SNAKEFILE = """
rule wide:
    output: "wide.txt"
    threads: 4
    resources: mem_mb=500, runtime=5
    shell: "echo wide > {output}"
"""


def _snakemake(emulator: Emulator, tmp_path: Path, *args: str) -> tuple[Any, list[Any]]:
    s3 = boto3.client("s3", endpoint_url=emulator.url)

    def wide(_: list[str]) -> int:  # the job's part: its output where Snakemake reads it
        s3.put_object(Bucket=BUCKET, Key="run/wide.txt", Body=b"wide\n")
        return 0

    env = {**os.environ, **emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_ROUTE_STAGED"):
        env.pop(name, None)
    with Player(emulator, wide) as player:
        run = subprocess.run(
            [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "2",
             "--seqera-backend", "route", "--seqera-route-backends", "local", "ecs",
             "--seqera-local-cores", "2", "--seqera-ecs-cluster", "seqera",
             "--seqera-ecs-execution-role", ROLE, "--seconds-between-status-checks", "1",
             *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    return run, player.jobs


def test_without_storage_a_job_the_machine_cannot_hold_is_refused(
    emulator: Emulator, tmp_path: Path
) -> None:
    require("snakemake", "the route runs a real Snakemake")
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    run, seen = _snakemake(emulator, tmp_path)
    assert run.returncode != 0
    assert "no job goes to ecs: no --default-storage-provider" in run.stderr
    assert (
        "no backend can run it: local: 4 cores asked, its largest node has 2; ecs: no shared "
        "file system, and the engine does not stage this job's files" in run.stderr
    ), run.stderr[-3000:]
    assert seen == [] and not (tmp_path / "wide.txt").exists()


def test_with_s3_storage_the_job_goes_to_ecs_in_snakemakes_image(
    emulator: Emulator, tmp_path: Path
) -> None:
    require("snakemake_storage_plugin_s3", "ECS jobs exchange files through S3 storage")
    emulator.hold()  # each task runs until the player ends it
    boto3.client("s3", endpoint_url=emulator.url).create_bucket(Bucket=BUCKET)
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    run, seen = _snakemake(
        emulator, tmp_path, "--shared-fs-usage", "none", "--default-storage-provider", "s3",
        "--default-storage-prefix", f"s3://{BUCKET}/run", "--storage-s3-endpoint-url",
        emulator.url, "--storage-s3-access-key", "testing", "--storage-s3-secret-key", "testing",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    (task,) = seen  # one job, sent once
    (override,) = task.overrides["containerOverrides"]
    shell, flag, text = override["command"][-3:]
    assert (shell, flag) == ("/bin/sh", "-c") and "-m snakemake" in text
    assert "--default-storage-provider 's3'" in text
    definition = emulator.ecs_state.describe_task_definition(task.task_definition_arn)
    assert definition.container_definitions[0]["image"].startswith("snakemake/snakemake:v")
    tags = {t["key"]: t["value"] for t in task.tags}
    assert tags["route-backend"] == "ecs", tags
    assert tags["route-reason"].startswith("finish: ecs finish in")
    body = boto3.client("s3", endpoint_url=emulator.url).get_object(
        Bucket=BUCKET, Key="run/wide.txt")["Body"].read()  # fmt: skip
    assert body == b"wide\n"
