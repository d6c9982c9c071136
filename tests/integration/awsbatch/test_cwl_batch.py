"""``cwltool-seqera --executor batch`` against the emulator: files travel through S3.

As for ECS (tests/integration/ecs/test_cwl_ecs.py; both through ``aws.cwl_on_s3``), the test
plays the container: when a job appears it runs the job's own command (the bootstrap in
its container overrides) in a fresh mount namespace where ``/tmp`` and the test's
directory are empty, so the command must fetch its script and inputs from the emulated S3
through presigned URLs and put its outputs back; then it ends the job with the command's
exit code, as Batch would report it. Not shown: a real image pulled and run by Batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seqera_core.backends.awslogs import wrapped
from tests.integration.aws import Isolated, Player, cwl_on_s3, isolation_works

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator

pytestmark = pytest.mark.integration


def test_inputs_and_outputs_travel_through_s3(
    batch_emulator: BatchEmulator, tmp_path: Path
) -> None:
    isolation_works()
    container = Isolated(tmp_path)
    player = Player(batch_emulator, container)
    done = cwl_on_s3(batch_emulator, tmp_path, player, "batch", "--seqera-batch", "queue=seqera")
    ran = "\n".join(r.stderr for r in container.results)
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
