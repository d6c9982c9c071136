"""The cluster ECS tasks run on: it exists, is ACTIVE, and has a Managed Instances provider.

DescribeClusters names the cluster's capacity providers; DescribeCapacityProviders says
which are ECS Managed Instances ones (``managedInstancesProvider``, ``type``
``MANAGED_INSTANCES``) and how large their instances' data volume is
(``instanceLaunchTemplate.storageConfiguration.storageSizeGiB``), the most disk a task
can ask for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import UsageError

__all__ = ["capacity"]


def capacity(
    call: Callable[..., Any], ecs: Any, cluster: str, wanted: str | None, region: str
) -> tuple[str, int | None]:
    """The managed-instances capacity provider to run on (``wanted``, else the cluster's
    first) and its data volume in GiB (``None`` when the template does not say).

    Raises:
        UsageError: no such cluster, not ACTIVE, or no active managed-instances provider.
    """
    found = call(ecs.describe_clusters, clusters=[cluster])
    clusters = found.get("clusters") or []
    if not clusters:
        raise UsageError(f"ECS cluster {cluster!r} does not exist in region {region}")
    if clusters[0].get("status") != "ACTIVE":
        status = clusters[0].get("status")
        raise UsageError(f"ECS cluster {cluster!r} is {status}, not ACTIVE")
    names = list(clusters[0].get("capacityProviders") or [])
    params: dict[str, Any] = {"cluster": cluster}
    if wanted or names:
        params["capacityProviders"] = [wanted] if wanted else names
    providers = call(ecs.describe_capacity_providers, **params)
    managed = [
        p
        for p in providers.get("capacityProviders") or []
        if (p.get("managedInstancesProvider") or p.get("type") == "MANAGED_INSTANCES")
        and p.get("status", "ACTIVE") == "ACTIVE"
    ]
    if not managed:
        listed = ", ".join(names) or "none"
        problem = (
            f"capacity provider {wanted!r} is not an active ECS Managed Instances provider"
            if wanted
            else "has no active ECS Managed Instances capacity provider"
        )
        raise UsageError(
            f"ECS cluster {cluster!r}: {problem} (the cluster's capacity providers: "
            f"{listed}); create one with CreateCapacityProvider --managed-instances-provider "
            "or name another in ecs.capacity_provider"
        )
    provider = managed[0]
    template = provider["managedInstancesProvider"].get("instanceLaunchTemplate") or {}
    storage = (template.get("storageConfiguration") or {}).get("storageSizeGiB")
    return str(provider["name"]), int(storage) if storage else None
