"""Effective resources in Nextflow's own notation, and a ``withName`` config from history."""

from __future__ import annotations

from collections.abc import Iterable

from seqera_core.dialects.nextflow import format_duration, format_memory
from seqera_core.history import History
from seqera_core.models import ResourceRequest, ResourceResponse
from seqera_core.resolvers import HistoryResolver
from seqera_core.units import MIB, ceil_div

__all__ = ["directives", "process_config"]


def directives(response: ResourceResponse) -> dict[str, str]:
    """``cpus``/``memory``/``time`` as Nextflow writes them: memory up to whole MB (MiB),
    time up to whole minutes, so the config stays readable and never gives less."""
    memory = ceil_div(response.memory, MIB) * MIB
    time = ceil_div(response.time, 60) * 60
    cpus = ceil_div(int(response.cpus * 1000), 1000)
    return {"cpus": str(cpus), "memory": f"'{format_memory(memory)}'",
            "time": f"'{format_duration(time)}'"}  # fmt: skip


def _quoted(name: str) -> str:
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def process_config(history: History, resolver: HistoryResolver) -> str:
    """A Nextflow config with one ``withName`` block per process the history knows."""
    lines = [
        "// Written by seqera-sidecar config from the task history: the largest use seen",
        "// per process, plus a margin. Use with: nextflow run ... -c <this file>",
        "process {",
    ]
    for process in _sorted(history.processes()):
        answer = resolver.resolve(ResourceRequest(process=process))
        if answer is None:
            continue
        values = directives(answer)
        body = "; ".join(f"{key} = {value}" for key, value in values.items())
        lines.append(f"    withName: {_quoted(process)} {{ {body} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _sorted(names: Iterable[str]) -> list[str]:
    return sorted(names)
