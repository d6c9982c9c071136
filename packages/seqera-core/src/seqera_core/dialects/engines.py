"""Build the common request from any engine's resources, by engine name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ResourceError
from ..models import ResourceRequest, Submission, Translation
from . import cwl, ecs, local, nextflow, pbs, slurm, snakemake

__all__ = ["BACKENDS", "ENGINES", "GENERIC_KEYS", "submission", "translate"]

ENGINES = ("nextflow", "snakemake", "cwl")
BACKENDS = ("local", "slurm", "pbs", "torque", "ecs")
# What --cpus/--memory/--time/--disk/--accelerator mean in each engine's own words.
GENERIC_KEYS: dict[str, dict[str, str]] = {
    "nextflow": {
        "cpus": "cpus", "memory": "memory", "time": "time", "disk": "disk",
        "accelerator": "accelerator",
    },
    "snakemake": {
        "cpus": "threads", "memory": "mem", "time": "runtime", "disk": "disk",
        "accelerator": "gpu",
    },
    "cwl": {
        "cpus": "coresMin", "memory": "ramMin", "time": "timelimit", "disk": "outdirMin",
        "accelerator": "cudaDeviceCountMin",
    },
}  # fmt: skip


def _nest(values: Mapping[str, Any]) -> dict[str, Any]:
    # `resourceLimits.memory=8 GB` on a command line becomes {"resourceLimits": {"memory": ...}}.
    nested: dict[str, Any] = {}
    for key, value in values.items():
        head, dot, tail = key.partition(".")
        if dot:
            nested.setdefault(head, {})[tail] = value
        else:
            nested[key] = value
    return nested


def translate(engine: str, values: Mapping[str, Any], *, process: str | None = None) -> Translation:
    """The common request for resources written in ``engine``'s dialect."""
    if engine == "nextflow":
        return Translation(nextflow.request_from_directives(_nest(values), process=process))
    if engine == "snakemake":
        return snakemake.request_from_resources(values, rule=process)
    if engine == "cwl":
        return Translation(cwl.request_from_requirements(values, process=process))
    raise ResourceError("engine", engine, f"one of {', '.join(ENGINES)}")


def submission(backend: str, request: ResourceRequest) -> Submission:
    """What ``backend`` would receive for ``request``."""
    builders = {
        "local": local.submission,
        "slurm": slurm.submission,
        "pbs": pbs.pro_submission,
        "torque": pbs.torque_submission,
        "ecs": ecs.submission,
    }
    if backend not in builders:
        raise ResourceError("backend", backend, f"one of {', '.join(BACKENDS)}")
    return builders[backend](request)
