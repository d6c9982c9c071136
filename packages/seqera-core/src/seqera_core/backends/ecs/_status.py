"""What one DescribeTasks entry says about a task, as a pure function of the entry."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import frozen

from ..base import JobState
from ._payloads import CONTAINER

__all__ = ["ECS_STATES", "SPOT_STOP_CODES", "Seen", "seen"]

# Task lifecycle states, Amazon ECS Developer Guide, "Amazon ECS task lifecycle": a task
# is provisioned (network interface, managed instance), then activated, runs, and after
# its essential container exits is deactivated, stopped and deprovisioned. The container's
# exit code is only final at STOPPED, so the states before it count as running.
ECS_STATES: dict[str, JobState] = {
    "PROVISIONING": JobState.PENDING,  # resources (ENI, instance) being set up
    "PENDING": JobState.PENDING,  # waiting for the agent: image pull, placement
    "ACTIVATING": JobState.PENDING,  # service discovery, load balancers being wired
    "RUNNING": JobState.RUNNING,
    "DEACTIVATING": JobState.RUNNING,  # being unwired before it stops
    "STOPPING": JobState.RUNNING,  # containers receiving SIGTERM, then SIGKILL
    "DEPROVISIONING": JobState.RUNNING,  # stopped; the ENI is being detached
    "STOPPED": JobState.FAILED,  # settled by _stopped() from the exit code and stopCode
    "DELETED": JobState.FAILED,  # after STOPPED: the same
}
# TaskStopCode values (ECS API reference, Task.stopCode) that mean the capacity went away
# under the task: a spot reclaim or its two-minute notice. SPOT_INTERRUPTION is the
# spelling some tools print; the API sends SpotInterruption.
SPOT_STOP_CODES = frozenset({"SpotInterruption", "TerminationNotice", "SPOT_INTERRUPTION"})
# stoppedReason texts of a reclaimed host: "Your Spot Task was interrupted.",
# "Host EC2 (instance i-0abc) terminated."
_SPOT_REASON = re.compile(r"\bspot\b|host ec2|ec2 instance .* terminated", re.IGNORECASE)
_OOM_REASON = re.compile(r"OutOfMemory|out of memory", re.IGNORECASE)
_NOT_STARTED = frozenset({"TaskFailedToStart"})


@frozen
class Seen:
    """A task as DescribeTasks reports it, in common terms."""

    state: JobState
    exit_code: int | None = None
    reason: str | None = None
    out_of_memory: bool = False
    spot: bool = False
    started_at: float | None = None  # seconds since the epoch, when ECS says it started
    stopped_at: float | None = None  # and when it says it stopped


def _container(task: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = task.get("containers") or [{}]
    named = [c for c in containers if c.get("name") == CONTAINER]
    chosen: Mapping[str, Any] = named[0] if named else containers[0]
    return chosen


def _timestamp(value: Any) -> float | None:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    return None


def seen(task: Mapping[str, Any]) -> Seen:
    """The common view of one ``tasks[]`` entry of a DescribeTasks response."""
    status = str(task.get("lastStatus", ""))
    started = _timestamp(task.get("startedAt"))
    state = ECS_STATES.get(status, JobState.UNKNOWN)
    if status not in ("STOPPED", "DELETED"):
        reason = None if status in ECS_STATES else f"ECS status {status or '(none)'}"
        return Seen(state, reason=reason, started_at=started)
    return _stopped(task, started)


def _stopped(task: Mapping[str, Any], started: float | None) -> Seen:
    return attrs.evolve(_ended(task, started), stopped_at=_timestamp(task.get("stoppedAt")))


def _ended(task: Mapping[str, Any], started: float | None) -> Seen:
    container = _container(task)
    code = container.get("exitCode")
    stop_code = task.get("stopCode")
    reasons = [r for r in (task.get("stoppedReason"), container.get("reason")) if r]
    reason = "; ".join(reasons) or None
    spot = stop_code in SPOT_STOP_CODES or any(_SPOT_REASON.search(r) for r in reasons)
    oom = any(_OOM_REASON.search(r) for r in reasons)
    if spot:
        return Seen(JobState.FAILED, code, reason or f"stopCode {stop_code}", oom, True, started)
    if stop_code == "UserInitiated":
        return Seen(JobState.CANCELLED, code, reason or "stopped by StopTask", oom, False, started)
    if code == 0 and stop_code not in _NOT_STARTED and not oom:
        return Seen(JobState.SUCCEEDED, 0, None, False, False, started)
    if code is None:
        # An essential container that exits without a code did not succeed.
        why = reason or f"the container exited without an exit code (stopCode {stop_code})"
        return Seen(JobState.FAILED, None, why, oom, False, started)
    return Seen(JobState.FAILED, int(code), reason, oom, False, started)
