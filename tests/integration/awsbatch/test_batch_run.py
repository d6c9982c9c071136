"""``seqera run --backend batch`` and ``seqera platform generate --from batch`` end to end
against the emulator, as a user types them."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from seqera_core.backends.awslogs import wrapped
from tests.integration import aws
from tests.integration.aws import Player

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator

pytestmark = pytest.mark.integration

seqera = functools.partial(aws.seqera, timeout=300)


def test_run_shows_the_output_and_exits_zero(batch_emulator: BatchEmulator, tmp_path: Path) -> None:
    (tmp_path / "seqera.yaml").write_text("batch:\n  queue: seqera\n")
    done = seqera(
        tmp_path, "run", "--backend", "batch", "--image", "ubuntu:24.04", "--cpus", "2",
        "--memory", "4GiB", "--time", "10m", "--label", "team=genomics",
        "--batch", "max_spot_attempts=2", "--", "echo", "hello", "from", "batch",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo hello from batch\n"  # the emulator echoes the command
    (job,) = batch_emulator.state()._jobs.values()
    assert job.container_overrides["command"] == wrapped(["echo", "hello", "from", "batch"])
    assert job.timeout == {"attemptDurationSeconds": 600}
    tags = batch_emulator.client("batch").list_tags_for_resource(resourceArn=job.arn)["tags"]
    assert tags["team"] == "genomics"


def test_run_exits_with_the_jobs_code(batch_emulator: BatchEmulator, tmp_path: Path) -> None:
    batch_emulator.hold()
    with Player(batch_emulator, lambda _: 3, "Essential container in task exited"):
        done = seqera(tmp_path, "run", "--backend", "batch", "--image", "ubuntu", "--", "false",
                      SEQERA_BATCH_QUEUE="seqera", SEQERA_BATCH_REPORT_USAGE="false")  # fmt: skip
    assert done.returncode == 3, done.stderr


def test_run_says_what_is_missing(batch_emulator: BatchEmulator, tmp_path: Path) -> None:
    done = seqera(tmp_path, "run", "--backend", "batch", "--image", "ubuntu", "--", "true")
    assert done.returncode == 2
    assert "batch.queue is required" in done.stderr and "SEQERA_BATCH_QUEUE" in done.stderr
    done = seqera(tmp_path, "run", "--backend", "batch", "--batch", "queue=seqera", "--", "true")
    assert done.returncode == 2
    assert "container: None is not valid; expected a container image for AWS Batch" in done.stderr
    done = seqera(tmp_path, "run", "--backend", "batch", "--batch", "queue=gone", "--image",
                  "ubuntu", "--cpus", "100", "--", "true")  # fmt: skip
    assert done.returncode == 2 and "job queue 'gone' does not exist" in done.stderr
    done = seqera(tmp_path, "run", "--backend", "batch", "--batch", "queue=seqera", "--image",
                  "ubuntu", "--cpus", "100", "--", "true")  # fmt: skip
    assert done.returncode == 2 and "cpus: 100 is not valid" in done.stderr
    assert "Traceback" not in done.stderr


def test_platform_generate_then_validate(batch_emulator: BatchEmulator, tmp_path: Path) -> None:
    batch_emulator.create_queue("off", state="DISABLED")  # bare, "off" would read as false
    done = seqera(tmp_path, "platform", "generate", "--from", "batch", "-o", "batch.yaml")
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load((tmp_path / "batch.yaml").read_text())
    assert written["scheduler"] == "batch" and written["default_queue"] == "seqera"
    assert written["queues"]["seqera"] == {"max_cpus": 8, "max_memory": "65536 MiB",
                                           "max_gpus": 1}  # fmt: skip
    assert written["queues"]["off"] == {"auto": False}
    done = seqera(tmp_path, "validate", "--platform", "batch.yaml", "--engine", "snakemake",
                  "--set", "mem_mb=80000")  # fmt: skip
    assert done.returncode == 2
    assert "exceeds queue seqera (64 GiB)" in done.stdout, done.stdout
