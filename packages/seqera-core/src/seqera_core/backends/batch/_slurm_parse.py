"""Slurm's listings read into the common view: ``squeue`` and ``sacct`` states, exit
codes and nodes, and ``sacct``'s Elapsed, MaxRSS and TotalCPU (``slurm`` says when each
is asked).
"""

from __future__ import annotations

import re

import attrs

from ...dialects.slurm import parse_time
from ...errors import ResourceError
from ..base import NODE_FAILURE, PREEMPTED, JobState
from ._exits import Observed, from_wait_status, shell_exit

__all__ = ["parse_sacct", "parse_sacct_cpu", "parse_sacct_usage", "parse_squeue", "slurm_state"]

# Job state codes, ``man squeue`` (JOB STATE CODES) and ``man sacct`` (JOB STATE CODES),
# Slurm 22.05. Value: (common state, reason when it says more than the state).
_STATES: dict[str, tuple[JobState, str | None]] = {
    "PENDING": (JobState.PENDING, None),  # awaiting resource allocation
    "CONFIGURING": (JobState.PENDING, "configuring"),  # allocated, nodes booting
    "REQUEUED": (JobState.PENDING, "requeued"),  # being requeued
    "REQUEUE_FED": (JobState.PENDING, "requeued"),  # requeued by a federation
    "REQUEUE_HOLD": (JobState.PENDING, "requeued, held"),  # requeued and held
    "RESV_DEL_HOLD": (JobState.PENDING, "held: reservation deleted"),
    "RUNNING": (JobState.RUNNING, None),  # has an allocation
    "COMPLETING": (JobState.RUNNING, "completing"),  # some processes may still be active
    "SIGNALING": (JobState.RUNNING, "signaling"),  # being signaled
    "STAGE_OUT": (JobState.RUNNING, "staging out"),  # burst buffer stage-out
    "RESIZING": (JobState.RUNNING, "resizing"),  # about to change size
    "SUSPENDED": (JobState.RUNNING, "suspended"),  # allocation kept, execution suspended
    "STOPPED": (JobState.RUNNING, "stopped"),  # SIGSTOP; allocation kept
    "COMPLETED": (JobState.SUCCEEDED, None),  # all processes exited 0
    "FAILED": (JobState.FAILED, None),  # non-zero exit code or other failure
    "TIMEOUT": (JobState.FAILED, "time limit reached"),
    "OUT_OF_MEMORY": (JobState.FAILED, "out of memory"),  # OOM (cgroup) event
    "NODE_FAIL": (JobState.FAILED, "node failure"),
    "BOOT_FAIL": (JobState.FAILED, "node boot failure"),
    "DEADLINE": (JobState.FAILED, "deadline reached"),  # ended on its --deadline
    "PREEMPTED": (JobState.FAILED, "preempted"),  # ended by preemption
    "SPECIAL_EXIT": (JobState.FAILED, "special exit"),  # requeued in a special state
    "CANCELLED": (JobState.CANCELLED, "cancelled"),  # by the user or an administrator
    "REVOKED": (JobState.CANCELLED, "revoked"),  # a federation sibling started instead
}
# Causes the state says more precisely than the flags (the rest follow the flags).
_CAUSES = {"NODE_FAIL": NODE_FAILURE, "BOOT_FAIL": NODE_FAILURE, "PREEMPTED": PREEMPTED}
# TotalCPU (man sacct: "the sum of the SystemCPU and UserCPU time used by the job or job
# step") is written [DD-[HH:]]MM:SS[.sss]; the allocation line may carry it or only steps.
_CPU_TIME = re.compile(r"(?:(?:(\d+)-)?(\d+):)?(\d+):(\d+(?:\.\d+)?)")
# sacct's sizes carry a binary suffix (K = KiB); a bare number is bytes.
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
# Not parse_memory: a bare MaxRSS is bytes (a bare --mem is MiB), and it may be fractional.
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)")


def slurm_state(
    name: str, exit_code: int | None = None, reason: str | None = None, node: str | None = None
) -> Observed:
    """The common view of a Slurm state name (``CANCELLED by 0`` reads as ``CANCELLED``)."""
    word = name.split()[0].rstrip("+") if name.strip() else "UNKNOWN"
    state, why = _STATES.get(word, (JobState.UNKNOWN, f"Slurm state {name}"))
    if reason and reason not in ("None", "(null)"):
        why = f"{why}: {reason}" if why else reason
    return Observed(
        state,
        exit_code if state.finished else None,
        why,
        out_of_memory=word == "OUT_OF_MEMORY",
        time_limit=word == "TIMEOUT",
        cause=_CAUSES.get(word),
        node=node if node and node not in ("None", "(null)", "N/A") else None,
    )


