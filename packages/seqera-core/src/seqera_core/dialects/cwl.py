"""CWL's resource dialect: ``ResourceRequirement``, ``ToolTimeLimit``, ``cwltool:CUDARequirement``.

Rules from the CWL v1.2 spec and cwltool ``process.py`` (``evalResources``): ram,
tmpdir and outdir are MiB and may be fractional (rounded up to whole MiB),
cores may be fractional (kept, rounded up only for schedulers), a missing or
zero ``*Min`` takes ``*Max``, then the defaults (1 core, 256 MiB, or 1024 MiB for
v1.0, 1024 MiB tmpdir and outdir); ``timelimit`` is seconds and 0 means unlimited.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import ResourceError
from ..models import Accelerator, ResourceRequest
from ..units import MIB
from ._values import number

__all__ = ["evaluate_requirements", "request_from_requirements", "request_from_resources"]

_RESOURCE_KEYS = {
    f"{name}{end}" for name in ("cores", "ram", "tmpdir", "outdir") for end in ("Min", "Max")
}
_CUDA_KEYS = {"cudaDeviceCountMin", "cudaDeviceCountMax", "cudaVersionMin", "cudaComputeCapability"}
_TIME_KEYS = {"timelimit"}
KEYS = frozenset(_RESOURCE_KEYS | _CUDA_KEYS | _TIME_KEYS)


def _value(field: str, value: Any) -> float | int:
    if isinstance(value, str) and ("$(" in value or "${" in value):
        raise ResourceError(field, value, "an evaluated number (cwltool evaluates expressions)")
    unit = "cores" if field.startswith("cores") else "devices" if "cuda" in field else "MiB"
    return number(field, value, f"a non-negative number of {unit}")


def evaluate_requirements(
    requirements: Mapping[str, Any], *, cwl_version: str = "v1.2"
) -> dict[str, float | int]:
    """``builder.resources`` as cwltool's ``evalResources`` computes them, expressions excluded."""
    unknown = set(requirements) - KEYS
    if unknown:
        name = sorted(unknown)[0]
        raise ResourceError(name, requirements[name], f"one of {sorted(KEYS)}")
    ram = 1024 if cwl_version == "v1.0" else 256
    minimum: dict[str, float | int] = {"cores": 1, "ram": ram, "tmpdir": 1024, "outdir": 1024}
    names = ["cores", "ram", "tmpdir", "outdir"]
    if any(k.startswith("cudaDevice") for k in requirements):
        minimum["cudaDeviceCount"] = 1
        names.append("cudaDeviceCount")
    for name in names:
        # cwltool tests truthiness: a 0 falls through to *Max, then to the default.
        low, high = requirements.get(name + "Min"), requirements.get(name + "Max")
        field, written = (name + "Min", low) if low else (name + "Max", high)
        if written:
            minimum[name] = _value(field, written)
            if name == "cores" and minimum[name] <= 0:  # 1e-400 reads as 0.0: name it
                raise ResourceError(field, written, "a number of cores greater than 0")
    result: dict[str, float | int] = {
        "cores": minimum["cores"],
        "ram": math.ceil(minimum["ram"]),
        "tmpdirSize": math.ceil(minimum["tmpdir"]),
        "outdirSize": math.ceil(minimum["outdir"]),
    }
    if "cudaDeviceCount" in minimum:
        result["cudaDeviceCount"] = minimum["cudaDeviceCount"]
    return result


def request_from_resources(
    resources: Mapping[str, Any],
    *,
    timelimit: Any = None,
    process: str | None = None,
    attempt: int = 1,
) -> ResourceRequest:
    """The common request for cwltool's evaluated ``builder.resources`` and a ``timelimit``."""
    given = resources.get("cores", 1)
    cores = _value("cores", given)
    if cores <= 0:  # name what was written: 1e-400 reads as 0.0
        raise ResourceError("coresMin", given, "a number of cores greater than 0")
    ram = math.ceil(_value("ram", resources["ram"])) if "ram" in resources else None
    disk = sum(
        math.ceil(_value(key, resources[key])) for key in ("tmpdirSize", "outdirSize")
        if key in resources
    )  # fmt: skip
    devices = resources.get("cudaDeviceCount")
    accelerator = None
    if devices:
        count = math.ceil(_value("cudaDeviceCountMin", devices))
        accelerator = Accelerator(count, "nvidia")
    time = None
    if timelimit is not None:
        seconds = number("timelimit", timelimit, "a non-negative number of seconds (0 = unlimited)")
        time = math.ceil(seconds) or None
    return ResourceRequest(
        cpus=cores,
        memory=ram * MIB if ram else None,
        disk=disk * MIB if disk else None,
        time=time,
        accelerator=accelerator,
        process=process,
        attempt=attempt,
    )


def request_from_requirements(
    requirements: Mapping[str, Any],
    *,
    cwl_version: str = "v1.2",
    process: str | None = None,
    attempt: int = 1,
) -> ResourceRequest:
    """The common request for ResourceRequirement, ToolTimeLimit and CUDARequirement fields."""
    resources = {k: v for k, v in requirements.items() if k not in _TIME_KEYS}
    return request_from_resources(
        evaluate_requirements(resources, cwl_version=cwl_version),
        timelimit=requirements.get("timelimit"),
        process=process,
        attempt=attempt,
    )
