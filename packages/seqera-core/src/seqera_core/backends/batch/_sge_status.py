"""Grid Engine's listings and accounting read into the common view (``sge`` uses them).

``qstat -xml`` (``man qstat``, "state"), ``qstat -j <ids> -xml`` (error reasons and job
contexts), ``qacct -j`` (``man accounting``: ``failed``, ``exit_status``, ``ru_wallclock``,
``maxvmem``, ``category``) and ``qhost -xml``. Every form here was recorded from a real
Son of Grid Engine 8.1.9 (tests/seqera_core/backends/batch/data/sge); UGE prints
``ru_wallclock`` without its ``s``, which is read too.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping

from ...dialects.sge import parse_size, parse_time
from ...squash import Node
from ..base import NODE_FAILURE, JobState
from ._exits import Observed

__all__ = [
    "SUBMISSION_CONTEXT",
    "Usage",
    "error_reasons",
    "parse_qacct",
    "parse_qhost",
    "parse_qstat",
    "sge_state",
    "submission_keys",
]

SUBMISSION_CONTEXT = "SEQERA_SUBMISSION"
# man qstat, "state": d(eletion), E(rror), h(old), r(unning), R(estarted), s/S(uspended),
# t(ransferring), T(hreshold), w(aiting), q(ueued). Checked in this order.
_LETTERS: tuple[tuple[str, JobState, str | None], ...] = (
    ("E", JobState.FAILED, "error state"),
    ("d", JobState.RUNNING, "being deleted"),
    ("s", JobState.RUNNING, "suspended"),
    ("S", JobState.RUNNING, "suspended (queue)"),
    ("T", JobState.RUNNING, "suspended (threshold)"),
    ("r", JobState.RUNNING, None),
    ("t", JobState.RUNNING, "transferring"),
    ("h", JobState.PENDING, "held"),
    ("q", JobState.PENDING, None),
    ("w", JobState.PENDING, None),
)
# man accounting, "failed": the shepherd could not start the job on that node.
_NODE_FAILED = {1, 8, 10, 11}
_LIMIT_KILL = 37
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGTP]?)B?s?", re.ASCII)
_TASKS = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?", re.ASCII)


def sge_state(letters: str, reason: str | None = None) -> Observed:
    """The common view of ``qstat`` state letters (``qw``, ``r``, ``Eqw``, ``dr``, ...)."""
    for letter, state, why in _LETTERS:
        if letter in letters:
            if reason and state is JobState.FAILED:
                why = f"{why}: {reason}"
            return Observed(state, None, why)
    return Observed(JobState.UNKNOWN, None, f"Grid Engine state {letters!r}")


def _task_ids(text: str) -> list[str]:
    # "3", "2-6:1", or a list of both "1,4-6:2" (qstat's job_list <tasks>)
    ids = []
    for part in text.split(","):
        found = _TASKS.fullmatch(part.strip())
        if found:
            first, last, step = int(found[1]), int(found[2] or found[1]), int(found[3] or 1)
            ids += [str(n) for n in range(first, last + 1, step)]
    return ids


def parse_qstat(text: str) -> dict[str, Observed]:
    """Jobs from ``qstat -xml``, by id: ``12`` for a job, ``12.3`` for an array's task."""
    jobs: dict[str, Observed] = {}
    if not text.strip():
        return jobs
    for item in ET.fromstring(text).iter("job_list"):
        number = (item.findtext("JB_job_number") or "").strip()
        letters = (item.findtext("state") or "").strip()
        queue = (item.findtext("queue_name") or "").strip()
        node = queue.partition("@")[2] or None
        seen = sge_state(letters)
        tasks = (item.findtext("tasks") or "").strip()
        for task in _task_ids(tasks) if tasks else [""]:
            native_id = f"{number}.{task}" if task else number
            jobs[native_id] = Observed(seen.state, None, seen.reason, node=node)
    return jobs


def error_reasons(text: str) -> dict[str, str]:
    """Why each job of ``qstat -j <ids> -xml`` is in error (its tasks' messages)."""
    reasons: dict[str, str] = {}
    if not text.strip():
        return reasons
    for job in ET.fromstring(text).iter("djob_info"):
        for element in job:
            number = (element.findtext("JB_job_number") or "").strip()
            messages = [m.text.strip() for m in element.iter("QIM_message") if m.text]
            if number and messages:
                reasons[number] = "; ".join(dict.fromkeys(messages))
    return reasons


def submission_keys(text: str) -> dict[str, str]:
    """Submission key -> job number, from ``qstat -j '*' -xml`` (each job's ``JB_context``)."""
    found: dict[str, str] = {}
    if not text.strip():
        return found
    for job in ET.fromstring(text).iter("element"):
        number = (job.findtext("JB_job_number") or "").strip()
        for variable in job.iter("context_list"):
            if variable.findtext("VA_variable") == SUBMISSION_CONTEXT and number:
                found[(variable.findtext("VA_value") or "").strip()] = number
    return found


