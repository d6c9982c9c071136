"""Turn a Nextflow trace file into the weblog stream Nextflow posted during that run.

Used once to build ``chipseq-weblog.jsonl.gz`` from the nf-core/chipseq trace
(``trace_chipseq.csv``, the project's collection of real traces):
``python build_weblog.py trace_chipseq.csv chipseq-weblog.jsonl.gz``.

Per task, as ``WebLogObserver`` sends them: ``process_submitted`` (at ``submit``),
``process_started`` (at ``start``) and ``process_completed`` (at ``complete``) with the
trace's fields in TraceRecord's JSON types (integers for bytes and milliseconds, a
number for ``%cpu``); ``-`` (not measured) fields are left out. A ``started`` event
opens the run and ``completed`` closes it; events are in time order.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import json
import sys
from typing import Any

INTEGERS = ("task_id", "exit", "cpus", "memory", "time", "attempt", "submit", "start",
            "complete", "duration", "realtime", "rss", "vmem", "peak_rss", "peak_vmem",
            "rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes")  # fmt: skip
NUMBERS = ("%cpu", "%mem")
TEXTS = ("hash", "native_id", "process", "tag", "name", "status", "container", "workdir")
RUN_ID, RUN_NAME = "5a6d3e4f-chipseq-trace", "nf-core-chipseq-trace"


def _trace(row: dict[str, str]) -> dict[str, Any]:
    trace: dict[str, Any] = {}
    for key in INTEGERS:
        if row.get(key, "-") not in ("-", ""):
            trace[key] = int(float(row[key]))
    for key in NUMBERS:
        if row.get(key, "-") not in ("-", ""):
            trace[key] = float(row[key])
    for key in TEXTS:
        if row.get(key, "-") not in ("-", ""):
            trace[key] = row[key]
    return trace


def _utc(millis: int) -> str:
    moment = datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def main(source: str, target: str) -> None:
    with open(source, newline="") as stream:
        rows = list(csv.DictReader(stream))
    events: list[tuple[int, int, dict[str, Any]]] = []
    for row in rows:
        trace = _trace(row)
        for order, (event, at) in enumerate((("process_submitted", "submit"),
                                             ("process_started", "start"),
                                             ("process_completed", "complete"))):  # fmt: skip
            if at not in trace:
                continue
            body = (
                trace
                if event == "process_completed"
                else {k: trace[k] for k in ("task_id", "process", "name", "hash") if k in trace}
            )
            status = {"process_submitted": "SUBMITTED", "process_started": "RUNNING"}
            body = {**body, "status": status.get(event, body.get("status"))}
            events.append((trace[at], order, {"event": event, "trace": body}))
    events.sort(key=lambda e: (e[0], e[1]))
    first, last = events[0][0], events[-1][0]
    with gzip.open(target, "wt") as out:
        opening = (first, {"event": "started", "metadata": {"workflow": {}}})
        closing = (last, {"event": "completed", "metadata": {"workflow": {}}})
        for at, event in [opening, *((a, e) for a, _, e in events), closing]:
            document = {"runName": RUN_NAME, "runId": RUN_ID, "utcTime": _utc(at), **event}
            out.write(json.dumps(document, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
