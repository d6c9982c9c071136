"""What CloudWatch Logs holds for a container job: its output, and the usage wrapper's line.

Each job's container logs to one awslogs stream of a group (an ECS task's
``PREFIX/main/TASK-ID``, :func:`~seqera_core.backends.ecs._payloads.log_stream`; an AWS
Batch job's, named by DescribeJobs). ``peaks`` finds the usage line (:mod:`._usage`) of
many jobs with one FilterLogEvents per 100 streams (the API's limit on
``logStreamNames``); ``output`` pages GetLogEvents from the head of one stream, without
that line, which is ours and not the job's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import botocore.exceptions

from ._calls import chunks, error_code
from ._usage import MARKER, parse_cpu, parse_usage

__all__ = ["output", "peaks"]

_LOG = logging.getLogger("seqera_core.backends.awslogs")
_FILTER_STREAMS_MAX = 100  # FilterLogEvents takes at most 100 stream names


def peaks(client: Any, group: str, streams: Sequence[str]) -> dict[str, tuple[int, float | None]]:
    """The peak memory (and CPU seconds, where the cgroup said) each stream's usage line
    reports; streams without one are left out.

    A refused call (missing streams: a container that never logged) leaves its streams out
    too: the usage is unknown, which must not fail the job.
    """
    found: dict[str, tuple[int, float | None]] = {}
    for chunk in chunks(streams, _FILTER_STREAMS_MAX):
        params: dict[str, Any] = {
            "logGroupName": group,
            "logStreamNames": list(chunk),
            "filterPattern": f'"{MARKER}"',
        }
        while True:
            try:
                page = client.filter_log_events(**params)
            except botocore.exceptions.ClientError as exc:
                _LOG.warning("FilterLogEvents failed: %s", exc)
                break
            for event in page.get("events") or []:
                message = event.get("message", "")
                peak = parse_usage(message)
                if peak is not None:
                    found[event["logStreamName"]] = (peak, parse_cpu(message))
            if not page.get("nextToken"):
                break
            params["nextToken"] = page["nextToken"]
    return found


def output(client: Any, group: str, stream: str) -> str:
    """The stream's lines so far, the usage line left out; empty before the stream exists.

    Raises:
        botocore.exceptions.ClientError: CloudWatch Logs refused the call.
    """
    params: dict[str, Any] = {"logGroupName": group, "logStreamName": stream,
                              "startFromHead": True}  # fmt: skip
    lines: list[str] = []
    while True:
        try:
            page = client.get_log_events(**params)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                break  # the stream is created when the container starts
            raise
        lines += [
            event["message"]
            for event in page.get("events") or []
            if parse_usage(event["message"]) is None
        ]
        token = page.get("nextForwardToken")
        if not page.get("events") or token == params.get("nextToken"):
            break
        params["nextToken"] = token
    return "".join(f"{line}\n" for line in lines)
