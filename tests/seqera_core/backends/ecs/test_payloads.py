"""ECS request bodies: shapes, family names, the definition hash, RunTask, settings."""

from __future__ import annotations

import attrs
import pytest

from seqera_core.backends.awslogs import wrapped
from seqera_core.backends.ecs._payloads import (
    HASH_TAG,
    EcsSettings,
    Shape,
    family_name,
    log_stream,
    run_task_request,
    shape_of,
    task_definition_request,
)
from seqera_core.errors import ResourceError
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.units import GIB, MIB

ROLE = "arn:aws:iam::123456789012:role/exec"
SETTINGS = EcsSettings(cluster="c", execution_role=ROLE)


def run(**overrides: object) -> dict[str, object]:
    arguments: dict[str, object] = {
        "settings": SETTINGS,
        "definition": "arn:td",
        "capacity_provider": "mi",
        "subnets": ["subnet-1"],
        "security_groups": ["sg-1"],
        "command": ["echo", "hi"],
        "env": {},
        "labels": {},
        "machine_type": None,
        **overrides,
    }
    return run_task_request(**arguments)  # type: ignore[arg-type]


def test_shape_rounds_up_and_has_defaults() -> None:
    request = ResourceRequest(cpus=0.1, memory=MIB + 1, disk=GIB, container="img")
    assert shape_of(request, SETTINGS) == Shape("img", 128, 2, 0, 30)
    assert shape_of(ResourceRequest(container="img"), SETTINGS) == Shape("img", 1024, 2048)
    gpus = ResourceRequest(cpus=2.5, accelerator=Accelerator(2, "a100"), container="img")
    assert shape_of(gpus, SETTINGS) == Shape("img", 2560, 2048, 2, None)


def test_shape_needs_an_image_and_storage_within_ecs_limits() -> None:
    with pytest.raises(ResourceError, match="container: None is not valid; expected a container"):
        shape_of(ResourceRequest(cpus=1), SETTINGS)
    with pytest.raises(ResourceError, match="at most 16384 GiB"):
        shape_of(ResourceRequest(disk=16385 * GIB, container="img"), SETTINGS)


@pytest.mark.parametrize(
    ("image", "family"),
    [
        ("ubuntu", "seqera-ubuntu"),
        (
            "quay.io/biocontainers/bwa:0.7.17--h5bf99c6_8",
            "seqera-quay-io-biocontainers-bwa-0-7-17--h5bf99c6_8",
        ),
        ("ghcr.io/org/tool@sha256:abc", "seqera-ghcr-io-org-tool-sha256-abc"),
    ],
)
def test_family_names(image: str, family: str) -> None:
    assert family_name(image) == family


def test_long_images_keep_distinct_families_within_255_characters() -> None:
    first, second = family_name("r/" + "a" * 300 + "1"), family_name("r/" + "a" * 300 + "2")
    assert len(first) == len(second) == 255
    assert first != second


def test_definition_body() -> None:
    body, digest = task_definition_request(Shape("img", 2048, 4096, 1), SETTINGS, "eu-west-1")
    assert body["requiresCompatibilities"] == ["MANAGED_INSTANCES"]
    assert body["networkMode"] == "awsvpc"
    assert (body["cpu"], body["memory"]) == ("2048", "4096")
    assert "taskRoleArn" not in body
    (container,) = body["containerDefinitions"]
    assert container["resourceRequirements"] == [{"type": "GPU", "value": "1"}]
    assert container["logConfiguration"]["options"]["awslogs-region"] == "eu-west-1"
    assert body["tags"] == [{"key": HASH_TAG, "value": digest}]
    assert len(digest) == 32


