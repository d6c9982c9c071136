"""``cwltool-seqera --executor ecs`` against the emulator: files travel through S3.

moto runs no containers, so the test plays the container: when the task appears it runs
the task's own command (the bootstrap in the container overrides) in a fresh mount
namespace where ``/tmp`` and the test's directory are empty tmpfs mounts, so nothing of
this machine's staging is visible. The command must fetch its script and inputs from the
emulated S3 through the presigned URLs and put its outputs back there; the test then
stops the task with the command's exit code, as ECS would report it.

What this cannot show: a real image pulled and run by ECS (the command runs on this
machine's ``sh``/``tar``/``curl``), real IAM or bucket policies, or URL expiry.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest

from seqera_core.backends.awslogs import wrapped
from tests.integration.aws import BUCKET, Isolated, Player, cwl_on_s3, isolation_works
from tests.integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration


def _run(emulator: Emulator, tmp_path: Path, player: Player) -> subprocess.CompletedProcess[str]:
    return cwl_on_s3(
        emulator, tmp_path, player, "ecs", "--seqera-ecs", "cluster=seqera",
        "--seqera-ecs", f"execution_role={ROLE}",
    )  # fmt: skip


def test_inputs_and_outputs_travel_through_s3(emulator: Emulator, tmp_path: Path) -> None:
    isolation_works()
    container = Isolated(tmp_path)
    player = Player(emulator, container)
    done = _run(emulator, tmp_path, player)
    ran = "\n".join(r.stderr for r in container.results)
    assert done.returncode == 0, done.stderr[-4000:] + ran
    outputs = json.loads(done.stdout)
    assert Path(outputs["lines"]["path"]).read_text() == "3\na.txt\nb.txt\ncounted by ecs"
    assert Path(outputs["copy"]["path"]).read_text() == "one\ntwo\nthree\n"
    # What ECS was sent: the bootstrap fetching the job script from the prefix, the
    # tool's image and its resources.
    (task,) = player.jobs
    (override,) = task.overrides["containerOverrides"]
    assert override["command"][:4] == wrapped([])  # under the usage wrapper
    shell, flag, _, name, url = override["command"][4:]
    assert (shell, flag, name) == ("/bin/sh", "-c", "cwltool-seqera")
    assert f"/{BUCKET}/runs/" in url and "/job.sh?" in url and "Signature=" in url
    definition = emulator.ecs_state.describe_task_definition(task.task_definition_arn)
    assert definition.container_definitions[0]["image"] == "debian:bookworm-slim"
    # coresMin 1.5 is 1536 cpu units (ECS takes fractions of a core); ramMin 300 MiB.
    assert (definition.cpu, definition.memory) == ("1536", "300")
    assert {"key": "cwl/step", "value": "ecs_count"} in task.tags
    # The job's objects are removed once its outputs are home (cwltool's --rm-tmpdir).
    listed = boto3.client("s3", endpoint_url=emulator.url).list_objects_v2(Bucket=BUCKET)
    assert not listed.get("Contents")


def test_a_job_whose_outputs_never_arrive_fails_permanently(
    emulator: Emulator, tmp_path: Path
) -> None:
    player = Player(emulator, lambda _: 0)  # the task "succeeds" but ran nothing
    done = _run(emulator, tmp_path, player)
    assert done.returncode != 0
    assert "outputs.tar (did the job upload it?)" in done.stderr
    assert "permanentFail" in done.stderr
