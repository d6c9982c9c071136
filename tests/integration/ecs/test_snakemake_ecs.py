"""``snakemake --executor seqera --seqera-backend ecs`` against the emulator, with S3 storage.

ECS has no shared filesystem: Snakemake's S3 storage provider carries inputs and outputs,
and each job is the Snakemake command in the container's overrides. The emulated container
runs nothing, so the test plays its part (``aws.snakemake_on_s3``): when the task appears
it writes the job's output to the (emulated) bucket, as the job would have, and lets the
task stop.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seqera_core.backends.awslogs import wrapped
from tests.conftest import require
from tests.integration.aws import snakemake_on_s3
from tests.integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration


def test_a_workflow_runs_through_ecs_with_s3_storage(emulator: Emulator, tmp_path: Path) -> None:
    require("snakemake_storage_plugin_s3", "ECS jobs exchange files through S3 storage")
    done, seen = snakemake_on_s3(
        emulator, tmp_path, "--seqera-backend", "ecs", "--seqera-ecs-cluster", "seqera",
        "--seqera-ecs-execution-role", ROLE,
    )  # fmt: skip
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
