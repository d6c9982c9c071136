"""Slurm: ``sbatch --parsable``, one ``squeue`` per poll, ``sacct`` for forgotten jobs, ``scancel``.

Status comes from ``squeue -t all`` for every id at once; its ``exit_code`` field is the
batch script's raw wait status. A finished job stays listed for ``MinJobAge`` seconds
(``man slurm.conf``); after that it is looked up, batched too, in the first history source
that works here, found once and remembered: ``sacct`` (slurmdbd accounting), else
``sacct -c`` (``JobCompType=jobcomp/filetxt``). ``scontrol show job`` reads the same table
as ``squeue``, so it cannot see a purged job; the exit code the job script writes is the
last resort (see ``_batch``).

What a finished job used comes from accounting when slurmdbd keeps it: one ``sacct``
per poll for every job that ended in it gives Elapsed and the largest MaxRSS of its
steps (the step records reach slurmdbd before the job reads as ended, so the first call
finds them). MaxRSS is what the cluster's gatherer saw: ``jobacct_gather/cgroup`` reads
the cgroup's high-water mark, ``jobacct_gather/linux`` samples every
``JobAcctGatherFrequency`` (30 s by default) and so misses a short job, or a spike
between samples, entirely. Without accounting storage the first ``sacct`` fails and it
is not asked again.

Every submission carries its key in its ``--comment`` (``_slurm_keys``); after an unknown
outcome, or in ``find`` after a crash, one ``squeue --me -t all`` lists every key (and
``find`` asks ``sacct`` too, where slurmdbd keeps comments, for jobs that left it). The
node a job ran on comes with its state (``NodeList``), for the node-failure retry,
which resubmits with ``--exclude``.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ...dialects.slurm import parse_time, submission
from ...errors import ResourceError
from ...squash import Node
from ..base import NODE_FAILURE, PREEMPTED, JobHandle, JobSpec, JobState
from ._base import (
    BatchBackend,
    CommandResult,
    JobFiles,
    Observed,
    SchedulerError,
    from_wait_status,
    job_labels,
    shell_exit,
)
from ._slurm_keys import (
    SUBMISSION_LABEL,
    comment_args,
    parse_sacct_keys,
    parse_squeue_keys,
    submission_key_of,
)
from ._slurm_nodes import parse_sinfo_nodes, sinfo_argv
from ._slurm_site import SlurmSite

__all__ = [
    "SUBMISSION_LABEL",
    "SlurmBackend",
    "comment_args",
    "parse_sacct",
    "parse_sacct_cpu",
    "parse_sacct_keys",
    "parse_sacct_usage",
    "parse_squeue",
    "parse_squeue_keys",
    "slurm_state",
    "submission_key_of",
]

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
# What sbatch/squeue print when slurmctld is busy, restarting or briefly unreachable
# (slurm_strerror texts of ESLURM_*/SLURM_PROTOCOL_* errors).
_TRANSIENT = (
    "Socket timed out",
    "Unable to contact slurm controller",
    "temporarily unable to accept job",
    "Resource temporarily unavailable",
    "Zero Bytes were transmitted or received",
    "Connection refused",
    "Communication connection failure",
)
_LOG = logging.getLogger(__name__)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# ArrayJobID and ArrayTaskID name an array's element as squeue -j takes it (123_4);
# with -r, pending elements get a line each instead of one "123_[5-9]".
_SQUEUE_FORMAT = "JobID:|,ArrayJobID:|,ArrayTaskID:|,State:|,Reason:|,exit_code:|,NodeList:|"
# JobID is the job's id or an element's 123_4; JobIDRaw would be the element's own number.
_SACCT_FIELDS = "JobID,State,ExitCode,NodeList"
# Causes the state says more precisely than the flags (the rest follow the flags).
_CAUSES = {"NODE_FAIL": NODE_FAILURE, "BOOT_FAIL": NODE_FAILURE, "PREEMPTED": PREEMPTED}
_USAGE_FIELDS = "JobID,Elapsed,MaxRSS,TotalCPU"
# TotalCPU (man sacct: "the sum of the SystemCPU and UserCPU time used by the job or job
# step") is written [DD-[HH:]]MM:SS[.sss]; the allocation line may carry it or only steps.
_CPU_TIME = re.compile(r"(?:(?:(\d+)-)?(\d+):)?(\d+):(\d+(?:\.\d+)?)")
# sacct's sizes carry a binary suffix (K = KiB); a bare number is bytes.
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
# Not parse_memory: a bare MaxRSS is bytes (a bare --mem is MiB), and it may be fractional.
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)")
# What slurmstepd writes to the job's stderr when it kills a step for memory
# (jobacct_gather OverMemoryKill) or the kernel's OOM killer hit it (task/cgroup).
_OOM_MARKERS = ("Exceeded job memory limit", "exceeded memory limit", "oom-kill", "oom_kill")


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


def _pattern_path(path: str) -> str:
    # sbatch expands %j, %x, ... in --output/--error (man sbatch, "filename pattern").
    return path.replace("%", "%%")


class SlurmBackend(BatchBackend):
    """Slurm through its commands. Accepts every :class:`BatchBackend` argument.

    Args:
        history: ``"sacct"``, ``"jobcomp"`` or ``"none"`` to skip probing for where
            finished jobs are found; by default the first one that works is used.
        warn: where one-line notes go (``--tmp`` not sent, the account chosen...).
        site: the run's Slurm settings (config ``slurm.*``): ``tmp``, ``qos``,
            ``reservation``, ``clusters``, ``requeue``, ``signal``, ``jobname_prefix``,
            ``no_account`` (see ``_slurm_site``).
    """

    name = "slurm"
    _TRANSIENT = _TRANSIENT
    _ARRAYS = True
    _ARRAY_INDEX = "SLURM_ARRAY_TASK_ID"

    _SITE = ("tmp", "qos", "reservation", "clusters", "requeue", "signal", "jobname_prefix",
             "no_account")  # fmt: skip

    def __init__(
        self,
        *,
        history: str | None = None,
        warn: Callable[[str], None] | None = None,
        **options: Any,
    ) -> None:
        site = {k: options.pop(k) for k in self._SITE if options.get(k) is not None}
        super().__init__(**options)
        if history not in (None, "sacct", "jobcomp", "none"):
            raise ValueError(f"history must be sacct, jobcomp or none, not {history!r}")
        self.history = history
        self._no_accounting = False  # sacct said accounting storage is off: not asked again
        self.site = SlurmSite(self._run, warn or _LOG.warning, **site)
        # clusters jobs went to (sbatch --parsable prints "id;cluster"): squeue, sacct
        # and scancel ask them all (-M), as the Slurm plugin does on status and cancel
        self._clusters: set[str] = set(filter(None, (site.get("clusters") or "").split(",")))
        if os.environ.get("SLURM_JOB_ID"):
            # the Slurm plugin's delete_slurm_environment: an outer job's SLURM_MEM_PER_CPU
            # or SLURM_NTASKS would be read by sbatch as options of every job sent from here
            self._env = {k: v for k, v in (self._env or os.environ).items()
                         if not k.startswith("SLURM_") or k == "SLURM_CONF"}  # fmt: skip
            self.site.note(
                f"running inside Slurm job {os.environ['SLURM_JOB_ID']}: jobs are sent without "
                "its SLURM_* variables; prefer a login node (the Slurm plugin warns the same)"
            )

    def set_warn(self, warn: Callable[[str], None]) -> None:
        """Send the notes to the engine's log (the session's ``warn``)."""
        self.site.warn = warn

    def _options(self, spec: JobSpec) -> list[str]:
        args = submission(spec.request).args
        if spec.request.account:
            self.site.check_account(spec.request.account)
        return self.site.args(args, spec.request.queue, account=True)

    def _on_clusters(self, argv: list[str]) -> list[str]:
        if not self._clusters:
            return argv
        return [argv[0], "-M", ",".join(sorted(self._clusters)), *argv[1:]]

    def _submit_argv(
        self, spec: JobSpec, files: JobFiles, key: str, exclude: Sequence[str] = ()
    ) -> list[str]:
        argv = [
            "sbatch",
            "--parsable",
            f"--job-name={_CONTROL.sub('_', self.site.job_name(spec.name))}",
            f"--output={_pattern_path(str(files.stdout))}",
            f"--error={_pattern_path(str(files.stderr))}",
            f"--chdir={spec.workdir or files.directory}",
            *comment_args(key, job_labels(spec)),
            *self._options(spec),
        ]
        if exclude:
            argv.append(f"--exclude={','.join(exclude)}")
        argv.append(str(files.script))
        return argv

    def _array_argv(
        self, spec: JobSpec, array: JobFiles, size: int, apart: bool, key: str
    ) -> list[str]:
        # %a is the element's index (man sbatch, "filename pattern"): its links in the
        # array's directory lead to that job's own output files.
        directory = _pattern_path(str(array.directory))
        argv = [
            "sbatch",
            "--parsable",
            f"--array=0-{size - 1}",
            f"--job-name={_CONTROL.sub('_', self.site.job_name(spec.name))}",
            f"--output={directory}/%a.out",
            *([f"--error={directory}/%a.err"] if apart else []),
            f"--chdir={array.directory}",
        ]
        argv += comment_args(key, job_labels(spec))
        argv += self._options(spec)
        argv.append(str(array.script))
        return argv

    def largest_node(self, partition: str | None) -> Node | None:
        """The largest node of ``partition`` (None: the default one) from one ``sinfo``;
        None when sinfo fails or lists no such node (see ``_slurm_nodes``)."""
        result = self._run_retrying(sinfo_argv(partition))
        return parse_sinfo_nodes(result.stdout, partition) if result.ok else None

    def _element_id(self, base: str, index: int) -> str:
        return f"{base}_{index}"

    def _parse_submit(self, stdout: str) -> str:
        # --parsable prints "jobid" or "jobid;cluster" (man sbatch).
        last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
        job_id, _, cluster = (part.strip() for part in last.partition(";"))
        if cluster:
            self._clusters.add(cluster)
        if not job_id:
            raise SchedulerError(f"sbatch printed no job id: {stdout!r}")
        return job_id

    def _keys(self) -> dict[str, str] | None:
        # ArrayJobID is the job's id, or an array's own id (what sbatch printed for it);
        # -t all: a job that already ended (within MinJobAge) counts too.
        argv = ["squeue", "-h", "--me", "-t", "all", "-O", "ArrayJobID:|,Comment:|"]
        result = self._run(self._on_clusters(argv))
        return parse_squeue_keys(result.stdout) if result.ok else None

    def _forgotten_keys(self, since: float) -> dict[str, str]:
        # Only slurmdbd keeps comments (AccountingStoreFlags=job_comment); jobcomp does not.
        if self.history in ("jobcomp", "none") or self._no_accounting:
            return {}
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
        argv = ["sacct", "-n", "-P", "-X", f"--user={os.getuid()}", "-S", start,
                "-o", "JobID,Comment"]  # fmt: skip
        result = self._run(self._on_clusters(argv))
        return parse_sacct_keys(result.stdout) if result.ok else {}

    def _active(self, ids: Sequence[str]) -> dict[str, Observed]:
        argv = ["squeue", "-h", "-r", "-t", "all", "-j", ",".join(ids), "-O", _SQUEUE_FORMAT]
        result = self._run_retrying(self._on_clusters(argv))
        if not result.ok:
            if "Invalid job id" in result.stderr:
                return {}  # squeue fails only when no id is known at all
            raise SchedulerError("squeue failed", result)
        return parse_squeue(result.stdout)

    def _finished_lookup(self, ids: Sequence[str]) -> dict[str, Observed]:
        sources = [self.history] if self.history else ["sacct", "jobcomp"]
        for source in sources:
            if source == "none":
                return {}
            argv = ["sacct", "-n", "-P", "-X", "-j", ",".join(ids), "-o", _SACCT_FIELDS]
            if source == "jobcomp":
                argv.insert(1, "-c")
            result = self._run(self._on_clusters(argv))
            if result.ok:
                self.history = source  # it works here: keep using it
                return parse_sacct(result.stdout)
            if result.returncode is None or self._transient(result):
                return {}  # say nothing about this source yet; ask again next poll
        self.history = "none"
        self.site.min_job_age(self.history)
        return {}

    def _usage(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[float | None, int | None, float | None]]:
        # the forgotten-job lookup may have found sacct refused here already
        if not ids or self._no_accounting or self.history in ("jobcomp", "none"):
            return {}
        argv = ["sacct", "-n", "-P", "-j", ",".join(ids), "-o", _USAGE_FIELDS]
        result = self._run(self._on_clusters(argv))
        if not result.ok:
            # "Slurm accounting storage is disabled"
            self._no_accounting = not self._transient(result)
            return {}
        cpu = parse_sacct_cpu(result.stdout)
        return {
            job: (wall, peak, cpu.get(job))
            for job, (wall, peak) in parse_sacct_usage(result.stdout).items()
        }

    def _settle(self, handle: JobHandle, seen: Observed) -> Observed:
        # Without task/cgroup, Slurm reports an over-memory kill as FAILED with signal 9;
        # slurmstepd says why in the job's stderr.
        if seen.state is JobState.FAILED and not seen.out_of_memory and seen.exit_code == 137:
            tail = _tail(handle.stderr) + _tail(handle.stdout)
            if any(marker in tail for marker in _OOM_MARKERS):
                return attrs.evolve(seen, reason="out of memory", out_of_memory=True)
        return seen

    def _cancel_argv(self, ids: Sequence[str]) -> list[str]:
        return self._on_clusters(["scancel", *ids])

    def _cancel_failed(self, result: CommandResult) -> bool:
        # scancel exits 1 when a job already ended; the others are still cancelled.
        harmless = ("already completing or completed", "Invalid job id specified")
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        return not lines or not all(any(h in line for h in harmless) for line in lines)


def _tail(path: str | None, size: int = 8192) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as stream:
            stream.seek(0, 2)
            stream.seek(max(0, stream.tell() - size))
            return stream.read().decode(errors="replace")
    except OSError:
        return ""
