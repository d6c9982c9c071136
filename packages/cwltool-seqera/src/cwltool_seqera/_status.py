"""CWL's exit-code rules: which process status a finished job's exit code means."""

from __future__ import annotations

from collections.abc import Collection

from seqera_core.backends import JobState, JobStatus
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import cause, failure_message

__all__ = ["process_status", "status_message"]


def process_status(
    code: int | None,
    *,
    success: Collection[int] = (),
    temporary: Collection[int] = (),
    permanent: Collection[int] = (),
) -> str:
    """``success``, ``temporaryFail`` or ``permanentFail`` as the CWL v1.2 spec orders them.

    The tool's successCodes win, then temporaryFailCodes, then permanentFailCodes; an
    unlisted 0 is success and anything else (or no code at all) a permanent failure.
    """
    if code is None:
        return "permanentFail"
    if code in success:
        return "success"
    if code in temporary:
        return "temporaryFail"
    if code in permanent:
        return "permanentFail"
    return "success" if code == 0 else "permanentFail"


def status_message(status: JobStatus, request: ResourceRequest | None = None) -> str | None:
    """Why the scheduler ended the job, when it was not the command's own exit (in the
    words every engine uses, :func:`seqera_core.outcomes.failure_message`)."""
    if status.state is JobState.UNKNOWN:
        return f"lost by the backend ({status.reason or 'unknown state'})"
    if cause(status) in (None, "other"):
        return None  # the command's own exit code decides, by the tool's lists
    return failure_message(status, request)
