"""Where ECS tasks connect: the configured subnets and groups, else the default VPC's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import UsageError

__all__ = ["network"]


def network(
    call: Callable[..., Any],
    ec2: Any,
    subnets: tuple[str, ...],
    security_groups: tuple[str, ...],
    region: str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Subnets and security groups for awsvpc: what is configured, the rest discovered.

    No subnets: the default VPC's default-for-az subnets (one per availability zone, as
    ECS's own console picks). No security groups: the ``default`` group of the subnets' VPC.
    ``call`` wraps each EC2 call (error handling); ``ec2`` is a boto3 EC2 client.
    """
    if subnets:  # the security group follows the configured subnets' VPC
        vpc = str(call(ec2.describe_subnets, SubnetIds=list(subnets))["Subnets"][0]["VpcId"])
    else:
        default = [{"Name": "is-default", "Values": ["true"]}]
        vpcs = call(ec2.describe_vpcs, Filters=default)["Vpcs"]
        if not vpcs:
            raise UsageError(
                f"ecs.subnets: none configured and region {region} has no default VPC; "
                "set ecs.subnets and ecs.security_groups"
            )
        vpc = str(vpcs[0]["VpcId"])
        found = call(
            ec2.describe_subnets,
            Filters=[
                {"Name": "vpc-id", "Values": [vpc]},
                {"Name": "default-for-az", "Values": ["true"]},
            ],
        )["Subnets"]
        if not found:
            raise UsageError(f"ecs.subnets: none configured and the default VPC {vpc} has none")
        ordered = sorted(found, key=lambda s: (s.get("AvailabilityZone", ""), s["SubnetId"]))
        subnets = tuple(str(s["SubnetId"]) for s in ordered)
    if not security_groups:
        groups = call(
            ec2.describe_security_groups,
            Filters=[
                {"Name": "vpc-id", "Values": [vpc]},
                {"Name": "group-name", "Values": ["default"]},
            ],
        )["SecurityGroups"]
        if not groups:
            raise UsageError(
                f"ecs.security_groups: none configured and VPC {vpc} has no default group"
            )
        security_groups = (str(groups[0]["GroupId"]),)
    return subnets, security_groups
