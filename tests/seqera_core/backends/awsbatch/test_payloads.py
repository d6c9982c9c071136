"""AWS Batch request bodies: settings, definition names, job names, the array selector."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from seqera_core.backends.awsbatch._payloads import (
    ARGV_PREFIX,
    BatchSettings,
    Shape,
    array_command,
    definition_request,
    job_name,
    key_prefix,
    submission_key,
    submit_request,
)
from seqera_core.errors import ResourceError
from seqera_core.units import GIB


def test_settings_say_which_field_is_wrong() -> None:
    with pytest.raises(ResourceError, match=r"batch.queue: '' is not valid"):
        BatchSettings(queue="")
    with pytest.raises(ResourceError, match=r"batch.platform: 'LAMBDA' .* EC2 or FARGATE"):
        BatchSettings(queue="q", platform="lambda")
    with pytest.raises(ResourceError, match=r"batch.max_spot_attempts: 11 .* from 1 to 10"):
        BatchSettings(queue="q", max_spot_attempts=11)
    with pytest.raises(ResourceError, match=r"batch.execution_role: None .* Fargate"):
        BatchSettings(queue="q", platform="fargate")


def test_definition_name_follows_the_whole_body() -> None:
    shape = Shape("quay.io/biocontainers/samtools:1.19--h50ea8bc_0", 2, 4 * GIB)
    body = definition_request(shape, BatchSettings(queue="q"))
    name = body["jobDefinitionName"]
    assert name.startswith("seqera-quay-io-biocontainers-samtools-1-19--h50ea8bc_0-")
    assert name == definition_request(shape, BatchSettings(queue="other"))["jobDefinitionName"]
    with_role = definition_request(shape, BatchSettings(queue="q", job_role="arn:r"))
    assert with_role["jobDefinitionName"] != name  # a new role: a new definition
    long = definition_request(Shape("x" * 300, 1, GIB), BatchSettings(queue="q"))
    assert len(long["jobDefinitionName"]) == 128


def test_job_names_carry_the_key_and_find_by_prefix() -> None:
    key = submission_key(caller="sidecar-row-17")
    assert key == submission_key(caller="sidecar-row-17") != submission_key(caller="other")
    assert submission_key() != submission_key()  # no caller key: a new one each time
    name = job_name(key, "align sample/1 (R1)")
    assert name == f"{key}-align-sample-1-R1" and key_prefix(key) == f"{key}-*"
    assert len(job_name(key, "y" * 300)) == 128 and job_name(key, "///") == f"{key}-job"


def test_at_most_49_labels() -> None:
    labels = {f"l{i}": "v" for i in range(50)}
    with pytest.raises(ResourceError, match=r"labels: 50 is not valid; expected at most 49"):
        submit_request(
            settings=BatchSettings(queue="q"), definition="d", queue="q", name="n", key="k",
            command=["true"], env={}, labels=labels, shape=Shape("i", 1, GIB), time=None,
        )  # fmt: skip


@pytest.mark.parametrize("argv", [["printf", "%s|", "a b", "it's", "$HOME", "`x`"], ["true"]])
def test_each_array_element_runs_its_own_argv(argv: list[str]) -> None:
    env = {
        f"{ARGV_PREFIX}0": shlex.join(["echo", "first"]),
        f"{ARGV_PREFIX}1": shlex.join(argv),
        "AWS_BATCH_JOB_ARRAY_INDEX": "1",
        "PATH": "/usr/bin:/bin",
    }
    ran = subprocess.run(array_command(), env=env, capture_output=True, text=True, check=True)
    expected = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert ran.stdout == expected


def test_an_array_element_without_its_argv_fails() -> None:
    env = {"AWS_BATCH_JOB_ARRAY_INDEX": "3", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run(array_command(), env=env, capture_output=True, text=True, check=False)
    assert ran.returncode != 0 and "SEQERA_ARGV_3" in ran.stderr
