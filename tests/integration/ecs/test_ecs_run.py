"""``seqera run --backend ecs`` end to end against the emulator, as a user types it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seqera_core.backends.awslogs import wrapped

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration

ROLE = "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"


def seqera(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", *argv],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, **env}, timeout=120,
        check=False,
    )  # fmt: skip


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
    emulator.transitions(times=1000)  # runs until the test ends it

    def end_the_task() -> None:
        deadline = time.monotonic() + 110  # the CLI's own timeout is 120 s
        while time.monotonic() < deadline:
            tasks = list(emulator.ecs_state.tasks.get("seqera", {}))
            if tasks:
                emulator.stop(tasks[0], exit_code=3, reason="Essential container in task exited")
                return
            time.sleep(0.05)

    ender = threading.Thread(target=end_the_task)
    ender.start()
    done = seqera(
        tmp_path, "run", "--backend", "ecs", "--image", "ubuntu", "--", "false",
        SEQERA_ECS_CLUSTER="seqera", SEQERA_ECS_EXECUTION_ROLE=ROLE,
    )  # fmt: skip
    ender.join()
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
