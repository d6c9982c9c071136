"""Effective resources in Nextflow's own notation, and a ``withName`` config from history."""

from __future__ import annotations

from collections.abc import Iterable

from seqera_core.dialects.nextflow import config_directives
from seqera_core.history import History
from seqera_core.models import ResourceRequest, ResourceResponse
from seqera_core.resolvers import MaximumResolver

__all__ = ["directives", "process_config"]


def directives(response: ResourceResponse) -> dict[str, str]:
    """``cpus``/``memory``/``time`` in Nextflow's config notation (the core's dialect)."""
    return config_directives(response)


def _quoted(name: str) -> str:
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def process_config(history: History, resolver: MaximumResolver) -> str:
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
