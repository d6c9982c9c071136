"""Reading an ECS task's CloudWatch Logs: its output, and the usage line its wrapper wrote.

The awslogs driver writes each container's lines to the stream
``<prefix>/<container>/<task id>`` (``_ecs_payloads.log_stream``). GetLogEvents pages
forward until the token stops changing (the API's own end-of-stream signal);
FilterLogEvents takes at most 100 stream names and finds every usage line
(``_ecs_usage.MARKER``) of many stopped tasks at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import botocore.exceptions

from ._ecs_usage import MARKER, parse_usage

__all__ = ["output_lines", "peaks"]

_LOG = logging.getLogger("seqera_core.backends.ecs")
_FILTER_STREAMS_MAX = 100  # FilterLogEvents takes at most 100 stream names


def peaks(client: Any, group: str, streams: Sequence[str]) -> dict[str, int]:
    """The peak memory in bytes each stream's usage line reports, one FilterLogEvents per
    100 streams; a stream without one (yet) is left out, and so is any the call refused."""
    found: dict[str, int] = {}
    for start in range(0, len(streams), _FILTER_STREAMS_MAX):
        params: dict[str, Any] = {
            "logGroupName": group,
            "logStreamNames": list(streams[start : start + _FILTER_STREAMS_MAX]),
            "filterPattern": f'"{MARKER}"',
        }
        while True:
            try:
                page = client.filter_log_events(**params)
            except botocore.exceptions.ClientError as exc:
                # Missing streams (a container that never logged) or a refusal: the
                # usage is unknown, which must not fail the job.
                _LOG.warning("FilterLogEvents failed: %s", exc)
                break
            for event in page.get("events") or []:
                peak = parse_usage(event.get("message", ""))
                if peak is not None:
                    found[event["logStreamName"]] = peak
            if not page.get("nextToken"):
                break
            params["nextToken"] = page["nextToken"]
    return found


def output_lines(client: Any, group: str, stream: str) -> list[str]:
    """The container's lines so far, without the usage wrapper's; none before it starts.

    Raises:
        botocore.exceptions.ClientError: GetLogEvents failed for another reason.
    """
    params: dict[str, Any] = {"logGroupName": group, "logStreamName": stream,
                              "startFromHead": True}  # fmt: skip
    lines: list[str] = []
    while True:
        try:
            page = client.get_log_events(**params)
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                break  # the stream is created when the container starts
            raise
        # the usage wrapper's line is ours, not the job's output
        lines += [
            e["message"] for e in page.get("events") or [] if parse_usage(e["message"]) is None
        ]
        token = page.get("nextForwardToken")
        if not page.get("events") or token == params.get("nextToken"):
            break
        params["nextToken"] = token
    return lines