def _with_signal_reason(seen: Observed, signal_reason: str | None) -> Observed:
    if signal_reason is None or seen.state is not JobState.FAILED or seen.reason:
        return seen
    return attrs.evolve(seen, reason=signal_reason)


def parse_squeue(text: str) -> dict[str, Observed]:
    """Jobs from ``squeue -h -r -O JobID:|,ArrayJobID:|,ArrayTaskID:|,State:|,Reason:|,
    exit_code:|,NodeList:|`` (array elements as ``123_4``), the same without NodeList, or
    without the two array fields and NodeList."""
    jobs = {}
    for line in text.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if fields and not fields[-1]:
            fields.pop()  # the trailing "|"
        node = None
        if len(fields) >= 6:
            job_id, array_id, task_id = fields[:3]
            if task_id and task_id != "N/A" and array_id:
                job_id = f"{array_id}_{task_id}"
            node = fields[6] if len(fields) >= 7 else None
            fields = [job_id, *fields[3:6]]
        if len(fields) < 4 or not fields[0]:
            continue
        job_id, state, reason, raw = fields[:4]
        code, signal_reason = from_wait_status(int(raw)) if raw.isdigit() else (None, None)
        seen = slurm_state(state, code, reason, node)
        jobs[job_id] = _with_signal_reason(seen, signal_reason)
    return jobs


def parse_sacct(text: str) -> dict[str, Observed]:
    """Jobs from ``sacct -n -P -o JobID,State,ExitCode[,NodeList]`` (``ExitCode`` is
    ``code:signal``)."""
    jobs = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3 or not fields[0] or "." in fields[0]:
            continue  # steps (123.batch) are not the job
        code_text, _, sig_text = fields[2].partition(":")
        code = int(code_text) if code_text.isdigit() else None
        sig = int(sig_text) if sig_text.isdigit() else None
        shell_code, signal_reason = shell_exit(code, sig)
        # A requeued job has a line per run in the jobcomp file: the last one wins.
        node = fields[3] if len(fields) > 3 else None
        seen = slurm_state(fields[1], shell_code, node=node)
        jobs[fields[0]] = _with_signal_reason(seen, signal_reason)
    return jobs


def _maxrss(text: str) -> int | None:
    found = _SIZE.fullmatch(text.strip())
    return round(float(found[1]) * _SIZE_UNITS[found[2]]) if found else None


def _elapsed(text: str) -> float | None:
    # Elapsed is written like --time ([D-]HH:MM:SS); an unreadable one is unknown, not fatal.
    try:
        seconds = parse_time(text, "Elapsed")
    except ResourceError:
        return None
    return None if seconds is None else float(seconds)


def parse_sacct_usage(text: str) -> dict[str, tuple[float | None, int | None]]:
    """Per job, (Elapsed seconds, largest step MaxRSS in bytes) from ``sacct -n -P -o
    JobID,Elapsed,MaxRSS``; a job with no step measured has ``None`` peak, not 0."""
    wall: dict[str, float | None] = {}
    peaks: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3 or not fields[0]:
            continue
        job_id, _, step = fields[0].partition(".")
        if step:  # 123.batch, 123.extern, 123.0: the allocation line itself has no MaxRSS
            peak = _maxrss(fields[2])
            if peak:
                peaks[job_id] = max(peaks.get(job_id, 0), peak)
        else:
            wall[job_id] = _elapsed(fields[1])
    return {job_id: (seconds, peaks.get(job_id)) for job_id, seconds in wall.items()}


def _cpu_time(text: str) -> float | None:
    found = _CPU_TIME.fullmatch(text.strip())
    if found is None:
        return None
    days, hours, minutes, seconds = (float(part or 0) for part in found.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def parse_sacct_cpu(text: str) -> dict[str, float]:
    """Per job, the CPU seconds (TotalCPU) from ``sacct -n -P -o JobID,Elapsed,MaxRSS,
    TotalCPU``: the allocation line's, else the sum of its steps' (``.batch``, ``.extern``,
    ``.0``: each step is its own ``slurmstepd``, so none counts another's). A job whose
    lines have no TotalCPU is left out: unknown, not 0."""
    whole: dict[str, float] = {}
    steps: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 4 or not fields[0]:
            continue
        job_id, _, step = fields[0].partition(".")
        seconds = _cpu_time(fields[3])
        if seconds is None:
            continue
        if step:
            steps[job_id] = steps.get(job_id, 0.0) + seconds
        else:
            whole[job_id] = seconds
    return {job: max(whole.get(job, 0.0), steps.get(job, 0.0)) for job in {*whole, *steps}}
