"""Build the common request from any engine's resources, by engine name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..errors import ResourceError, SeqeraError
from ..models import ResourceRequest, Submission, Translation
from . import cwl, nextflow, snakemake

__all__ = [
    "ENGINES", "GENERIC_KEYS", "as_submitted", "memory_floor", "submission", "translate",
]  # fmt: skip

ENGINES = ("nextflow", "snakemake", "cwl")
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
        if dot and head and tail:  # ".x" or "x." name no directive's field: left whole
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


def as_submitted(engine: str, request: ResourceRequest) -> tuple[ResourceRequest, tuple[str, ...]]:
    """``request`` as the engine's seqera executor submits it, and what it filled in.

    ``snakemake --executor seqera`` runs each job in the memory
    :func:`~seqera_core.dialects.snakemake.job_memory` gives it (Snakemake's default when
    the rule declares none); the other engines submit what they declared.
    """
    if engine != "snakemake":
        return request, ()
    memory, raised = snakemake.job_memory(request.memory, request.input_bytes)
    if memory == request.memory:
        return request, ()
    note = raised or (
        "no memory declared: the executor submits Snakemake's default for a job without "
        f"input, {snakemake.format_mem_mb(memory)} MB (twice the input, 1000 to 8000 MB)"
    )
    return attrs.evolve(request, memory=memory), (note,)


def memory_floor(engine: str) -> int:
    """The least memory (bytes) ``engine``'s seqera executor runs a job in.

    ``snakemake --executor seqera`` raises a smaller request to
    :data:`~seqera_core.dialects.snakemake.RUNNER_MEMORY`, since every job runs Snakemake
    itself around its command; the other engines submit what they are given.
    """
    return snakemake.RUNNER_MEMORY if engine == "snakemake" else 0


def submission(
    backend: str, request: ResourceRequest, settings: Mapping[str, Any] | None = None
) -> Submission:
    """What ``backend`` would receive for ``request`` (the registry names the writer), with
    the site's ``settings`` where the backend has some (Grid Engine's memory resource)."""
    # the registry (entry points, every backend's module) only when a backend is named:
    # the translations and a report's memory floor need none of it
    from ..backends.registry import BACKENDS, entry

    try:
        found = entry(backend)
    except SeqeraError:
        raise ResourceError("backend", backend, f"one of {', '.join(BACKENDS)}") from None
    return found.submission(request, settings)
