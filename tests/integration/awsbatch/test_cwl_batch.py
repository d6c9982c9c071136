"""``cwltool-seqera --executor batch`` against the emulator: files travel through S3.

As for ECS (tests/integration/ecs/test_cwl_ecs.py, whose isolation this reuses), the test
plays the container: when a job appears it runs the job's own command (the bootstrap in
its container overrides) in a fresh mount namespace where ``/tmp`` and the test's
directory are empty, so the command must fetch its script and inputs from the emulated S3
through presigned URLs and put its outputs back; then it ends the job with the command's
exit code, as Batch would report it. Not shown: a real image pulled and run by Batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from seqera_core.backends.awslogs import wrapped
from tests.integration.ecs.test_cwl_ecs import BUCKET, COMMAND, DATA, ISOLATE, _isolation_works

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator

pytestmark = pytest.mark.integration


class Container(threading.Thread):
    """Plays Batch's container for every job that appears."""

    def __init__(self, emulator: BatchEmulator, hidden: Path) -> None:
        super().__init__(daemon=True)
        self.emulator, self.hidden = emulator, hidden
        self.jobs: list[Any] = []
        self.results: list[subprocess.CompletedProcess[str]] = []
        self.done = threading.Event()

    def run(self) -> None:
        handled: set[str] = set()
        while not self.done.is_set():
            for job in list(self.emulator.state()._jobs.values()):
                if job.job_id in handled:
                    continue
                handled.add(job.job_id)
                self.jobs.append(job)
                done = subprocess.run(
                    ["unshare", "-rm", "sh", "-c", ISOLATE, str(self.hidden),
                     *job.container_overrides["command"]],
                    cwd="/", capture_output=True, text=True, timeout=120, check=False,
                )  # fmt: skip
                self.results.append(done)
                self.emulator.finish(job.job_id, exit_code=done.returncode)
            time.sleep(0.1)


def test_inputs_and_outputs_travel_through_s3(
    batch_emulator: BatchEmulator, tmp_path: Path
) -> None:
    _isolation_works()
    batch_emulator.hold()  # each job runs until the player ends it
    boto3.client("s3", endpoint_url=batch_emulator.url).create_bucket(Bucket=BUCKET)
    (tmp_path / "text.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "dir").mkdir()
    for name in ("a.txt", "b.txt"):
        (tmp_path / "dir" / name).write_text(name)
    job = tmp_path / "job.json"
    job.write_text(json.dumps({
        "text": {"class": "File", "path": "text.txt"},
        "dir": {"class": "Directory", "path": "dir"},
        "label": "batch",
    }))  # fmt: skip
    env = {**os.environ, **batch_emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    player = Container(batch_emulator, tmp_path)
    player.start()
    try:
        done = subprocess.run(
            [COMMAND, "--executor", "batch", "--seqera-s3-prefix", f"s3://{BUCKET}/runs",
             "--seqera-batch", "queue=seqera", "--seqera-poll-interval", "0.2",
             "--tmpdir-prefix", f"{tmp_path}/tmp/", "--tmp-outdir-prefix", f"{tmp_path}/outs/",
             "--outdir", str(tmp_path / "out"), str(DATA / "ecs_count.cwl"), str(job)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        player.done.set()
        player.join()
    ran = "\n".join(r.stderr for r in player.results)
    assert done.returncode == 0, done.stderr[-4000:] + ran
    outputs = json.loads(done.stdout)
    assert Path(outputs["lines"]["path"]).read_text() == "3\na.txt\nb.txt\ncounted by batch"
    assert Path(outputs["copy"]["path"]).read_text() == "one\ntwo\nthree\n"
    (sent,) = player.jobs
    command = sent.container_overrides["command"]
    assert command[:4] == wrapped([])  # under the usage wrapper
    assert command[4:6] == ["/bin/sh", "-c"] and "/job.sh?" in command[-1]
    assert sent.job_definition.container_properties["image"] == "debian:bookworm-slim"
    # coresMin 1.5 is 2 whole vCPUs on EC2; ramMin 300 MiB
    assert sent.container_overrides["resourceRequirements"] == [
        {"type": "VCPU", "value": "2"}, {"type": "MEMORY", "value": "300"}]  # fmt: skip
    tags = batch_emulator.client("batch").list_tags_for_resource(resourceArn=sent.arn)["tags"]
    assert tags["cwl/step"] == "ecs_count"
