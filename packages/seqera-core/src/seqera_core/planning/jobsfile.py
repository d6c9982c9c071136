"""JOBS.json, the file ``seqera plan`` and ``seqera squash`` read: a JSON list of jobs.

:func:`read_json` decodes the file; every fault is a :class:`~seqera_core.errors.
ResourceError` naming the file (the CLI exits 2), never a traceback. Besides unreadable
files and invalid JSON that covers what Python's own JSON reader raises past its
limits: an integer of more than ``sys.get_int_max_str_digits()`` digits (4,300 by
default, CVE-2020-10735; ``json.loads`` raises ``ValueError``) and arrays or objects
nested deeper than the interpreter's recursion limit (``RecursionError``).

:func:`parse_jobs` turns the decoded list into the planner's :class:`~seqera_core.
planner.Job` values (``seqera plan``); ``seqera squash`` reads its own job fields from
the same decoded list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..documents import DOCUMENT_LIMIT, past_limits, read_bounded
from ..errors import ResourceError
from ._model import LARGEST, Job, check_cpus, checked_job
from .catalogue import parse_memory

__all__ = ["JOB_KEYS", "entry", "parse_cpus", "parse_jobs", "read_json"]

JOB_KEYS = ("name", "cpus", "memory", "gpus", "instance_type")
_ALLOWED = frozenset(JOB_KEYS)


def read_json(path: str, what: str = "JOBS.json") -> Any:
    """The decoded JSON document at ``path``; any fault is a ResourceError naming it."""
    text = read_bounded(path, what, "a readable JSON file", limit=16 * DOCUMENT_LIMIT)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResourceError(f"{path}: line {exc.lineno}", exc.msg, "valid JSON") from None
    except (RecursionError, ValueError) as exc:
        # int('9' * 5000): the only other ValueError json.loads raises
        raise past_limits(path, exc, "arrays or objects", "a list of job objects") from None


def parse_cpus(where: str, value: Any) -> float:
    """A job's cores: a number greater than 0 and small enough to compute with."""
    try:
        check_cpus(value)
    except ResourceError as exc:
        raise ResourceError(where, value, exc.expected) from None
    cores: float = value
    return cores


def entry(
    where: str, value: Any, keys: tuple[str, ...], required: tuple[str, ...]
) -> Mapping[str, Any]:
    """One job of a jobs file: an object with only ``keys`` and every one of ``required``;
    anything else is a ResourceError naming the entry and the field."""
    if not isinstance(value, Mapping):
        raise ResourceError(where, value, f"an object with {', '.join(required)}")
    unknown = set(value) - set(keys)
    if unknown:
        key = min(unknown, key=str)
        raise ResourceError(f"{where}.{key}", value[key], ", ".join(keys))
    for key in required:
        if key not in value:
            raise ResourceError(f"{where}.{key}", None, f"a value for {key} (it is required)")
    return value


def _job(where: str, value: Any) -> Job:
    value = entry(where, value, JOB_KEYS, ("name", "cpus", "memory"))
    name, hint = value["name"], value.get("instance_type")
    if not isinstance(name, str) or not name:
        raise ResourceError(f"{where}.name", name, "a non-empty string")
    if hint is not None and not isinstance(hint, str):
        raise ResourceError(f"{where}.instance_type", hint, "an instance type name")
    try:
        return Job(
            name,
            value["cpus"],
            parse_memory(f"{where}.memory", value["memory"]),
            value.get("gpus", 0),
            hint,
        )
    except ResourceError as exc:
        field = exc.field if exc.field.startswith(where) else f"{where}.{exc.field}"
        raise ResourceError(field, exc.value, exc.expected) from None


def parse_jobs(document: Any, source: str = "<memory>") -> tuple[Job, ...]:
    """Jobs from a decoded JOBS.json: a list of ``{name, cpus, memory, gpus?,
    instance_type?}``; memory is a size such as ``"4 GB"`` or a whole number of bytes."""
    if not isinstance(document, list):
        raise ResourceError(source, type(document).__name__, "a JSON list of jobs")
    jobs = []
    sizes: dict[str, int] = {}  # each size string parsed once, however many jobs share it
    for n, value in enumerate(document):
        # the usual job, checked without building its error location first; anything
        # else (and every error) goes through _job, which names the field
        if type(value) is dict and value.keys() <= _ALLOWED:
            name, memory = value.get("name"), value.get("memory")
            cpus: Any = value.get("cpus")
            hint, gpus = value.get("instance_type"), value.get("gpus", 0)
            if type(memory) is str:
                memory = sizes.get(memory, memory)
            if (
                type(name) is str
                and name
                and type(memory) is int
                and 0 < memory <= LARGEST
                and (hint is None or type(hint) is str)
                and type(cpus) in (int, float)
                and 0 < cpus <= LARGEST  # False for NaN; infinity is above LARGEST
                and type(gpus) is int
                and 0 <= gpus <= LARGEST
            ):
                # every value checked as Job's validators would: they need not run again
                jobs.append(checked_job(name, cpus, memory, gpus, hint))
                continue
            if type(memory) is str and type(name) is str:
                job = _job(f"{source}: jobs[{n}]", value)
                sizes[memory] = job.memory
                jobs.append(job)
                continue
        jobs.append(_job(f"{source}: jobs[{n}]", value))
    names = [j.name for j in jobs]
    if len(set(names)) == len(names):
        return tuple(jobs)
    seen: set[str] = set()
    for n, j in enumerate(jobs):
        if j.name in seen:
            raise ResourceError(f"{source}: jobs[{n}].name", j.name, "a name no other job has")
        seen.add(j.name)
    return tuple(jobs)
