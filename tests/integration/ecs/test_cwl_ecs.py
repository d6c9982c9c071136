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
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from seqera_core.backends.awslogs import wrapped
from tests.conftest import IN_CI

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration

ROLE = "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"
DATA = Path(__file__).parents[2] / "cwltool_seqera" / "data"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")
BUCKET = "seqera-cwl"
# Empty tmpfs over the test's directory and /tmp: a container's view of this machine.
ISOLATE = 'mount -t tmpfs seqera "$0" && mount -t tmpfs seqera /tmp && exec "$@"'


def _isolation_works() -> None:
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs seqera /tmp"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        message = f"unshare -rm with a tmpfs mount is not permitted here: {probe.stderr}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


class Container(threading.Thread):
    """Plays ECS's container for every task that appears; ``run=False`` runs nothing."""

    def __init__(self, emulator: Emulator, hidden: Path, *, run: bool = True) -> None:
        super().__init__(daemon=True)
        self.emulator, self.hidden, self.run_command = emulator, hidden, run
        self.tasks: list[Any] = []
        self.results: list[subprocess.CompletedProcess[str]] = []
        self.done = threading.Event()

    def run(self) -> None:
        handled: set[str] = set()
        while not self.done.is_set():
            for task in list(self.emulator.ecs_state.tasks.get("seqera", {}).values()):
                if task.task_arn in handled:
                    continue
                handled.add(task.task_arn)
                self.tasks.append(task)
                code = 0
                if self.run_command:
                    (override,) = task.overrides["containerOverrides"]
                    done = subprocess.run(
                        ["unshare", "-rm", "sh", "-c", ISOLATE, str(self.hidden),
                         *override["command"]],
                        cwd="/", capture_output=True, text=True, timeout=120, check=False,
                    )  # fmt: skip
                    self.results.append(done)
                    code = done.returncode
                self.emulator.stop(task.task_arn, exit_code=code)
            time.sleep(0.1)


def _run(emulator: Emulator, tmp_path: Path, player: Container) -> subprocess.CompletedProcess[str]:
    emulator.transitions(times=1000)  # each task runs until the player stops it
    boto3.client("s3", endpoint_url=emulator.url).create_bucket(Bucket=BUCKET)
    (tmp_path / "text.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "dir").mkdir()
    for name in ("a.txt", "b.txt"):
        (tmp_path / "dir" / name).write_text(name)
    job = tmp_path / "job.json"
    job.write_text(json.dumps({
        "text": {"class": "File", "path": "text.txt"},
        "dir": {"class": "Directory", "path": "dir"},
        "label": "ecs",
    }))  # fmt: skip
    env = {**os.environ, **emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    player.start()
    try:
        return subprocess.run(
            [COMMAND, "--executor", "ecs", "--seqera-s3-prefix", f"s3://{BUCKET}/runs",
             "--seqera-ecs", "cluster=seqera", "--seqera-ecs", f"execution_role={ROLE}",
             "--seqera-poll-interval", "0.2",
             "--tmpdir-prefix", f"{tmp_path}/tmp/", "--tmp-outdir-prefix", f"{tmp_path}/outs/",
             "--outdir", str(tmp_path / "out"), str(DATA / "ecs_count.cwl"), str(job)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        player.done.set()
        player.join()


def test_inputs_and_outputs_travel_through_s3(emulator: Emulator, tmp_path: Path) -> None:
    _isolation_works()
    player = Container(emulator, tmp_path)
    done = _run(emulator, tmp_path, player)
    ran = "\n".join(r.stderr for r in player.results)
    assert done.returncode == 0, done.stderr[-4000:] + ran
    outputs = json.loads(done.stdout)
    assert Path(outputs["lines"]["path"]).read_text() == "3\na.txt\nb.txt\ncounted by ecs"
    assert Path(outputs["copy"]["path"]).read_text() == "one\ntwo\nthree\n"
    # What ECS was sent: the bootstrap fetching the job script from the prefix, the
    # tool's image and its resources.
    (task,) = player.tasks
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
    player = Container(emulator, tmp_path, run=False)  # the task "succeeds" but ran nothing
    done = _run(emulator, tmp_path, player)
    assert done.returncode != 0
    assert "outputs.tar (did the job upload it?)" in done.stderr
    assert "permanentFail" in done.stderr