def test_definition_hash_covers_shape_and_settings_only() -> None:
    def digest(shape: Shape, settings: EcsSettings = SETTINGS, region: str = "us-east-1") -> str:
        return task_definition_request(shape, settings, region)[1]

    base = Shape("img", 1024, 2048)
    assert digest(base) == digest(Shape("img", 1024, 2048))  # stable across calls
    variants = [
        digest(Shape("img2", 1024, 2048)),
        digest(Shape("img", 2048, 2048)),
        digest(Shape("img", 1024, 4096)),
        digest(Shape("img", 1024, 2048, 1)),
        digest(Shape("img", 1024, 2048, 0, 100)),
        digest(base, EcsSettings(cluster="c", execution_role=ROLE + "x")),
        digest(base, EcsSettings(cluster="c", execution_role=ROLE, task_role="t")),
        digest(base, EcsSettings(cluster="c", execution_role=ROLE, logs_group="/g")),
        digest(base, region="eu-west-1"),
    ]
    assert len({digest(base), *variants}) == len(variants) + 1
    # where tasks run is not part of a definition
    other = EcsSettings(cluster="other", execution_role=ROLE, subnets=["s"], max_spot_attempts=1)
    assert digest(base, other) == digest(base)


def test_run_task_body() -> None:
    body = run()
    # under the usage wrapper, which hands the argv on unchanged as "$@"
    assert body["overrides"] == {
        "containerOverrides": [{"name": "main", "command": wrapped(["echo", "hi"])}]
    }
    bare = run(settings=attrs.evolve(SETTINGS, report_usage=False))
    assert bare["overrides"] == {
        "containerOverrides": [{"name": "main", "command": ["echo", "hi"]}]
    }
    assert "tags" not in body and "placementConstraints" not in body
    awsvpc = body["networkConfiguration"]["awsvpcConfiguration"]  # type: ignore[index]
    assert awsvpc["assignPublicIp"] == "ENABLED"


def test_run_task_environment_labels_and_instance_type() -> None:
    body = run(
        env={"SEQERA_LABEL_TEAM": "mine", "X": "1"},
        labels={"team": "gen", "aws:x": "y"},
        machine_type="c7g.large",
    )
    override = body["overrides"]["containerOverrides"][0]  # type: ignore[index]
    environment = {e["name"]: e["value"] for e in override["environment"]}
    # the job's own environment wins over a label's variable of the same name
    assert environment == {"SEQERA_LABEL_TEAM": "mine", "SEQERA_LABEL_AWS_X": "y", "X": "1"}
    assert body["tags"] == [{"key": "_aws:x", "value": "y"}, {"key": "team", "value": "gen"}]
    assert body["placementConstraints"] == [
        {"type": "memberOf", "expression": "attribute:ecs.instance-type == c7g.large"}
    ]


@pytest.mark.parametrize("machine", ["m5", "m5.large or true", "M5.LARGE", "m5.large\n"])
def test_instance_types_are_checked(machine: str) -> None:
    with pytest.raises(ResourceError, match=r"machine_type: .* expected an EC2 instance type"):
        run(machine_type=machine)


def test_log_stream() -> None:
    arn = "arn:aws:ecs:us-east-1:123456789012:task/c/0f1e2d"
    assert log_stream(SETTINGS, arn) == "seqera/main/0f1e2d"


def test_settings_are_checked() -> None:
    with pytest.raises(ResourceError, match=r"ecs\.cluster: '' is not valid"):
        EcsSettings(cluster="", execution_role=ROLE)
    with pytest.raises(ResourceError, match=r"ecs\.max_spot_attempts: 0 is not valid"):
        EcsSettings(cluster="c", execution_role=ROLE, max_spot_attempts=0)
    settings = EcsSettings(cluster="c", execution_role=ROLE, subnets="a, b,", security_groups=["g"])
    assert (settings.subnets, settings.security_groups) == (("a", "b"), ("g",))


def test_images_that_share_a_family_keep_their_own_definitions() -> None:
    # "a:b" and "a.b" fold into one family; the image is part of the hash, so never mixed
    assert family_name("a:b") == family_name("a.b")
    one = task_definition_request(Shape("a:b", 1024, 2048), SETTINGS, "us-east-1")[1]
    two = task_definition_request(Shape("a.b", 1024, 2048), SETTINGS, "us-east-1")[1]
    assert one != two
