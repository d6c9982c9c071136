"""The ``ecs.*`` configuration keys: typed in files, the environment and flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core import ResourceError
from seqera_core.backends.ecs._payloads import EcsSettings
from seqera_core.config import load_config


def ecs_values(config_values: dict[str, object]) -> dict[str, object]:
    return {k[4:]: v for k, v in config_values.items() if k.startswith("ecs.")}


def test_ecs_keys_from_a_file_the_environment_and_flags(tmp_path: Path) -> None:
    (tmp_path / "seqera.yaml").write_text(
        "ecs:\n  cluster: genomics\n  execution_role: arn:aws:iam::1:role/e\n"
        "  subnets: [subnet-a, subnet-b]\n  assign_public_ip: false\n  max_spot_attempts: 2\n"
    )
    environ = {"SEQERA_ECS_SECURITY_GROUPS": "sg-1, sg-2", "SEQERA_ECS_REGION": "eu-west-1",
               "SEQERA_ECS_REPORT_USAGE": "false"}  # fmt: skip
    flags = {"ecs.max_spot_attempts": "7", "ecs.logs_group": "/my/logs"}
    config = load_config(environ=environ, cwd=tmp_path, home=tmp_path, flags=flags)
    values = ecs_values(dict(config.values))
    assert values == {
        "cluster": "genomics",
        "execution_role": "arn:aws:iam::1:role/e",
        "subnets": ["subnet-a", "subnet-b"],
        "assign_public_ip": False,
        "max_spot_attempts": 7,
        "security_groups": ["sg-1", "sg-2"],
        "region": "eu-west-1",
        "logs_group": "/my/logs",
        "report_usage": False,
    }
    assert config.sources["ecs.security_groups"] == "$SEQERA_ECS_SECURITY_GROUPS"
    settings = EcsSettings(**values)  # type: ignore[arg-type]
    assert settings.subnets == ("subnet-a", "subnet-b") and not settings.assign_public_ip
    assert not settings.report_usage


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SEQERA_ECS_ASSIGN_PUBLIC_IP", "maybe", "true or false"),
        ("SEQERA_ECS_MAX_SPOT_ATTEMPTS", "0", "an integer >= 1"),
        ("SEQERA_ECS_MAX_SPOT_ATTEMPTS", "²", "an integer >= 1"),
        ("SEQERA_ECS_SUBNETS", " , ", "at least one name"),
    ],
)
def test_bad_ecs_values_name_the_variable(variable: str, value: str, expected: str) -> None:
    with pytest.raises(ResourceError) as info:
        load_config(environ={variable: value}, cwd=Path("/"), home=Path("/nonexistent"))
    assert info.value.field.startswith(f"${variable}") and info.value.expected == expected


def test_unknown_ecs_key_in_a_file(tmp_path: Path) -> None:
    (tmp_path / "seqera.yaml").write_text("ecs:\n  clustr: x\n")
    with pytest.raises(ResourceError, match=r"ecs\.clustr"):
        load_config(environ={}, cwd=tmp_path, home=tmp_path)
