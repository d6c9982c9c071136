"""``seqera run --backend ecs`` end to end against the emulator, as a user types it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seqera_core.backends.awslogs import wrapped
from tests.integration.aws import Player, seqera
from tests.integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration


def test_run_shows_the_output_and_exits_zero(emulator: Emulator, tmp_path: Path) -> None:
    (tmp_path / "seqera.yaml").write_text(f"ecs:\n  cluster: seqera\n  execution_role: {ROLE}\n")
    done = seqera(
        tmp_path, "run", "--backend", "ecs", "--image", "ubuntu:24.04", "--cpus", "2",
        "--memory", "4GiB", "--machine-type", "m5.large", "--label", "team=genomics",
        "--ecs", "max_spot_attempts=2", "--", "echo", "hello", "from", "ecs",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo hello from ecs\n"  # the emulated container prints its command
    (task,) = emulator.ecs_state.tasks["seqera"].values()
    command = task.overrides["containerOverrides"][0]["command"]
    assert command == wrapped(["echo", "hello", "from", "ecs"])
    assert {"key": "team", "value": "genomics"} in task.tags


def test_run_exits_with_the_tasks_code(emulator: Emulator, tmp_path: Path) -> None:
    emulator.hold()  # runs until the test ends it
    with Player(emulator, lambda _: 3, "Essential container in task exited"):
        done = seqera(
            tmp_path, "run", "--backend", "ecs", "--image", "ubuntu", "--", "false",
            SEQERA_ECS_CLUSTER="seqera", SEQERA_ECS_EXECUTION_ROLE=ROLE,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr


def test_run_needs_the_cluster_and_an_image(emulator: Emulator, tmp_path: Path) -> None:
    done = seqera(tmp_path, "run", "--backend", "ecs", "--image", "ubuntu", "--", "true")
    assert done.returncode == 2
    assert "ecs.cluster is required" in done.stderr and "SEQERA_ECS_CLUSTER" in done.stderr
    done = seqera(
        tmp_path, "run", "--backend", "ecs", "--ecs", "cluster=seqera",
        "--ecs", f"execution_role={ROLE}", "--", "true",
    )  # fmt: skip
    assert done.returncode == 2
    assert "container: None is not valid; expected a container image for ECS" in done.stderr
    done = seqera(
        tmp_path, "run", "--backend", "ecs", "--image", "ubuntu", "--ecs", "cluster=gone",
        "--ecs", f"execution_role={ROLE}", "--", "true",
    )  # fmt: skip
    assert done.returncode == 2
    assert "ECS cluster 'gone' does not exist" in done.stderr
