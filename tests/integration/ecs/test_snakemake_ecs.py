"""``snakemake --executor seqera --seqera-backend ecs`` against the emulator, with S3 storage.

ECS has no shared filesystem: Snakemake's S3 storage provider carries inputs and outputs,
and each job is the Snakemake command in the container's overrides. The emulated container
runs nothing, so the test plays its part: when the task appears it writes the job's output
to the (emulated) bucket, as the job would have, and lets the task stop.
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
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration

ROLE = "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"
SNAKEFILE = """
rule all:
    input: "greeting.txt"

rule greet:
    output: "greeting.txt"
    threads: 2
    resources: mem_mb=3000, runtime=20
    shell: "echo hello > {output}"
"""


def _play_the_container(emulator: Emulator, bucket: str, seen: list[Any]) -> None:
    s3 = boto3.client("s3", endpoint_url=emulator.url)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        tasks = list(emulator.ecs_state.tasks.get("seqera", {}).values())
        if tasks:
            seen.append(tasks[0])
            s3.put_object(Bucket=bucket, Key="run/greeting.txt", Body=b"hello\n")
            emulator.stop(tasks[0].task_arn, exit_code=0)
            return
        time.sleep(0.1)


def test_a_workflow_runs_through_ecs_with_s3_storage(emulator: Emulator, tmp_path: Path) -> None:
    require("snakemake_storage_plugin_s3", "ECS jobs exchange files through S3 storage")
    emulator.transitions(times=1000)  # the task runs until the test stops it
    bucket = "seqera-snakemake"
    boto3.client("s3", endpoint_url=emulator.url).create_bucket(Bucket=bucket)
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    seen: list[Any] = []
    player = threading.Thread(target=_play_the_container, args=(emulator, bucket, seen))
    player.start()
    env = {**os.environ, **emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--executor", "seqera", "--jobs", "2",
         "--seqera-backend", "ecs", "--seqera-ecs-cluster", "seqera",
         "--seqera-ecs-execution-role", ROLE, "--seconds-between-status-checks", "1",
         "--shared-fs-usage", "none", "--default-storage-provider", "s3",
         "--default-storage-prefix", f"s3://{bucket}/run",
         "--storage-s3-endpoint-url", emulator.url,
         "--storage-s3-access-key", "testing", "--storage-s3-secret-key", "testing"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    player.join()
    assert done.returncode == 0, done.stderr[-4000:]
    (task,) = seen
    (override,) = task.overrides["containerOverrides"]
    assert override["command"][:4] == wrapped([])  # the usage wrapper, then the job
    shell, flag, command = override["command"][4:]
    assert (shell, flag) == ("/bin/sh", "-c")
    assert "-m snakemake" in command and "--default-storage-provider 's3'" in command
    assert "greeting.txt" in command or "greet" in command
    definition = emulator.ecs_state.describe_task_definition(task.task_definition_arn)
    assert definition.container_definitions[0]["image"].startswith("snakemake/snakemake:v")
    assert (definition.cpu, definition.memory) == ("2048", "2862")  # 3000 MB is 2861.02 MiB
    assert {"key": "snakemake/rule", "value": "greet"} in task.tags
