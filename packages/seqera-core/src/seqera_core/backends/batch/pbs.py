"""PBS Pro (``qsub -l select``, ``qstat -x -f -F json``) and Torque (``-l nodes``, ``qstat -f -1``).

One class, two dialects chosen by the platform definition. Both submit a script with
``qsub`` (options as separate argv elements, resources from ``seqera_core.dialects.pbs``),
poll every job with one ``qstat`` and cancel with one ``qdel``.

PBS Pro lists finished jobs with ``-x`` while the server keeps job history
(``job_history_enable``); Torque keeps completed jobs ``keep_completed`` seconds, and
Debian's ``slurm-wlm-torque`` wrappers over Slurm report no exit status at all. Where the
scheduler cannot say how a job ended, the exit code its script recorded is used (``_batch``).

Every submission carries its key (``_jobdir.submission_key``): on PBS Pro as the job
variable ``SEQERA_SUBMISSION`` (``qsub -v``, kept in ``Variable_List``), on Torque at the
end of the job name (Debian's wrappers turn ``-v`` into a shell command line, so the name
is the one field they pass on as it is). After an unknown outcome one ``qstat -f`` of
every job finds it. A job whose mother superior failed (``JOB_EXEC_RERUN_MS_FAIL``) or
aborted at MoM start-up (``JOB_EXEC_INITABT``) is a node failure: the base class sends
it again once, on any node (``qsub`` has no way to exclude a host).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ...dialects.pbs import pro_submission, torque_submission
from ...errors import UsageError
from ...labels import pbs_variables
from ...squash import SquashMode
from ..base import NODE_FAILURE, JobSpec, JobState
from ._base import (
    BatchBackend,
    CommandResult,
    JobFiles,
    Observed,
    SchedulerError,
    job_labels,
    shell_exit,
)

__all__ = [
    "SUBMISSION_VARIABLE",
    "PbsBackend",
    "parse_pro_json",
    "parse_torque",
    "pbs_exit",
    "pbs_job_name",
    "submission_keys",
]

SUBMISSION_VARIABLE = "SEQERA_SUBMISSION"

# PBS Professional Reference Guide 2021.1, "Job States" (also qstat(1B)).
_PRO_STATES: dict[str, tuple[JobState, str | None]] = {
    "Q": (JobState.PENDING, None),  # queued, eligible to run or be routed
    "H": (JobState.PENDING, "held"),  # held by user, operator or server
    "W": (JobState.PENDING, "waiting"),  # waiting for its start time, or stage-in failed
    "T": (JobState.PENDING, "in transit"),  # being moved to a new location
    "R": (JobState.RUNNING, None),  # running
    "B": (JobState.RUNNING, None),  # array job: at least one subjob has started
    "E": (JobState.RUNNING, "exiting"),  # exiting after having run
    "S": (JobState.RUNNING, "suspended"),  # suspended by the server
    "U": (JobState.RUNNING, "suspended"),  # suspended: workstation became busy
    "F": (JobState.SUCCEEDED, None),  # finished (completed, failed or deleted): see below
    "X": (JobState.SUCCEEDED, None),  # subjob finished
    "M": (JobState.UNKNOWN, "moved to another server"),
}
# Torque Administrator Guide, qstat: "job_state".
_TORQUE_STATES: dict[str, tuple[JobState, str | None]] = {
    "Q": (JobState.PENDING, None),
    "H": (JobState.PENDING, "held"),
    "W": (JobState.PENDING, "waiting"),
    "T": (JobState.PENDING, "in transit"),
    "R": (JobState.RUNNING, None),
    "E": (JobState.RUNNING, "exiting"),
    "S": (JobState.RUNNING, "suspended"),
    "C": (JobState.SUCCEEDED, None),  # completed: see the exit status
}
# Negative exit statuses: the job could not run or was killed by PBS itself
# (OpenPBS src/include/job.h, JOB_EXEC_*; PBS Pro Administrator's Guide, "Job Exit Codes").
_EXEC_CODES = {
    -1: "JOB_EXEC_FAIL1: job exec failed, before files, no retry",
    -2: "JOB_EXEC_FAIL2: job exec failed, after files, no retry",
    -3: "JOB_EXEC_RETRY: job execution failed, do retry",
    -4: "JOB_EXEC_INITABT: job aborted on MoM initialization",
    -10: "JOB_EXEC_FAILUID: invalid uid/gid for job",
    -11: "JOB_EXEC_RERUN: job rerun",
    -13: "JOB_EXEC_FAIL_PASSWORD: bad password",
    -17: "JOB_EXEC_FAILHOOK_DELETE: rejected by a hook",
    -19: "JOB_EXEC_HOOK_DELETE: deleted by a hook",
    -20: "JOB_EXEC_RERUN_MS_FAIL: mother superior connection failed",
    -26: "JOB_EXEC_KILL_VMEM: exceeded vmem",
    -27: "JOB_EXEC_KILL_MEM: exceeded mem",
    -28: "JOB_EXEC_KILL_CPUT: exceeded cput",
    -29: "JOB_EXEC_KILL_WALLTIME: exceeded walltime",
    -31: "JOB_EXEC_KILL_HPMEM: exceeded high-priority memory",
    -32: "JOB_EXEC_RERUN_ZOMBIE_JOB: job lost by its MoM (re-imaged node)",
}
# The node, not the job, failed: mother superior lost, MoM restarted under the job, or
# the MoM lost the job (re-imaged node). QutEcoacoustics/baw-server met -20 and -32 in
# production (its spec/lib/gems/pbs/lib/pbs/exit_status_spec.rb, issues #879, #880).
_NODE_FAILURES = (-20, -4, -32)
_SUBSTATE_TERMINATED = 91  # finished because of qdel (job.h JOB_SUBSTATE_TERMINATED)
_TRANSIENT = (
    "cannot connect to server",
    "Connection refused",
    "Connection timed out",
    "pbs_iff: cannot",
    "End of File",
    "Unable to contact slurm controller",  # the Debian Torque wrappers over Slurm
    "Socket timed out",
)
_HARMLESS_QDEL = ("Unknown Job Id", "Job has finished", "Request invalid for state of job")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.+-]", re.ASCII)
_MAX_NAME = 230  # PBS_MAXJOBNAME, OpenPBS src/include/pbs_ifl.h


def pbs_job_name(name: str) -> str:
    """A valid ``qsub -N`` name: at most 230 of ``[A-Za-z0-9_.+-]``, the first a letter.

    OpenPBS ``check_job_name`` (src/lib/Libcmds/ck_job_name.c); every other character
    becomes ``_`` and a name not starting with a letter gets a ``j`` in front.
    """
    clean = _NAME_CHARS.sub("_", name) or "job"
    if not clean[0].isalpha():
        clean = "j" + clean
    return clean[:_MAX_NAME]


def _int(value: object) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def pbs_exit(exit_status: object, substate: object = None, comment: str | None = None) -> Observed:
    """How a finished PBS job ended, from ``Exit_status``, ``substate`` and ``comment``.

    Exit_status >= 256 means killed by signal ``Exit_status - 256``; a negative one is a
    ``JOB_EXEC_*`` code. Substate 91 means deleted with ``qdel``.
    """
    status = _int(exit_status) if exit_status is not None else None
    text = (comment or "").lower()
    time_limit = status == -29 or "exceeded resource walltime" in text
    oom = (
        status in (-26, -27, -31)
        or "exceeded resource mem" in text
        or "exceeded resource vmem" in text
    )
    code: int | None
    reason: str | None
    if status is None:
        code, reason = None, comment
    elif status >= 256:
        code, reason = shell_exit(None, status - 256)
    elif status < 0:
        code, reason = None, _EXEC_CODES.get(status, f"PBS exit status {status}")
    else:
        code, reason = status, None
    if _int(substate) == _SUBSTATE_TERMINATED:
        state = JobState.CANCELLED
        reason = "cancelled" + (f" ({reason})" if reason else "")
    elif status == 0:
        state = JobState.SUCCEEDED
    else:
        state = JobState.FAILED
    if time_limit:
        reason = "time limit reached"
    elif oom:
        reason = "out of memory"
    cause = NODE_FAILURE if status in _NODE_FAILURES else None
    return Observed(state, code, reason, out_of_memory=oom, time_limit=time_limit, cause=cause)


def _exec_host(value: object) -> str | None:
    # "node01/0*2+node02/1": hosts joined by "+", each "host/cpu[*count]"
    if not value:
        return None
    hosts = [part.split("/")[0] for part in str(value).split("+") if part]
    return ",".join(dict.fromkeys(hosts)) or None


def _observed(
    job: Mapping[str, Any], states: Mapping[str, tuple[JobState, str | None]]
) -> Observed:
    letter = str(job.get("job_state", "")).strip()
    state, why = states.get(letter, (JobState.UNKNOWN, f"PBS state {letter!r}"))
    comment = job.get("comment")
    if not state.finished:
        # The scheduler's comment says why a job waits ("Not Running: Insufficient ...").
        why = comment if comment and state is JobState.PENDING else why
        return Observed(state, None, why, node=_exec_host(job.get("exec_host")))
    exit_status = job.get("Exit_status", job.get("exit_status"))
    seen = pbs_exit(exit_status, job.get("substate"), comment)
    return attrs.evolve(seen, node=_exec_host(job.get("exec_host")))


def _match(found: Mapping[str, Observed], ids: Sequence[str]) -> dict[str, Observed]:
    # qsub may print "12.server" where qstat says "12.server.domain": fall back to the number.
    by_number = {key.split(".")[0]: value for key, value in found.items()}
    matched = {}
    for native_id in ids:
        seen = found.get(native_id) or by_number.get(native_id.split(".")[0])
        if seen is not None:
            matched[native_id] = seen
    return matched


def parse_pro_json(text: str) -> dict[str, Observed]:
    """Jobs from PBS Pro ``qstat -f -F json`` (no ``Jobs`` key when none matched)."""
    if not text.strip():
        return {}
    document = json.loads(text, strict=False)
    jobs = document.get("Jobs") or {}
    return {job_id: _observed(job, _PRO_STATES) for job_id, job in jobs.items()}


def parse_torque(text: str) -> dict[str, Observed]:
    """Jobs from Torque ``qstat -f -1`` (``Job Id:`` blocks of ``key = value`` lines)."""
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("Job Id:"):
            current = blocks.setdefault(line.partition(":")[2].strip(), {})
        elif current is not None and " = " in line:
            key, _, value = line.strip().partition(" = ")
            current[key] = value.strip()
    return {job_id: _observed(job, _TORQUE_STATES) for job_id, job in blocks.items()}


class PbsBackend(BatchBackend):
    """PBS Pro or Torque through ``qsub``/``qstat``/``qdel``; every BatchBackend argument too.

    Args:
        dialect: ``"pro"`` (PBS Pro / OpenPBS) or ``"torque"``.
    """

    name = "pbs"
    _TRANSIENT = _TRANSIENT

    _ARRAY_INDEX = "PBS_ARRAY_INDEX"

    def __init__(self, *, dialect: str = "pro", **options: Any) -> None:
        if dialect not in ("pro", "torque"):
            raise ValueError(f"dialect must be 'pro' or 'torque', not {dialect!r}")
        super().__init__(**options)
        self.dialect = dialect
        self.name = "pbs" if dialect == "pro" else "torque"
        # PBS Pro's qsub -J; Torque's -t names elements 12[3] but its output paths and
        # qstat differ between Torque itself and the Slurm wrappers, so not there.
        self._ARRAYS = dialect == "pro"
        if dialect == "torque" and self.squash.mode is SquashMode.ARRAY:
            raise UsageError(
                "squash: 'array' is not supported on torque (qsub -t differs between "
                "Torque and its Slurm wrappers); use 'squash' or 'off'"
            )

    def _name(self, spec: JobSpec, key: str) -> str:
        if self.dialect == "pro":
            return pbs_job_name(spec.name)
        return pbs_job_name(f"{pbs_job_name(spec.name)[: _MAX_NAME - len(key) - 1]}.{key}")

    def _submit_argv(
        self, spec: JobSpec, files: JobFiles, key: str, exclude: Sequence[str] = ()
    ) -> list[str]:
        argv = ["qsub", "-N", self._name(spec, key)]
        # qsub runs in the job directory: relative paths are relative to it (man qsub), and
        # the plain names survive wrappers that re-parse their command line.
        for flag, path in (("-o", files.stdout), ("-e", files.stderr)):
            argv += [flag, path.name if path.parent == files.directory else str(path)]
        if self.dialect == "pro":
            # d: write straight to the final path, so logs() sees output while it runs.
            argv += ["-k", "doe", *pro_submission(spec.request).args]
            argv += _variables(key, job_labels(spec))
        else:
            # No -v: Debian's Torque qsub turns it into sbatch --export=NONE,... through a
            # shell. The labels are in the script's environment either way.
            argv += torque_submission(spec.request).args
        argv.append(str(files.script))
        return argv

    def _array_argv(
        self, spec: JobSpec, array: JobFiles, size: int, apart: bool, key: str
    ) -> list[str]:
        # ^array_index^ in -o/-e is each subjob's index (PBS Pro User's Guide, "Job Arrays");
        # the array's directory holds links to each job's own output files.
        out = f"{array.directory}/^array_index^.out"
        err = f"{array.directory}/^array_index^.err" if apart else out
        argv = ["qsub", "-J", f"0-{size - 1}", "-N", pbs_job_name(spec.name)]
        argv += ["-o", out, "-e", err, "-k", "doe", *pro_submission(spec.request).args]
        argv += _variables(key, job_labels(spec))
        argv.append(str(array.script))
        return argv

    def _keys(self) -> dict[str, str] | None:
        # Every job the server lists (an array once, as 1234[]), finished ones too on Pro.
        argv = (
            ["qstat", "-x", "-f", "-F", "json"] if self.dialect == "pro" else ["qstat", "-f", "-1"]
        )
        result = self._run(argv)
        if not result.ok and not result.stdout.strip():
            return None
        try:
            return submission_keys(result.stdout, self.dialect)
        except ValueError:
            return None

    def _element_id(self, base: str, index: int) -> str:
        # qsub -J prints "1234[].server"; subjob 5 is "1234[5].server"
        return base.replace("[]", f"[{index}]", 1)

    def _parse_submit(self, stdout: str) -> str:
        lines = [line.strip() for line in stdout.splitlines() if line.strip()]
        if not lines or " " in lines[-1]:
            raise SchedulerError(f"qsub printed no job id: {stdout!r}")
        return lines[-1]

    def _active(self, ids: Sequence[str]) -> dict[str, Observed]:
        if self.dialect == "pro":
            argv = ["qstat", "-x", "-f", "-F", "json", *ids]
        else:
            argv = ["qstat", "-f", "-1", *ids]
        result = self._run_retrying(argv)
        # Unknown ids make qstat exit non-zero but the others are still printed.
        if not result.ok and not result.stdout.strip() and not _only_unknown(result):
            raise SchedulerError("qstat failed", result)
        try:
            found = (
                parse_pro_json(result.stdout)
                if self.dialect == "pro"
                else parse_torque(result.stdout)
            )
        except ValueError as exc:
            raise SchedulerError(f"qstat output not understood ({exc})", result) from exc
        return _match(found, ids)

    def _cancel_argv(self, ids: Sequence[str]) -> list[str]:
        return ["qdel", *ids]

    def _cancel_failed(self, result: CommandResult) -> bool:
        text = f"{result.stdout}\n{result.stderr}"
        lines = [line for line in text.splitlines() if line.strip()]
        # Debian's Torque qdel prints nothing for jobs that already ended.
        return not all(any(h in line for h in _HARMLESS_QDEL) for line in lines)


def _variables(key: str, labels: Mapping[str, str]) -> list[str]:
    # qsub splits -v at commas and ends a value at a quote (copy_env_value, OpenPBS
    # src/cmds/qsub.c); neither the key nor the label encoding holds one.
    variables = {SUBMISSION_VARIABLE: key, **pbs_variables(labels)}
    return ["-v", ",".join(f"{k}={v}" for k, v in variables.items())]


def submission_keys(text: str, dialect: str = "pro") -> dict[str, str]:
    """Submission key -> job id, from ``qstat -x -f -F json`` (Pro: ``Variable_List``) or
    ``qstat -f -1`` (Torque: the end of ``Job_Name``), for every job seqera submitted."""
    found: dict[str, str] = {}
    if dialect == "pro":
        jobs = (json.loads(text, strict=False).get("Jobs") or {}) if text.strip() else {}
        for job_id, job in jobs.items():
            variables = job.get("Variable_List") or {}
            key = variables.get(SUBMISSION_VARIABLE) if isinstance(variables, dict) else None
            if key:
                found[str(key)] = job_id
        return found
    job_id = ""
    for line in text.splitlines():
        if line.startswith("Job Id:"):
            job_id = line.partition(":")[2].strip()
        elif line.strip().startswith("Job_Name = ") and job_id:
            name = line.partition(" = ")[2].strip()
            _, dot, key = name.rpartition(".")
            if dot and key.startswith("seqera-"):
                found[key] = job_id
    return found


def _only_unknown(result: CommandResult) -> bool:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return all("Unknown Job Id" in line for line in lines)
