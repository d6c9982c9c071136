"""Effective resources in Nextflow's own notation, and a ``withName`` config from history.

The static config asks the same resolver chain as ``seqera-sidecar resolve`` and the
per-task config (:mod:`.pertask`), with what a config can know: the process name and
no input size. Each block says what its values rest on: the runs seen and how far the
answer stands above the largest use seen (the margin the right-sizer chose).
"""

from __future__ import annotations

from seqera_core.dialects.groovy import name_selector
from seqera_core.dialects.nextflow import config_directives, format_duration, format_memory
from seqera_core.history import History, ProcessStats
from seqera_core.models import ResourceRequest, ResourceResponse
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import Resolver, resolve

__all__ = ["basis", "directives", "process_config"]


def directives(response: ResourceResponse) -> dict[str, str]:
    """``cpus``/``memory``/``time`` in Nextflow's config notation (the core's dialect)."""
    return config_directives(response)


def basis(stats: ProcessStats | None, answer: ResourceResponse) -> str:
    """What an answer rests on: ``12 runs; memory 1.31 x the largest peak (2.1 GB); ...``."""
    if stats is None:
        return "no runs seen"
    parts = [f"{stats.runs} run{'s' if stats.runs != 1 else ''} seen"]
    if stats.peak_memory:
        parts.append(f"memory {answer.memory / stats.peak_memory:.2f} x the largest peak "
                     f"({format_memory(stats.peak_memory)})")  # fmt: skip
    if stats.realtime:
        longest = max(1, round(stats.realtime))
        parts.append(f"time {answer.time / stats.realtime:.2f} x the longest run "
                     f"({format_duration(longest)})")  # fmt: skip
    return "; ".join(parts)


def _printable(text: str) -> str:
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def process_config(history: History, resolvers: list[Resolver], *, cpus: bool = False) -> str:
    """A Nextflow config with one ``withName`` block per process the history knows.

    ``cpus``: write the cpus the resolvers chose (without a declared value a resolver
    that leaves cpus alone answers 1, which would override the process's own).
    """
    lines = [
        "// Written by seqera-sidecar config from the task history, by the same right-sizer",
        "// as seqera-sidecar resolve, for a task whose input size is unknown.",
        "// Use with: nextflow run ... -c <this file>",
        "process {",
    ]
    for process in sorted(history.processes()):
        resolution = resolve(ResourceRequest(process=process), resolvers, defaults=DEFAULTS)
        if resolution.resolver == "declared":
            continue
        answer = resolution.effective
        values = directives(answer)
        if not cpus:
            values.pop("cpus")
        body = "; ".join(f"{key} = {value}" for key, value in values.items())
        lines.append(f"    // {_printable(process)}: {basis(history.stats(process), answer)}")
        lines.append(f"    withName: {name_selector(process)} {{ {body} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"
