"""What CloudWatch Logs holds for ECS tasks: a task's output, and the usage wrapper's line.

Each task's container logs to the awslogs stream ``PREFIX/main/TASK-ID`` of the configured
group (:func:`~seqera_core.backends.ecs._payloads.log_stream`). ``peaks`` finds the usage
line (:mod:`~seqera_core.backends.ecs._usage`) of many tasks with one FilterLogEvents per
100 streams (the API's limit on ``logStreamNames``); ``output`` pages GetLogEvents from the
head of one stream, without that line, which is ours and not the job's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import botocore.exceptions

from ._usage import MARKER, parse_cpu, parse_usage

__all__ = ["chunks", "error_code", "output", "peaks"]

_LOG = logging.getLogger("seqera_core.backends.ecs._backend")
_FILTER_STREAMS_MAX = 100  # FilterLogEvents takes at most 100 stream names


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in slices of at most ``size`` (the AWS calls' list limits)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def error_code(exc: botocore.exceptions.ClientError) -> str:
    """The AWS error code of a refused call (``ResourceNotFoundException``, ...)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


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
