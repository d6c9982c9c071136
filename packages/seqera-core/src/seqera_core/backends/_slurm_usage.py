"""What finished Slurm jobs used, from accounting (slurmdbd): peak memory and wall time.

One ``sacct -n -P -o JobID,State,ExitCode,Elapsed,MaxRSS`` call (no ``-X``) covers many
jobs. A job's peak is the largest MaxRSS of its steps (``.batch``, ``.extern``, ``.0``;
the allocation line carries none); its wall time is the allocation's Elapsed. slurmdbd
receives these records asynchronously, so a job is *settled* only once its allocation line
and every step line show a finished state; a settled step with an empty MaxRSS (a job too
short for the gatherer's first sample) means "no peak known", not zero.
"""

from __future__ import annotations

import re

from attrs import frozen

from ..errors import ResourceError

__all__ = ["USAGE_FIELDS", "JobUsage", "parse_elapsed", "parse_maxrss", "parse_usage"]

USAGE_FIELDS = "JobID,State,ExitCode,Elapsed,MaxRSS"

# sacct prints sizes with a binary suffix (K = KiB); a bare number is bytes.
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)", re.IGNORECASE | re.ASCII)
_ELAPSED = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)", re.ASCII)
# Job state codes that end a job or step (man sacct, JOB STATE CODES).
_ENDED = frozenset(
    [
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    ]
)


@frozen
class JobUsage:
    """One job's accounted use: ``peak_memory`` in bytes, ``elapsed`` in seconds;
    ``settled`` once slurmdbd holds the final record of the job and of all its steps."""

    job_id: str
    elapsed: float | None
    peak_memory: int | None
    settled: bool


def parse_maxrss(text: str) -> int | None:
    """``123456K``, ``1.5G``, ``2048`` (bytes) as bytes; ``None`` for an empty field."""
    text = text.strip()
    if not text:
        return None
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ResourceError("MaxRSS", text, "a size such as 123456K, 1.5G or empty")
    return round(float(match[1]) * _UNITS[match[2].upper()])


def parse_elapsed(text: str) -> float | None:
    """``[D-][HH:]MM:SS[.fff]`` as seconds; ``None`` for an empty field."""
    text = text.strip()
    if not text:
        return None
    match = _ELAPSED.fullmatch(text)
    if match is None:
        raise ResourceError("Elapsed", text, "a duration [D-][HH:]MM:SS")
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def _ended(state: str) -> bool:
    # "CANCELLED by 0" reads as CANCELLED
    return (state.split() or [""])[0].rstrip("+") in _ENDED


def parse_usage(text: str) -> dict[str, JobUsage]:
    """``sacct -n -P -o JobID,State,ExitCode,Elapsed,MaxRSS`` output (steps included), by job."""
    jobs: dict[str, tuple[str, str]] = {}
    steps: dict[str, list[tuple[str, int | None]]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != 5:
            raise ResourceError("sacct line", line, f"5 fields ({USAGE_FIELDS})")
        job_id, _, step = fields[0].partition(".")
        if step:
            steps.setdefault(job_id, []).append((fields[1], parse_maxrss(fields[4])))
        else:  # a requeued job has a line per run: the last one wins
            jobs[job_id] = (fields[1], fields[3])
    usage = {}
    for job_id, (state, elapsed) in jobs.items():
        own = steps.get(job_id, [])
        peaks = [rss for _, rss in own if rss is not None]
        wall = parse_elapsed(elapsed)
        # A job that never started has no steps; one that ran has at least its batch step.
        settled = _ended(state) and all(_ended(s) for s, _ in own) and (bool(own) or not wall)
        usage[job_id] = JobUsage(job_id, wall, max(peaks, default=None), settled)
    return usage
