"""Nextflow's weblog events (``-with-weblog URL``) as task-history records.

Nextflow's ``WebLogObserver`` posts one JSON document per event: ``runName``, ``runId``,
``event`` (``started``, ``process_submitted``, ``process_started``, ``process_completed``,
``error``, ``completed``), ``utcTime``, and for process events a ``trace``: the task's
``TraceRecord`` with ``memory``/``peak_rss``/``rchar`` in bytes, ``time``/``realtime``/
``duration`` in milliseconds, ``%cpu`` in percent of one core, ``exit``, ``status``,
``attempt``, ``process``, ``task_id``. A field Nextflow could not measure is absent (or
``"-"`` in a trace file). Only ``process_completed`` carries a finished task.

How a failed attempt ended is read as nf-core's retry rules read it: exit 137 (killed,
as by the kernel's or scheduler's OOM killer) or a peak at its memory request is out of
memory; exit 140 (Slurm's and SGE's time-limit signal) or a run time at its time
request is a time-limit kill.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from seqera_core.bounds import (
    LARGEST,
    MAX_BYTES,
    MAX_CPU_PERCENT,
    MAX_CPUS,
    MAX_EPOCH_SECONDS,
    MAX_SECONDS,
    shown,
)
from seqera_core.dialects.nextflow import seconds_from_millis
from seqera_core.errors import WireError
from seqera_core.history import TaskRecord

__all__ = ["EVENTS", "WeblogEvent", "parse_event"]

EVENTS = frozenset(
    {"started", "process_submitted", "process_started", "process_completed", "error",
     "completed"}
)  # fmt: skip
_OOM_EXITS = frozenset({137})
_TIME_EXITS = frozenset({140})


@frozen
class WeblogEvent:
    """One weblog POST: the event, its run, and for ``process_completed`` the attempt."""

    event: str
    run_id: str
    run_name: str
    process: str | None = None
    record: TaskRecord | None = None


# The contract's maximum of each number of a trace (shared/openapi/seqera-sidecar.yaml,
# WeblogEvent.trace), in the trace's own units: times in milliseconds.
MAXIMA: dict[str, float] = {
    "cpus": MAX_CPUS,
    "%cpu": MAX_CPU_PERCENT,
    "memory": MAX_BYTES,
    "peak_rss": MAX_BYTES,
    "time": MAX_SECONDS * 1000,
    "realtime": MAX_SECONDS * 1000,
    "rchar": LARGEST,
    "attempt": LARGEST,
    "complete": MAX_EPOCH_SECONDS * 1000,
}


def _number(trace: Mapping[str, Any], key: str, problems: list[str]) -> float | None:
    value = trace.get(key)
    if value is None or value == "-" or value == "":
        return None
    if isinstance(value, bool):
        problems.append(f"$.trace.{key}: {value!r} is not a number")
        return None
    try:
        number = float(str(value).rstrip("%")) if isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):  # an object, a list, an int past floats
        problems.append(f"$.trace.{key}: {value!r} is not a number")
        return None
    if not math.isfinite(number) or number < 0:
        problems.append(f"$.trace.{key}: {value!r} is not a number >= 0")
        return None
    if number > MAXIMA[key]:
        problems.append(f"$.trace.{key}: {shown(value)} is larger than {MAXIMA[key]}")
        return None
    return number


# The history stores whole numbers as SQL BIGINT / SQLite INTEGER (signed 64 bits).
_LARGEST = LARGEST


def _integer(trace: Mapping[str, Any], key: str, problems: list[str]) -> int | None:
    value = trace.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        number: int | None = value if value >= 0 else None  # exact: no trip through a float
        if number is None:
            problems.append(f"$.trace.{key}: {shown(value)} is not a number >= 0")
    else:
        parsed = _number(trace, key, problems)
        number = None if parsed is None else math.ceil(parsed)
    if number is not None and number > MAXIMA[key]:
        problems.append(f"$.trace.{key}: {shown(value)} is larger than {MAXIMA[key]}")
        return None
    return number


def _text(document: Mapping[str, Any], key: str, problems: list[str], where: str = "$") -> str:
    value = document.get(key)
    if not isinstance(value, str) or not value:
        problems.append(f"{where}.{key}: {value!r} is not a non-empty string")
        return ""
    return value


def _record(run_id: str, trace: Mapping[str, Any], problems: list[str]) -> TaskRecord | None:
    process = _text(trace, "process", problems, "$.trace")
    task_id = trace.get("task_id")
    if task_id is None or isinstance(task_id, bool | dict | list):
        problems.append(f"$.trace.task_id: {task_id!r} is not a task id")
    status = trace.get("status")
    exit_code = trace.get("exit")
    if exit_code in ("-", None) or isinstance(exit_code, bool):
        exit_code = None
    else:
        try:
            exit_code = int(exit_code)
        except (TypeError, ValueError, OverflowError):  # 1e999 is a float infinity
            problems.append(f"$.trace.exit: {exit_code!r} is not an exit code")
            exit_code = None
        if exit_code is not None and not -_LARGEST - 1 <= exit_code <= _LARGEST:
            problems.append(f"$.trace.exit: {shown(exit_code)} is not an exit code")
            exit_code = None
    values = {k: _number(trace, k, problems) for k in ("cpus", "%cpu", "realtime", "attempt")}
    memory = _integer(trace, "memory", problems)
    time_ms = _integer(trace, "time", problems)
    peak = _integer(trace, "peak_rss", problems)
    rchar = _integer(trace, "rchar", problems)
    complete = _number(trace, "complete", problems)
    if problems:
        return None
    realtime = None if values["realtime"] is None else values["realtime"] / 1000
    time = None if time_ms is None else seconds_from_millis(time_ms)
    succeeded = status == "COMPLETED" and exit_code in (0, None)
    out_of_memory = not succeeded and (
        exit_code in _OOM_EXITS or (peak is not None and memory is not None and peak >= memory)
    )
    time_limit = (
        not succeeded
        and not out_of_memory
        and (
            exit_code in _TIME_EXITS
            or (realtime is not None and time is not None and realtime >= time)
        )
    )
    return TaskRecord(
        run_id=run_id,
        task_id=str(task_id),
        process=process,
        succeeded=succeeded,
        attempt=int(values["attempt"] or 1),
        engine="nextflow",
        exit_code=exit_code,
        out_of_memory=out_of_memory,
        time_limit=time_limit,
        cpus=values["cpus"],
        memory=memory,
        time=time,
        peak_memory=peak,
        cpu_percent=values["%cpu"],
        realtime=realtime,
        input_bytes=rchar,
        container=trace.get("container") if isinstance(trace.get("container"), str) else None,
        finished=None if complete is None else complete / 1000,
    )


def parse_event(document: Any) -> WeblogEvent:
    """The event in one weblog document; WireError naming every faulty field."""
    if not isinstance(document, Mapping):
        raise WireError([f"$: expected a weblog event object, got {type(document).__name__}"])
    problems: list[str] = []
    event = document.get("event")
    if not isinstance(event, str) or event not in EVENTS:  # a list is not even hashable
        problems.append(f"$.event: {event!r} is not one of {', '.join(sorted(EVENTS))}")
    run_id = _text(document, "runId", problems)
    run_name = _text(document, "runName", problems)
    trace = document.get("trace")
    process, record = None, None
    if isinstance(event, str) and event.startswith("process_"):
        if not isinstance(trace, Mapping):
            problems.append(f"$.trace: a {event} event needs the task's trace object")
        else:
            process = trace.get("process") if isinstance(trace.get("process"), str) else None
            if event == "process_completed":
                record = _record(run_id, trace, problems)
    if problems:
        raise WireError(problems)
    return WeblogEvent(str(event), run_id, run_name, process, record)
