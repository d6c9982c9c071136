"""Kill -9 ``cwltool-seqera`` while a step it sent to ECS runs, and run it again with the
same ``--cachedir``: the rerun adopts the task, brings its outputs home from S3 and runs
the next step; nothing runs twice.

``--executor route`` over local and the ECS emulator (``SEQERA_ROUTE_PIN=cloud=ecs``
sends the step ``cloud`` there, its files through S3; the next step runs here), and
``--executor ecs`` (both steps there). The player holds the task until the first
engine is dead, then plays its container (``tests/integration/aws.py``: the command in a
namespace where this directory is an empty tmpfs, so its outputs reach the rerun only
through S3). Counted: ECS tasks per step (the emulator's records) and the lines the
local step appends to a file here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest

from ..integration.aws import Isolated, Player, isolation_works
from ..integration.conftest import aws, moto_server
from ..integration.ecs.conftest import emulator
from ..integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from ..integration.ecs.emulator import Emulator

__all__ = ["aws", "emulator", "moto_server"]  # the ECS suite's fixtures, used as they are

pytestmark = pytest.mark.integration

BUCKET = "seqera-route-restart"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")

WORKFLOW = """
cwlVersion: v1.2
class: Workflow
inputs: {word: string, mark: string}
outputs:
  final: {type: File, outputSource: here/out}
steps:
  cloud: {run: cloud.cwl, in: {word: word}, out: [out]}
  here: {run: here.cwl, in: {text: cloud/out, mark: mark}, out: [out]}
"""

CLOUD = """
cwlVersion: v1.2
class: CommandLineTool
requirements:
  DockerRequirement: {dockerPull: 'debian:bookworm-slim'}
  ResourceRequirement: {coresMin: 1, ramMin: 100}
baseCommand: [sh, -c, 'echo "$0" > word.txt']
arguments: [$(inputs.word)]
inputs: {word: string}
outputs: {out: {type: File, outputBinding: {glob: word.txt}}}
"""

# On this machine (no image): appends a line to the mark file each time it runs.
HERE = """
cwlVersion: v1.2
class: CommandLineTool
requirements:
  ResourceRequirement: {coresMin: 1, ramMin: 100}
baseCommand: [sh, -c, 'echo ran >> "$1"; tr a-z A-Z < "$0" > upper.txt']
arguments: [$(inputs.text.path), $(inputs.mark)]
inputs: {text: File, mark: string}
outputs: {out: {type: File, outputBinding: {glob: upper.txt}}}
"""


def _argv(tmp_path: Path, executor: str) -> list[str]:
    # ECS alone runs every step in an image: the local step gets one too
    image = ["--seqera-image", "debian:bookworm-slim"] if executor == "ecs" else []
    return [
        COMMAND, "--executor", executor, *image, "--seqera-s3-prefix", f"s3://{BUCKET}/runs",
        "--seqera-ecs", "cluster=seqera", "--seqera-ecs", f"execution_role={ROLE}",
        "--seqera-poll-interval", "0.2", "--no-container",
        "--cachedir", str(tmp_path / "cache"), "--outdir", str(tmp_path / "out"),
        str(tmp_path / "wf.cwl"), str(tmp_path / "job.json"),
    ]  # fmt: skip


@pytest.mark.parametrize("executor", ["route", "ecs"])
def test_a_rerun_adopts_a_cloud_step_and_fetches_its_outputs(
    emulator: Emulator, tmp_path: Path, executor: str
) -> None:
    isolation_works()
    emulator.hold()  # each task runs until the player ends it
    boto3.client("s3", endpoint_url=emulator.url).create_bucket(Bucket=BUCKET)
    for name, text in (("wf.cwl", WORKFLOW), ("cloud.cwl", CLOUD), ("here.cwl", HERE)):
        (tmp_path / name).write_text(text)
    mark = tmp_path / "here-ran"
    (tmp_path / "job.json").write_text(json.dumps({"word": "hello", "mark": str(mark)}))
    env = {**os.environ, **emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "SEQERA_ROUTE_BACKENDS": "local,ecs", "SEQERA_ROUTE_PIN": "cloud=ecs"}  # fmt: skip
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_ROUTE_STAGED"):
        env.pop(name, None)
    dead = threading.Event()
    container = Isolated(tmp_path)

    def act(command: list[str]) -> int:
        dead.wait(120)  # the task goes on while no engine watches it
        return container(command)

    with Player(emulator, act) as player:
        first = subprocess.Popen(_argv(tmp_path, executor), cwd=tmp_path, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not player.jobs and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.1)
            assert player.jobs, f"no ECS task was started: {first.communicate()[1][-4000:]}"
            first.send_signal(signal.SIGKILL)
            first.communicate()
        finally:
            dead.set()
            if first.poll() is None:
                first.kill()
                first.communicate()
        again = subprocess.run(_argv(tmp_path, executor), cwd=tmp_path, env=env, text=True,
                               capture_output=True, timeout=300, check=False)  # fmt: skip
    with_container = again.stderr[-6000:] + "\n".join(r.stderr for r in container.results)
    assert again.returncode == 0, with_container
    outputs = json.loads(again.stdout)
    assert Path(outputs["final"]["path"]).read_text() == "HELLO\n"
    steps = Counter({t["key"]: t["value"] for t in task.tags}["cwl/step"] for task in player.jobs)
    if executor == "route":
        assert steps == Counter(cloud=1), steps  # the rerun adopted it: one task in all
        assert [r.returncode for r in container.results] == [0]
        assert mark.read_text() == "ran\n"  # the local step, once (the first run died before)
    else:  # every step in ECS, each once
        assert steps == Counter(cloud=1, here=1), steps
        assert [r.returncode for r in container.results] == [0, 0]
    assert "following" in again.stderr and "left by an earlier run" in again.stderr
