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

from ...dialects.slurm import submission
from ...squash import Node
from ..base import JobHandle, JobSpec, JobState
from ._base import (
    BatchBackend,
    CommandResult,
    JobFiles,
    Observed,
    SchedulerError,
    job_labels,
)
from ._slurm_keys import (
    SUBMISSION_LABEL,
    comment_args,
    parse_sacct_keys,
    parse_squeue_keys,
    submission_key_of,
)
from ._slurm_nodes import parse_sinfo_nodes, sinfo_argv
from ._slurm_parse import (
    parse_sacct,
    parse_sacct_cpu,
    parse_sacct_usage,
    parse_squeue,
    slurm_state,
)
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
_USAGE_FIELDS = "JobID,Elapsed,MaxRSS,TotalCPU"
# How many times (a second apart) sacct is asked again for a job whose batch step it does
# not show yet.
_STEP_WAITS = 3
# What slurmstepd writes to the job's stderr when it kills a step for memory
# (jobacct_gather OverMemoryKill) or the kernel's OOM killer hit it (task/cgroup).
_OOM_MARKERS = ("Exceeded job memory limit", "exceeded memory limit", "oom-kill", "oom_kill")


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
        for _ in range(_STEP_WAITS):
            # slurmctld sends a job's end and its batch step's record (TotalCPU, MaxRSS) to
            # slurmdbd apart: a busy slurmdbd may show the job ended before its step
            if not result.ok or not _without_batch_step(result.stdout, ids):
                break
            self._sleep(1.0)
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


def _without_batch_step(text: str, ids: Sequence[str]) -> bool:
    """Whether sacct's lines show one of ``ids`` (a job, or an array element ``1_2``)
    without its ``.batch`` step."""
    jobs: set[str] = set()
    steps: set[str] = set()
    for line in text.splitlines():
        job_id, _, step = line.split("|", 1)[0].strip().partition(".")
        if not step:
            jobs.add(job_id)
        elif step == "batch":
            steps.add(job_id)
    return any(i in jobs and i not in steps for i in ids)