def parse_qhost(text: str) -> Node | None:
    """The host with the most processors in ``qhost -xml`` (``num_proc``, ``mem_total``
    as ``23.5G``, binary), or None when it lists none (the ``global`` pseudo-host aside)."""
    best: Node | None = None
    for host in ET.fromstring(text).iter("host"):
        values = {v.get("name"): (v.text or "").strip() for v in host.iter("hostvalue")}
        cpus = values.get("num_proc", "")
        if host.get("name") == "global" or not cpus.isdigit():
            continue
        node = Node(int(cpus), _size(values.get("mem_total", "")))
        if best is None or node.cpus > best.cpus:
            best = node
    return best


def _size(text: str) -> int | None:
    found = _NUMBER.fullmatch(text.strip())
    if found is None:
        return None
    return round(float(found[1]) * (1 << (10 * " KMGTP".index(found[2] or " "))))


def _seconds(text: str) -> float | None:
    # SoGE: "3s"; UGE: "3.012"
    found = re.fullmatch(r"(\d+(?:\.\d+)?)s?", text.strip())
    return float(found[1]) if found else None


def _category(text: str) -> tuple[dict[str, str], int]:
    # "-l h_rt=60,h_vmem=100M -pe smp 2 -q all.q": the -l values and the slots asked for
    words = text.split()
    limits: dict[str, str] = {}
    count = 1
    for n, word in enumerate(words[:-1]):
        if word == "-l":
            pairs = (item.partition("=") for item in words[n + 1].split(","))
            limits.update({k: v for k, _, v in pairs})
        elif word == "-pe" and n + 2 < len(words) and words[n + 2].isdigit():
            count = int(words[n + 2])
    return limits, count


Usage = tuple[float | None, int | None, float | None]
"""Wall seconds, peak memory bytes and CPU seconds (``ru_wallclock``, ``maxvmem``, ``cpu``)."""


def _ended(record: Mapping[str, str], memory: str) -> tuple[Observed, Usage]:
    failed_text = record.get("failed", "0")
    failed = int(failed_text.split()[0]) if failed_text.split()[0].isdigit() else 0
    status_text = record.get("exit_status", "").split()
    code = int(status_text[0]) if status_text and status_text[0].isdigit() else None
    wall = _seconds(record.get("ru_wallclock", ""))
    peak = _size(record.get("maxvmem", "")) or None  # 0.000B: nothing measured
    node = record.get("hostname") or None
    why = failed_text.partition(":")[2].strip() or None
    oom = timeout = False
    if failed == _LIMIT_KILL:
        limits, count = _category(record.get("category", ""))
        h_rt = limits.get("h_rt")
        timeout = bool(h_rt and wall is not None and wall >= parse_time(h_rt))
        cap = next((limits[k] for k in (memory, "h_vmem", "h_rss") if k in limits), None)
        oom = not timeout and bool(cap and peak and peak >= parse_size(cap) * count * 0.95)
        why = "time limit reached" if timeout else "out of memory" if oom else why
    if failed == 100 and code == 137:
        state = JobState.FAILED  # killed after it started: qdel, or a signal from outside
        why = why or "killed"
    elif failed and failed != _LIMIT_KILL and code == 0:
        state, code = JobState.FAILED, None  # never ran: Grid Engine's own failure
    else:
        state = JobState.SUCCEEDED if code == 0 and not failed else JobState.FAILED
    if state is JobState.FAILED and code is not None and code > 128 and why is None:
        why = f"killed by signal {code - 128}"
    cause = NODE_FAILURE if failed in _NODE_FAILED else None
    seen = Observed(state, code, why, out_of_memory=oom, time_limit=timeout, cause=cause,
                    node=node)  # fmt: skip
    return seen, (wall, peak, _seconds(record.get("cpu", "")))


def parse_qacct(text: str, memory: str = "h_vmem") -> dict[str, tuple[Observed, Usage]]:
    """Each record of ``qacct -j``: how it ended and what it used (:data:`Usage`), by id
    (``12``, or ``12.3`` for an array's task); ``memory`` is the site's memory resource.
    A job run twice (rescheduled) has a record per run: the last one wins."""
    found: dict[str, tuple[Observed, Usage]] = {}
    for block in text.split("=" * 62):
        record: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            if key:
                record[key] = value.strip()
        number = record.get("jobnumber", "").strip()
        if not number:
            continue
        task = record.get("taskid", "undefined").strip()
        native_id = number if task in ("undefined", "0", "") else f"{number}.{task}"
        found[native_id] = _ended(record, memory)
    return found
