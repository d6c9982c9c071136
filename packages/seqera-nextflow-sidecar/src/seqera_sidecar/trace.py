"""Nextflow trace files (``trace.raw = true``: bytes, milliseconds) as task records."""

from __future__ import annotations

import csv
import gzip
import math
from pathlib import Path
from typing import IO

from seqera_core.dialects.nextflow import seconds_from_millis
from seqera_core.documents import line_bounded
from seqera_core.errors import UsageError
from seqera_core.history import TaskRecord

__all__ = ["read_trace"]

_NEEDED = ("task_id", "process", "status", "memory", "rss", "realtime")


_LARGEST = 2**63 - 1  # the history's INTEGER columns


def _number(row: dict[str, str], column: str, line: int) -> float | None:
    text = (row.get(column) or "-").strip()  # a short row leaves its last columns None
    if text in ("", "-"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    # inf, nan or past an int64 would fail later, in int() or in the history's INTEGER
    if not (math.isfinite(value) and abs(value) <= _LARGEST):
        raise UsageError(
            f"trace line {line}: column {column!r} is {text[:40]!r}, expected a raw number "
            "(write the trace with trace.raw = true)"
        ) from None
    return value


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", newline="")
    return path.open(newline="")


def read_trace(path: str | Path, run_id: str = "trace") -> list[TaskRecord]:
    """The trace's completed tasks: requested memory/time, ``rss`` as the peak, ``rchar`` input.

    A file that cannot be read (a directory, not gzip, not text, a broken CSV field) is a
    UsageError naming it."""
    try:
        return _read(Path(path), run_id)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error, ValueError) as exc:
        raise UsageError(f"trace {path}: cannot be read as a trace ({exc})") from None


def _read(path: Path, run_id: str) -> list[TaskRecord]:
    with _open(path) as stream:
        reader = csv.DictReader(
            # a line without end (/dev/zero) is an error, not a read that never ends
            line_bounded(stream),
            delimiter="\t" if path.name.endswith(("txt", "tsv")) else ",",
        )
        missing = [c for c in _NEEDED if c not in (reader.fieldnames or ())]
        if missing:
            raise UsageError(f"trace {path}: columns {missing} missing, expected {list(_NEEDED)}")
        records = []
        for line, row in enumerate(reader, start=2):
            if row["status"] not in ("COMPLETED", "CACHED"):
                continue
            memory, time = _number(row, "memory", line), _number(row, "time", line)
            rchar, realtime = _number(row, "rchar", line), _number(row, "realtime", line)
            rss, cpu = _number(row, "rss", line), _number(row, "%cpu", line)
            cpus = _number(row, "cpus", line)
            records.append(
                TaskRecord(
                    run_id=run_id,
                    task_id=row["task_id"],
                    process=row["process"],
                    succeeded=True,
                    attempt=int(_number(row, "attempt", line) or 1),
                    engine="nextflow",
                    cpus=cpus,
                    memory=None if memory is None else int(memory),
                    time=None if time is None else seconds_from_millis(time),
                    peak_memory=None if rss is None else int(rss),
                    cpu_percent=cpu,
                    realtime=None if realtime is None else realtime / 1000,
                    input_bytes=None if rchar is None else int(rchar),
                    container=row.get("container") or None,
                )
            )
    return records
