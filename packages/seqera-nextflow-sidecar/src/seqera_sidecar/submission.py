"""A task document from a client, checked field by field and made into a job spec.

A task is ``{id?, name?, image?, command, environment?, resources?, labels?}`` (the
contract's ``TaskSubmission``). Its ``id``, when the client gives one, makes a retry
safe; its digest tells a retry from a different task under the same id. The submission
key goes with the job as the spec's ``key`` (what ``Backend.find`` looks up) and as
``$SEQERA_SUBMISSION_KEY`` (in the job's own environment).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from seqera_core import wire
from seqera_core.backends import JobHandle, JobSpec
from seqera_core.errors import WireError
from seqera_core.models import ResourceRequest

__all__ = ["KEY_VARIABLE", "Parsed", "by_name", "keyed", "task_spec"]

KEY_VARIABLE = "SEQERA_SUBMISSION_KEY"
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_FIELDS = {"id", "name", "image", "command", "environment", "resources", "labels"}
# What every backend can carry, checked here so a task no backend could ever run is a 400
# (not a 503 the client would retry): a variable name a shell can export (POSIX "Name",
# XBD 3.235; the batch backends' job scripts export each), no NUL in any string execve()
# passes, a name a scheduler takes as a job name (the backends cut it for file names).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_MAX_NAME = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@attrs.frozen
class Parsed:
    """A checked task: the client's id (if any), the spec, the document's digest."""

    id: str | None
    spec: JobSpec
    digest: str


def task_spec(index: int, document: Any) -> Parsed:
    """The task at ``$.tasks[index]``; WireError naming the first faulty field."""
    where = f"$.tasks[{index}]"
    if not isinstance(document, Mapping):
        raise WireError([f"{where}: expected an object"])
    if unknown := set(document) - _FIELDS:
        raise WireError([f"{where}.{sorted(unknown)[0]}: unexpected key"])
    task_id = document.get("id")
    if task_id is not None and not (isinstance(task_id, str) and _TASK_ID.fullmatch(task_id)):
        raise WireError([f"{where}.id: {str(task_id)[:80]!r} is not 1 to 128 letters, digits "
                         "or ._:- starting with a letter or digit"])  # fmt: skip
    command = document.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise WireError([f"{where}.command: expected a non-empty list of strings (an argv)"])
    name = document.get("name") or f"task-{index}"
    environment = document.get("environment") or {}
    labels = document.get("labels") or {}
    for key, value in (("name", name), ("image", document.get("image") or "")):
        if not isinstance(value, str):
            raise WireError([f"{where}.{key}: expected a string"])
    if len(name) > _MAX_NAME or _CONTROL.search(name):
        shown = repr(name[:40]) + ("..." if len(name) > 40 else "")
        raise WireError([f"{where}.name: {shown} is not 1 to {_MAX_NAME} characters "
                         "without control characters"])  # fmt: skip
    if any("\0" in arg for arg in command):
        raise WireError([f"{where}.command: an argument holds a NUL character"])
    for key, mapping in (("environment", environment), ("labels", labels)):
        if not isinstance(mapping, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            raise WireError([f"{where}.{key}: expected an object of strings"])
    for variable, value in environment.items():
        if not _ENV_NAME.fullmatch(variable):
            raise WireError([f"{where}.environment: {variable[:80]!r} is not a variable name "
                             "(letters, digits and _, not starting with a digit)"])  # fmt: skip
        if "\0" in value:
            raise WireError([f"{where}.environment.{variable}: the value holds a NUL character"])
    try:
        request = wire.structure(document.get("resources") or {}, ResourceRequest)
    except WireError as exc:
        raise WireError([p.replace("$", f"{where}.resources", 1) for p in exc.problems]) from None
    if document.get("image"):
        request = attrs.evolve(request, container=document["image"])
    request = attrs.evolve(request, labels={**request.labels, **labels},
                           process=request.process or name)  # fmt: skip
    spec = JobSpec(name=name, command=tuple(command), request=request, env=environment)
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    return Parsed(task_id, spec, digest)


def keyed(spec: JobSpec, key: str) -> JobSpec:
    """``spec`` carrying the submission ``key``: ``JobSpec.key`` and ``$SEQERA_SUBMISSION_KEY``."""
    return attrs.evolve(spec, env={**spec.env, KEY_VARIABLE: key}, key=key)


def by_name(
    fresh: Sequence[tuple[str, str, JobSpec]], submitted: Sequence[JobHandle]
) -> list[JobHandle | None]:
    """A SubmitError's handles (in task order) matched to their tasks by name."""
    left = list(submitted)
    mapped: list[JobHandle | None] = []
    for _, _, spec in fresh:
        match = next((h for h in left if h.name == spec.name), None)
        if match is not None:
            left.remove(match)
        mapped.append(match)
    return mapped
