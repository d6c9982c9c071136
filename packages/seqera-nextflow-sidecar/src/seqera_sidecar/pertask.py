"""``seqera-sidecar config --per-task``: a Nextflow config that sizes every task by asking
the sidecar, with nothing installed in Nextflow.

Nextflow evaluates a closure given to a process directive once per task, with ``task`` in
scope (``TaskConfig``: ``process``, ``attempt``, ``exitStatus``, ``executor``,
``resourceLabels``) and the task's inputs in its context (``TaskProcessor`` puts each input
into ``task.context`` before ``setContext``). The config written here sets ``cpus``,
``memory``, ``time`` and ``clusterOptions`` of every process the history knows to closures
reading one answer per task from ``POST /v1/resources/resolve`` (the same right-sizer as
``seqera-sidecar resolve`` and the static ``config``); the Groovy and why it is shaped so
are in :mod:`._pertask_groovy`.

A ``withName`` block replaces what the process declares (Nextflow applies config
selectors over the process body), so the declared values are written into the block
(``ext.seqeraDeclared``): what the history first saw the process given on a first attempt.
A process the history has never seen is left alone: it keeps its own declaration.

The URL, timeout, cache and back-off can be changed at run time through
``SEQERA_SIDECAR_URL``, ``SEQERA_SIDECAR_TIMEOUT_MS``, ``SEQERA_SIDECAR_CACHE_MS`` and
``SEQERA_SIDECAR_BACKOFF_MS``; the token is read from ``SEQERA_SIDECAR_TOKEN`` in
Nextflow's environment and never written into the file.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from attrs import frozen

from seqera_core.dialects.groovy import groovy_string, name_selector
from seqera_core.history import History
from seqera_core.labels import METADATA, SLURM_COMMENT_MAX

from ._pertask_groovy import SHARED

__all__ = ["Declared", "Settings", "declared_values", "per_task_config"]


@frozen
class Declared:
    """What a process declared, in canonical units (``None``: not declared)."""

    cpus: float | None = None
    memory: int | None = None
    time: int | None = None


@frozen
class Settings:
    """Where the closures find the sidecar and how long they wait for it."""

    url: str = "http://127.0.0.1:8080"
    timeout_ms: int = 2000
    cache_ms: int = 60_000
    backoff_ms: int = 30_000
    cluster_options: str | None = None
    labels: Mapping[str, str] = {}
    auto_labels: Collection[str] = METADATA


def declared_values(
    history: History, processes: Iterable[str] | None = None
) -> dict[str, Declared]:
    """Per process (``processes``, or every one with a successful attempt), the values its
    earliest first attempt in the history was given; a process whose first attempts were
    given none is left out. One indexed read per process (:meth:`History.first_declared`),
    never the whole table."""
    found: dict[str, Declared] = {}
    for process in history.processes() if processes is None else processes:
        record = history.first_declared(process)
        if record is not None:
            found[process] = Declared(record.cpus, record.memory, record.time)
    return found


def _literal(text: str) -> str:
    # printable ASCII alone: the file reads the same whatever charset its reader assumes
    return groovy_string(text, ascii_only=True)


def _number(value: float | None) -> str:
    if value is None:
        return "null"
    if float(value).is_integer():
        return f"{int(value)}L"
    return repr(float(value))


def _declared_map(declared: Declared, cluster_options: str | None) -> str:
    entries = [
        f"cpus: {_number(declared.cpus)}",
        f"memory: {_number(declared.memory)}",
        f"time: {_number(declared.time)}",
        "clusterOptions: " + ("null" if cluster_options is None else _literal(cluster_options)),
    ]
    return "[" + ", ".join(entries) + "]"


def _comment(text: str) -> str:
    """One line of comment: nothing in it can end the line or the comment."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def _shared(settings: Settings) -> str:
    auto = "[" + ", ".join(_literal(name) for name in sorted(settings.auto_labels)) + "]"
    labels = ", ".join(f"{_literal(k)}: {_literal(v)}"
                       for k, v in sorted(settings.labels.items()))  # fmt: skip
    replacements = {
        "@URL@": _literal(settings.url),
        "@TIMEOUT@": str(settings.timeout_ms),
        "@TTL@": str(settings.cache_ms),
        "@BACKOFF@": str(settings.backoff_ms),
        "@AUTO@": auto,
        "@LABELS@": f"[{labels or ':'}]",
        "@COMMENT_MAX@": str(SLURM_COMMENT_MAX),
    }
    text = SHARED
    for placeholder, value in replacements.items():
        text = text.replace(placeholder, value)
    return text


def per_task_config(
    processes: Mapping[str, Declared], settings: Settings, notes: Mapping[str, str] = {}
) -> str:
    """The config: the shared closure, then one ``withName`` block per process."""
    lines = [
        "// Written by seqera-sidecar config --per-task. Every task of the processes below",
        "// asks the sidecar for its cpus, memory and time (and gets its resourceLabels",
        "// into clusterOptions on slurm, pbspro, sge and lsf); on any error or timeout it",
        "// keeps the declared values written here. The token is read from",
        "// $SEQERA_SIDECAR_TOKEN; it is never in this file.",
        "// Use with: nextflow run ... -c <this file>",
        "process {",
        _shared(settings).rstrip("\n").lstrip("\n"),
    ]
    for process in sorted(processes):
        declared = processes[process]
        if process in notes:
            lines.append(f"    // {_comment(notes[process])}")
        lines += [
            f"    withName: {name_selector(process, ascii_only=True)} {{",
            f"        ext.seqeraDeclared = {_declared_map(declared, settings.cluster_options)}",
            "        cpus = { task.ext.seqeraSidecar.cpus }",
            "        memory = { task.ext.seqeraSidecar.memory }",
            "        time = { task.ext.seqeraSidecar.time }",
            "        clusterOptions = { task.ext.seqeraSidecar.clusterOptions }",
            "    }",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"
