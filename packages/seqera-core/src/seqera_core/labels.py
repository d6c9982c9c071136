"""Run and task labels: a run baseline, per-task deltas, and each backend's form of them.

Metadata labels are named ``<engine>/<name>`` (``nextflow/run-name``), so labels from
two engines never collide and users can filter on one engine's. User labels win over
metadata on a key collision. Every value is a string.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal
from urllib.parse import quote, unquote

from .errors import ResourceError

__all__ = [
    "ECS_MAX_TAGS",
    "METADATA",
    "decode_labels",
    "ecs_tags",
    "encode_labels",
    "run_labels",
    "task_delta",
]

METADATA = ("engine", "run-name", "run-id", "project", "user", "resume")
ECS_MAX_TAGS = 50
# AWS tag rules (Tagging Best Practices; ECS TagResource): keys 1-128, values 0-256
# characters; letters, digits, spaces and _ . : / = + - @; keys may not start with aws:.
_ECS_NOT_ALLOWED = re.compile(r"[^\w .:/=+\-@]")
# Characters encode_labels leaves as they are; everything else is %XX (UTF-8), so the
# result holds no ';' '=' ',' quote, backslash, whitespace or control character: it
# survives qsub -v parsing and tools that split `scontrol show job -o` on spaces.
_SAFE = "_.:/@+-~"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def run_labels(
    engine: str,
    metadata: Mapping[str, Any],
    user: Mapping[str, Any] | None = None,
    *,
    auto: Literal["all", "none"] | Collection[str] = "all",
) -> dict[str, str]:
    """The run baseline: chosen metadata as ``<engine>/<name>``, then the user's labels.

    ``auto`` picks the metadata labels: ``"all"``, ``"none"`` or a list of names from
    :data:`METADATA` (as nf-seqera's ``autoLabels``).
    """
    unknown = set(metadata) - set(METADATA)
    if unknown:
        name = sorted(unknown)[0]
        raise ResourceError(f"metadata.{name}", metadata[name], f"one of {', '.join(METADATA)}")
    if auto == "all":
        chosen = set(METADATA)
    elif auto == "none":
        chosen = set()
    else:
        chosen = set(auto)
        if chosen - set(METADATA):
            name = sorted(chosen - set(METADATA))[0]
            raise ResourceError("autoLabels", name, f"all, none, or names from {METADATA}")
    labels = {f"{engine}/{k}": _text(v) for k, v in metadata.items() if k in chosen}
    labels.update({str(k): _text(v) for k, v in (user or {}).items()})
    return labels


def task_delta(baseline: Mapping[str, str], task: Mapping[str, Any]) -> dict[str, str]:
    """Only the task labels that are new or differ from the run baseline."""
    delta = {}
    for key, value in task.items():
        text = _text(value)
        if baseline.get(str(key)) != text:
            delta[str(key)] = text
    return delta


def encode_labels(labels: Mapping[str, str]) -> str:
    """``k=v;k=v``, every character outside ``[A-Za-z0-9_.:/@+~-]`` percent-encoded.

    The form labels take in one scheduler argument (Slurm ``--comment``, PBS ``-v``):
    nothing a label holds can end the argument, start an option or split the list.
    """
    return ";".join(
        f"{quote(k, safe=_SAFE)}={quote(v, safe=_SAFE)}" for k, v in sorted(labels.items())
    )


def decode_labels(text: str) -> dict[str, str]:
    """The labels :func:`encode_labels` encoded."""
    pairs = (item.partition("=") for item in text.split(";") if item)
    return {unquote(k): unquote(v) for k, _, v in pairs}


def ecs_tags(labels: Mapping[str, str]) -> list[dict[str, str]]:
    """ECS ``tags`` for labels: disallowed characters become ``_``, lengths are cut to AWS's
    limits, an ``aws:`` prefix is escaped; more than 50 tags is an error, not a silent cut."""
    tags: dict[str, str] = {}
    for key, value in labels.items():
        name = _ECS_NOT_ALLOWED.sub("_", key)[:128]
        if name.lower().startswith("aws:"):
            name = ("_" + name)[:128]  # the aws: prefix is reserved for AWS
        if not name:
            continue
        tags[name] = _ECS_NOT_ALLOWED.sub("_", value)[:256]
    if len(tags) > ECS_MAX_TAGS:
        raise ResourceError("labels", len(tags), f"at most {ECS_MAX_TAGS} tags on an ECS task")
    return [{"key": k, "value": v} for k, v in tags.items()]
