"""Ready-to-use configs that apply the right-sizer's advice: Nextflow and Snakemake.

Nextflow: a config of ``withName`` selectors (``nextflow run ... -c FILE``), each with
``cpus``, ``memory`` and ``time`` in Nextflow's own notation
(:mod:`seqera_core.dialects.nextflow`), memory rounded up to whole MB (MiB) and time to
whole minutes, as ``seqera-sidecar config`` writes them, so the file stays readable and a
task never gets less. Nextflow's ``withName`` takes a simple or a fully qualified
process name (``ConfigBuilder``/``ProcessConfig.applyConfigSelector``); the name is
written by :func:`seqera_core.dialects.groovy.name_selector`.

Snakemake: a profile's ``config.yaml`` entries ``set-threads`` and ``set-resources``
(``snakemake --profile DIR``), each a mapping of rule names, with ``mem_mb`` (10^6 bytes)
and ``runtime`` (minutes) rounded up (:mod:`seqera_core.dialects.snakemake`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import yaml

from ..dialects.groovy import name_selector
from ..dialects.nextflow import format_duration, format_memory
from ..dialects.snakemake import format_mem_mb, format_runtime
from ..units import MIB, ceil_div
from ._advice import Advice

__all__ = ["nextflow_config", "nextflow_directives", "snakemake_profile"]


def nextflow_directives(advice: Advice) -> dict[str, str]:
    """The advice as Nextflow directives (values as written in a config)."""
    values = {"cpus": str(math.ceil(advice.cpus))}
    if advice.memory is not None:
        values["memory"] = f"'{format_memory(ceil_div(advice.memory, MIB) * MIB)}'"
    if advice.time is not None:
        values["time"] = f"'{format_duration(ceil_div(advice.time, 60) * 60)}'"
    return values


def nextflow_config(advice: Iterable[Advice]) -> str:
    """A Nextflow config with one ``withName`` block per process advised."""
    lines = [
        "// Written by seqera report from the task history: what the right-sizer would ask",
        "// for next time. Use with: nextflow run ... -c <this file>",
        "process {",
    ]
    for each in sorted(advice, key=lambda a: a.process):
        body = "; ".join(f"{k} = {v}" for k, v in nextflow_directives(each).items())
        lines.append(f"    withName: {name_selector(each.process)} {{ {body} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def snakemake_profile(advice: Iterable[Advice]) -> str:
    """A Snakemake profile's ``set-threads`` and ``set-resources`` for every rule advised."""
    threads: dict[str, int] = {}
    resources: dict[str, dict[str, Any]] = {}
    for each in sorted(advice, key=lambda a: a.process):
        threads[each.process] = math.ceil(each.cpus)
        values: dict[str, Any] = {}
        if each.memory is not None:
            values["mem_mb"] = format_mem_mb(each.memory)
        if each.time is not None:
            values["runtime"] = format_runtime(each.time)
        if values:
            resources[each.process] = values
    header = (
        "# Written by seqera report from the task history: what the right-sizer would ask\n"
        "# for next time. Add to a profile's config.yaml; use with: snakemake --profile DIR\n"
    )
    document = {"set-threads": threads, "set-resources": resources}
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
