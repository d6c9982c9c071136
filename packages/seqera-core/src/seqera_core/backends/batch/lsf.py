"""IBM Spectrum LSF: ``bsub``, one ``bjobs -a -json -o ...`` per poll, ``bkill``.

No LSF runs in the tests: parsing is tested on recorded real outputs (``tests/.../data/lsf``,
each with its source). Resources come from ``seqera_core.dialects.lsf`` in the site's
``LSF_UNIT_FOR_LIMITS``. Every job is given its working directory (``-cwd``) and both
output paths (``-o``/``-e``; without them LSF mails the output). The job script is
``bsub``'s command (``/bin/sh <script>``), so no ``#BSUB`` line is ever read from it.

Status: ``bjobs -a -json -o "<fields>" <ids>`` (IBM, ``bjobs -o``/``-json``) shows running
and recently finished jobs (``CLEAN_PERIOD``, lsb.params, one hour by default) with
``STAT``, ``EXIT_CODE`` (empty for DONE), ``EXIT_REASON``, ``MAX_MEM``, ``RUN_TIME`` and
``CPU_USED``: status and usage in one call. An array element is a record of its own with
``JOBINDEX``. ``STAT`` (IBM, ``bjobs``, "Job states"): PEND, PROV, PSUSP, RUN, USUSP,
SSUSP, DONE, EXIT, UNKWN, WAIT, ZOMBI. How an EXIT job ended is its termination reason
(IBM, "Termination reasons"): TERM_MEMLIMIT out of memory, TERM_RUNLIMIT the run limit,
TERM_OWNER/TERM_ADMIN cancelled (``bkill``), TERM_PREEMPT preempted (sent again by the
base), TERM_ZOMBIE/TERM_RQS and the like a node failure.

Exactly once: each submission's key is the first word of its job description (``-Jd``,
shown by ``bjobs -o job_description``), the labels after it; ``find`` reads them back with
one ``bjobs -a -json -o "jobid job_description"`` of every job of the user.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ...dialects.lsf import site_settings, submission
from ...labels import encode_labels
from ..base import NODE_FAILURE, PREEMPTED, JobSpec, JobState
from ._base import BatchBackend, CommandResult, JobFiles, Observed, SchedulerError, job_labels

__all__ = ["FIELDS", "LsfBackend", "lsf_exit", "parse_bjobs", "parse_submit", "submission_keys"]

FIELDS = "jobid jobindex stat exit_code exit_reason max_mem run_time cpu_used exec_host pend_reason"
Usage = tuple[float | None, int | None, float | None]

# IBM LSF 10.1, bjobs, "Job states".
_STATES: dict[str, tuple[JobState, str | None]] = {
    "PEND": (JobState.PENDING, None),  # pending: not yet started
    "PROV": (JobState.PENDING, "provisioning"),  # its host is being provisioned
    "PSUSP": (JobState.PENDING, "suspended while pending"),  # held by owner or admin
    "WAIT": (JobState.PENDING, "waiting"),  # chunk job member waiting to run
    "RUN": (JobState.RUNNING, None),
    "USUSP": (JobState.RUNNING, "suspended by its owner or an administrator"),
    "SSUSP": (JobState.RUNNING, "suspended by LSF"),
    "DONE": (JobState.SUCCEEDED, None),  # exit status 0
    "EXIT": (JobState.FAILED, None),  # non-zero exit, or killed: see EXIT_REASON
    "UNKWN": (JobState.UNKNOWN, "mbatchd lost contact with the job's sbatchd"),
    "ZOMBI": (JobState.FAILED, "zombie: killed while its host was unreachable"),
}
# IBM LSF 10.1, "Termination reasons" (bacct/bhist/bjobs exit_reason).
_CANCELLED = ("TERM_OWNER", "TERM_ADMIN", "TERM_FORCE_OWNER", "TERM_FORCE_ADMIN")
_NODE = ("TERM_ZOMBIE", "TERM_RQS", "TERM_ORPHAN_SYSTEM", "TERM_CWD_NOTEXIST")
_TRANSIENT = (
    "Cannot connect to LSF",
    "LSF is processing your request",
    "batch system daemon not responding",
    "Failed in an LSF library call",
    "Batch library: Communication time out",
)
_HARMLESS_BKILL = ("already finished", "No matching job found", "is not found")
_SUBMITTED = re.compile(r"Job <(\d+)> is submitted")
_SIZE = re.compile(r"([0-9.]+)\s*([KMGTPE]?)(?:bytes|B)?", re.ASCII | re.IGNORECASE)
_SECONDS = re.compile(r"([0-9.]+)\s*second\(s\)", re.ASCII)
_NAME = re.compile(r"[^A-Za-z0-9_.+-]", re.ASCII)


def parse_submit(stdout: str) -> str:
    """The job id from ``bsub``'s "Job <123> is submitted to queue <normal>." (after any
    "Cannot connect to LSF. Please wait ..." lines it printed while retrying)."""
    match = _SUBMITTED.search(stdout)
    if match is None:
        raise SchedulerError(f"bsub printed no job id: {stdout!r}")
    return match[1]


def _size(text: str) -> int | None:
    # "5.2 Gbytes", "522 MBytes", "0 Mbytes": binary multiples (IBM, bjobs -o max_mem)
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    power = " KMGTPE".index((match[2] or " ").upper())
    return int(float(match[1]) * 1024**power)


def _duration(text: str) -> float | None:
    # "16038 second(s)" by default; "00:00:01" with -hms or LSB_HMS_TIME_FORMAT
    text = text.strip()
    if match := _SECONDS.fullmatch(text):
        return float(match[1])
    parts = text.split(":")
    if len(parts) == 3 and all(p.strip().isdigit() for p in parts):
        hours, minutes, seconds = (int(p) for p in parts)
        return float(hours * 3600 + minutes * 60 + seconds)
    return None


def lsf_exit(stat: str, exit_code: str = "", exit_reason: str = "") -> Observed:
    """How a job ended (or where it is) from ``STAT``, ``EXIT_CODE`` and ``EXIT_REASON``."""
    state, why = _STATES.get(stat.strip(), (JobState.UNKNOWN, f"LSF state {stat!r}"))
    if not state.finished:
        return Observed(state, None, why)
    reason = exit_reason.strip() or why
    term = reason.split(":")[0].strip() if reason else ""
    code = int(exit_code) if exit_code.strip().lstrip("-").isdigit() else None
    if state is JobState.SUCCEEDED:
        return Observed(state, 0)
    oom, time_limit = term == "TERM_MEMLIMIT", term == "TERM_RUNLIMIT"
    cause = PREEMPTED if term == "TERM_PREEMPT" else NODE_FAILURE if term in _NODE else None
    if term in _CANCELLED:
        return Observed(JobState.CANCELLED, code, "cancelled" + (f" ({reason})" if reason else ""))
    if oom:
        reason = "out of memory"
    elif time_limit:
        reason = "time limit reached"
    return Observed(state, code, reason, out_of_memory=oom, time_limit=time_limit, cause=cause)


def _records(text: str) -> list[dict[str, Any]]:
    # bjobs may print "Cannot connect to LSF. Please wait ..." before the document
    start = text.find("{")
    if start < 0:
        return []
    document = json.loads(text[start:], strict=False)
    return [r for r in document.get("RECORDS") or [] if isinstance(r, dict)]


def _job_id(record: Mapping[str, Any]) -> str:
    index = str(record.get("JOBINDEX") or "0").strip()
    base = str(record.get("JOBID", "")).strip()
    return f"{base}[{index}]" if index not in ("", "0") else base


def parse_bjobs(text: str) -> dict[str, tuple[Observed, Usage]]:
    """Every job in ``bjobs -json -o`` output (an array element as ``123[4]``), with its
    wall seconds, peak memory bytes and CPU seconds; records of unknown jobs (``ERROR``)
    are left out."""
    found: dict[str, tuple[Observed, Usage]] = {}
    for record in _records(text):
        if record.get("ERROR") or not record.get("JOBID"):
            continue

        def get(key: str, record: Mapping[str, Any] = record) -> str:
            return str(record.get(key) or "")

        seen = lsf_exit(get("STAT"), get("EXIT_CODE"), get("EXIT_REASON"))
        host = get("EXEC_HOST").split(":")[0].split("*")[-1] or None
        if seen.state is JobState.PENDING and get("PEND_REASON").strip():
            seen = Observed(seen.state, None, get("PEND_REASON").strip().rstrip(";"))
        usage = (_duration(get("RUN_TIME")), _size(get("MAX_MEM")), _duration(get("CPU_USED")))
        found[_job_id(record)] = (attrs.evolve(seen, node=host), usage)
    return found


def submission_keys(text: str) -> dict[str, str]:
    """Submission key -> job id, from ``bjobs -json -o "jobid job_description"`` (an
    array's elements all carry its key: the array's own id)."""
    found: dict[str, str] = {}
    for record in _records(text):
        words = str(record.get("JOB_DESCRIPTION") or "").split()
        if words and words[0].startswith("seqera-") and record.get("JOBID"):
            found[words[0]] = str(record["JOBID"])
    return found


class LsfBackend(BatchBackend):
    """LSF through ``bsub``/``bjobs``/``bkill``; every BatchBackend argument too.

    Args:
        unit: ``LSF_UNIT_FOR_LIMITS`` (default: ``lsf.conf``'s, else KB).
        job_memlimit: whether ``-M`` is per job (default: ``lsf.conf``'s LSB_JOB_MEMLIMIT).
        reserve_per_task: whether ``rusage[mem=]`` counts per task (RESOURCE_RESERVE_PER_TASK).
    """

    name = "lsf"
    _TRANSIENT = _TRANSIENT
    _ARRAYS = True
    _ARRAY_INDEX = "LSB_JOBINDEX"
    _ARRAY_FIRST = 1  # bsub -J "name[1-N]": indices start at 1

    def __init__(
        self,
        *,
        unit: str | None = None,
        job_memlimit: bool | str | None = None,
        reserve_per_task: bool | str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        # read once (lsf.conf of the environment the commands run in), then fixed
        site = site_settings(unit, job_memlimit, reserve_per_task, self._env)
        self.settings = site
        self._seen: dict[str, Usage] = {}

    def _common(self, spec: JobSpec, key: str) -> list[str]:
        description = " ".join(filter(None, [key, encode_labels(job_labels(spec))]))
        site = self.settings
        native = submission(spec.request, site.unit, site.job_memlimit, site.reserve_per_task)
        return ["-Jd", description, *native.args]

    def _submit_argv(
        self, spec: JobSpec, files: JobFiles, key: str, exclude: Sequence[str] = ()
    ) -> list[str]:
        argv = ["bsub", "-J", _job_name(spec.name), *self._common(spec, key)]
        argv += ["-cwd", str(spec.workdir or files.directory)]
        argv += ["-o", str(files.stdout), "-e", str(files.stderr)]
        if exclude:  # IBM, bsub -R "select[...]": hname is the host's name
            argv += ["-R", "select[" + " && ".join(f"hname!={h}" for h in exclude) + "]"]
        return [*argv, "/bin/sh", str(files.script)]

    def _array_argv(
        self, spec: JobSpec, array: JobFiles, size: int, apart: bool, key: str
    ) -> list[str]:
        # %I in -o/-e is the element's index (IBM, bsub -o): links to each job's own files
        out = f"{array.directory}/%I.out"
        err = f"{array.directory}/%I.err" if apart else out
        argv = ["bsub", "-J", f"{_job_name(spec.name)}[1-{size}]", *self._common(spec, key)]
        argv += ["-cwd", str(array.directory), "-o", out, "-e", err]
        return [*argv, "/bin/sh", str(array.script)]

    def _element_id(self, base: str, index: int) -> str:
        return f"{base}[{index + self._ARRAY_FIRST}]"

    def _parse_submit(self, stdout: str) -> str:
        return parse_submit(stdout)

    def _keys(self) -> dict[str, str] | None:
        result = self._run(["bjobs", "-a", "-json", "-o", "jobid job_description"])
        if not result.ok and "{" not in result.stdout:
            # "No job found" when the user has none: an answer, not a failure
            return {} if "No " in result.stdout + result.stderr else None
        try:
            return submission_keys(result.stdout)
        except ValueError:
            return None

    def _active(self, ids: Sequence[str]) -> dict[str, Observed]:
        result = self._run_retrying(["bjobs", "-a", "-json", "-o", FIELDS, *ids])
        # unknown ids make bjobs exit non-zero; the others are still printed
        if not result.ok and "{" not in result.stdout and not _only_unknown(result):
            raise SchedulerError("bjobs failed", result)
        try:
            listed = parse_bjobs(result.stdout)
        except ValueError as exc:
            raise SchedulerError(f"bjobs -json not understood ({exc})", result) from exc
        self._seen.update({i: usage for i, (_, usage) in listed.items()})
        return {i: listed[i][0] for i in ids if i in listed}

    def _usage(self, ids: Sequence[str]) -> dict[str, Usage]:
        # read by _active in this same poll: bjobs shows a finished job's usage
        return {i: self._seen[i] for i in ids if i in self._seen}

    def _cancel_argv(self, ids: Sequence[str]) -> list[str]:
        return ["bkill", *ids]

    def _cancel_failed(self, result: CommandResult) -> bool:
        lines = [line for line in f"{result.stdout}\n{result.stderr}".splitlines() if line]
        return not all(
            any(h in line for h in _HARMLESS_BKILL) or "is being terminated" in line
            for line in lines
        )


def _job_name(name: str) -> str:
    # [ ] would read as an array, a leading digit as a job id (IBM, bsub -J)
    clean = _NAME.sub("_", name) or "job"
    return clean if clean[0].isalpha() else f"j{clean}"


def _only_unknown(result: CommandResult) -> bool:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return bool(lines) and all("is not found" in line for line in lines)
