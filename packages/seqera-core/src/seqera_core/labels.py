"""Run and task labels: a run baseline, per-task deltas, and each backend's form of them.

Metadata labels are named ``<engine>/<name>``: ``nextflow/run-name``, ``snakemake/run-id``,
``cwl/user``. One lowercase, dash-separated convention for every engine, so labels from
two engines never collide and a user filters on one engine's with one prefix. User labels
win over metadata on a key collision. Every value is a string.

Backend forms (pure functions; nothing a label holds can end an argument, start an
option or split a list):

- Slurm: ``--comment=k=v;k2=v2`` (:func:`slurm_comment_args`), percent-encoded, at most
  :data:`SLURM_COMMENT_MAX` bytes; :func:`decode_labels` reads it back from ``squeue``.
- PBS: ``-v SEQERA_LABELS=k=v;k2=v2`` (:func:`pbs_args`), the same encoding.
- ECS: ``tags`` (:func:`ecs_tags`), sanitised to AWS's tag rules.
- Environment of the job: ``SEQERA_LABEL_<NAME>`` (:func:`label_environment`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal
from urllib.parse import quote, unquote

from .errors import ResourceError

__all__ = [
    "ECS_MAX_TAGS",
    "ENV_PREFIX",
    "METADATA",
    "PBS_VARIABLE",
    "SLURM_COMMENT_MAX",
    "decode_labels",
    "ecs_tags",
    "encode_labels",
    "env_name",
    "label_environment",
    "pbs_args",
    "pbs_variables",
    "run_labels",
    "sge_context",
    "slurm_comment_args",
    "string_labels",
    "task_delta",
]

METADATA = ("engine", "run-name", "run-id", "project", "user", "resume")
ECS_MAX_TAGS = 50
# slurmctld refuses a longer comment with ESLURM_PATHNAME_TOO_LONG
# (_test_job_desc_fields in src/slurmctld/job_mgr.c: `"comment", 1024`).
SLURM_COMMENT_MAX = 1024
PBS_VARIABLE = "SEQERA_LABELS"
ENV_PREFIX = "SEQERA_LABEL_"
# AWS tag rules (ECS API reference, Tag): keys 1-128, values 0-256 characters; letters,
# digits, spaces and _ . : / = + - @; neither keys nor values may start with aws: (any
# case). `\w` is Unicode-aware, as AWS allows letters in any script.
_ECS_NOT_ALLOWED = re.compile(r"[^\w .:/=+\-@]")
_ECS_KEY_MAX = 128
_ECS_VALUE_MAX = 256
# Characters encode_labels leaves as they are; everything else is %XX (UTF-8), so the
# result holds no ';' '=' ',' quote, backslash, '$', whitespace or control character: it
# survives qsub -v parsing and tools that split `scontrol show job -o` on spaces.
_SAFE = "_.:/@+-~"
_NOT_ENV_NAME = re.compile(r"[^A-Z0-9_]", re.ASCII)


def _text(value: Any) -> str:
    # Lowercase booleans as YAML, JSON and Nextflow write them; None is "no value".
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def string_labels(labels: Mapping[Any, Any] | None) -> dict[str, str]:
    """Labels with string keys and values: ``True`` is ``"true"``, ``None`` is ``""``."""
    return {str(k): _text(v) for k, v in (labels or {}).items()}


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
    elif isinstance(auto, str):  # a lone name would otherwise be read letter by letter
        raise ResourceError("autoLabels", auto, f"all, none, or a list of {', '.join(METADATA)}")
    else:
        chosen = set(auto)
        if chosen - set(METADATA):
            name = sorted(chosen - set(METADATA))[0]
            expected = f"all, none, or a list of {', '.join(METADATA)}"
            raise ResourceError("autoLabels", name, expected)
    labels = {f"{engine}/{k}": _text(v) for k, v in metadata.items() if k in chosen}
    theirs = string_labels(user)
    if "" in theirs:
        raise ResourceError("labels", "", "a label name of at least one character")
    labels.update(theirs)
    return labels


def task_delta(baseline: Mapping[str, str], task: Mapping[str, Any]) -> dict[str, str]:
    """Only the task labels that are new or differ from the run baseline; ``{}`` if none."""
    return {k: v for k, v in string_labels(task).items() if baseline.get(k) != v}


def _utf8(text: str) -> bytes:
    # A label from argv bytes that are not UTF-8 holds lone surrogates (surrogateescape):
    # they go back to those bytes (%FF); any other lone surrogate becomes "?". quote()
    # itself encodes strictly and raised UnicodeEncodeError.
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _pair(key: str, value: str) -> str:
    return f"{quote(_utf8(key), safe=_SAFE)}={quote(_utf8(value), safe=_SAFE)}"


def encode_labels(labels: Mapping[str, str], limit: int | None = None) -> str:
    """``k=v;k=v`` sorted by key, every character outside ``[A-Za-z0-9_.:/@+~-]`` as ``%XX``.

    With ``limit``, whole pairs that would make the text longer are left out (never half a
    pair), so what is kept still decodes exactly; compare keys to see what was dropped.
    """
    pairs: list[str] = []
    length = 0
    for key, value in sorted(labels.items()):
        pair = _pair(key, value)
        grown = length + len(pair) + (1 if pairs else 0)
        if limit is not None and grown > limit:
            continue
        pairs.append(pair)
        length = grown
    return ";".join(pairs)


def decode_labels(text: str) -> dict[str, str]:
    """The labels :func:`encode_labels` encoded."""
    pairs = (item.partition("=") for item in text.split(";") if item)
    return {unquote(k): unquote(v) for k, _, v in pairs}


def slurm_comment_args(labels: Mapping[str, str]) -> list[str]:
    """``["--comment=<encoded>"]`` within Slurm's 1024-byte limit, or ``[]`` for no labels.

    One argv element: ``=`` binds the value, so a value can never be read as an option.
    """
    text = encode_labels(labels, SLURM_COMMENT_MAX)
    return [f"--comment={text}"] if text else []


def pbs_variables(labels: Mapping[str, str]) -> dict[str, str]:
    """The job variables for ``qsub -v``: one, ``SEQERA_LABELS``, holding the encoded labels.

    One variable, not one per label: label names need not be valid variable names, and
    folding them into ``[A-Z0-9_]`` would merge ``a-b`` with ``a_b``.
    """
    return {PBS_VARIABLE: encode_labels(labels)} if labels else {}


def pbs_args(labels: Mapping[str, str]) -> list[str]:
    """``["-v", "SEQERA_LABELS=<encoded>"]``, or ``[]`` for no labels.

    qsub splits ``-v`` at commas and ends a value at a quote (``copy_env_value`` in OpenPBS
    ``src/cmds/qsub.c``); the encoding holds neither, so no escaping is needed.
    """
    variables = pbs_variables(labels)
    return ["-v", ",".join(f"{k}={v}" for k, v in variables.items())] if variables else []


def sge_context(labels: Mapping[str, str]) -> list[str]:
    """Grid Engine job context variables (``qsub -ac``), one ``name=value`` per label.

    One variable per label, unlike PBS: a context variable's name may be any text without
    ``,`` or ``=`` (``qstat -j`` shows them as given), and the encoding holds neither.
    """
    text = encode_labels(labels)
    return text.split(";") if text else []


def env_name(label: str) -> str:
    """``SEQERA_LABEL_<NAME>``: the label upper-cased, anything outside ``[A-Z0-9_]`` as ``_``."""
    return ENV_PREFIX + _NOT_ENV_NAME.sub("_", label.upper())


def label_environment(labels: Mapping[str, str]) -> dict[str, str]:
    """``SEQERA_LABEL_<NAME>`` variables: the name upper-cased, other characters as ``_``.

    Names that fold together (``a-b``, ``a_b``) keep the value of the later label, in sorted
    order; :func:`encode_labels` is the lossless form.
    """
    return {env_name(k): v for k, v in sorted(labels.items())}


def _ecs_text(text: str, length: int) -> str:
    cleaned = _ECS_NOT_ALLOWED.sub("_", text)
    if cleaned[:4].lower() == "aws:":
        cleaned = "_" + cleaned  # the aws: prefix is reserved for AWS's own tags
    return cleaned[:length]


def ecs_tags(labels: Mapping[str, str]) -> list[dict[str, str]]:
    """ECS ``tags`` for labels: disallowed characters become ``_``, lengths are cut to AWS's
    limits, an ``aws:`` prefix gets a leading ``_``; more than 50 tags is an error.

    A label with an empty name is left out (AWS needs at least one character); names that
    sanitise to the same key keep the value of the later label, in sorted order.
    """
    tags: dict[str, str] = {}
    for key, value in sorted(labels.items()):
        name = _ecs_text(key, _ECS_KEY_MAX)
        if name:
            tags[name] = _ecs_text(value, _ECS_VALUE_MAX)
    if len(tags) > ECS_MAX_TAGS:
        raise ResourceError("labels", len(tags), f"at most {ECS_MAX_TAGS} tags on an ECS task")
    return [{"key": k, "value": v} for k, v in tags.items()]
