"""Grid Engine: ``qsub -terse``, one ``qstat -xml`` per poll, ``qacct`` for what ended, ``qdel``.

Son of Grid Engine 8.1 is what runs in the tests; Open Grid Scheduler and Univa/Altair
Grid Engine take the same commands (differences below). Resources are written by
``seqera_core.dialects.sge``: memory as the site's resource divided per slot, cpus as
``-pe <pe> N``, ``-l h_rt``. Every job is given its working directory (``-wd``) and both
output paths: without ``-o``/``-e`` Grid Engine writes them to the user's ``$HOME``.

Status: ``qstat -xml -u <user>`` lists every pending and running job (array tasks as
``<tasks>`` ranges) with its state letters (``man qstat``, "state"). A job in error
(``E``, e.g. ``Eqw`` after a failed ``chdir``) never leaves the queue by itself: its
reason is read with one ``qstat -j <ids> -xml`` (``JAT_message_list``), it is reported
failed and deleted. A job that left the listing is read from accounting: ``qacct -j <n>``
for one job (or array), else one ``qacct -o <user> -j '*' -E -b <since>`` (jobs that
ended since the earliest was written) for several. Accounting is written when a job ends
only with ``accounting_flush_time=00:00:00`` (``man sge_conf``, ``reporting_params``);
until then the exit code the job script recorded is used (see ``_exits.reconcile``).

``failed`` (``man accounting``): 0 ran; 37 "qmaster enforced h_rt, h_cpu, or h_vmem
limit", which is the same for a time and a memory kill (exit 137 both), so the two are
told apart by comparing the job's ``ru_wallclock`` with its ``h_rt`` and its ``maxvmem``
with its memory limit times its slots (both read from ``category``, the job's own
request); 100 "assumedly after job" with exit 137 after ``qdel``; 1 "assumedly before
job" and 8/10/11 (shepherd start-up failures) are the node's fault, sent again once.
A single process that alone goes over ``h_vmem`` is not killed: the setrlimit makes its
allocation fail and it exits with its own code (Python's MemoryError: 1), which is not
flagged as out of memory. Peak memory is ``maxvmem``, the virtual size Grid Engine itself
measures against ``h_vmem`` (never below the resident peak: a task is never sized below
what it used).

Exactly once: each submission carries its key in the job's context (``-ac
SEQERA_SUBMISSION=<key>``, the labels beside it, one context variable each, encoded by
``labels.encode_labels``); one ``qstat -j '*' -xml`` lists every context, and a job that
already left it is found by its start mark (``_jobdir``).

Differences between the three: UGE prints ``ru_wallclock`` with decimals and no ``s``
and may enforce memory by cgroups (then an over-memory job reads ``failed 0``, exit 137);
OGS 2011.11 and SGE 6.2 print ``qstat -xml`` without ``<tasks>`` for a one-task
element's running state; SoGE prints ``maxvmem`` with binary units (``MB`` = 2^20).
Parsing below accepts each form.
"""

from __future__ import annotations

import getpass
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ...dialects.sge import SgeSettings, submission
from ...labels import sge_context
from ...squash import Node
from ..base import JobHandle, JobSpec, JobState
from ._base import BatchBackend, CommandResult, JobFiles, Observed, SchedulerError, job_labels
from ._sge_status import (
    SUBMISSION_CONTEXT,
    Usage,
    error_reasons,
    parse_qacct,
    parse_qhost,
    parse_qstat,
    sge_state,
    submission_keys,
)

__all__ = [
    "SUBMISSION_CONTEXT",
    "SgeBackend",
    "parse_qacct",
    "parse_qhost",
    "parse_qstat",
    "parse_submit",
    "sge_state",
    "submission_keys",
]

_TRANSIENT = (
    "unable to contact qmaster",
    "can't connect to service",
    "commlib error",
    "failed receiving gdi request",
    "unable to send message to qmaster",
)
_HARMLESS_QDEL = ("does not exist", "is already in deletion", "has registered", "has deleted")
_NAME = re.compile(r"[^A-Za-z0-9_.+-]", re.ASCII)  # man sge_types, "name": no / : @ \ * ?


def parse_submit(stdout: str) -> str:
    """The job's number from ``qsub -terse`` (``12``, or ``12.1-5:1`` for an array)."""
    line = stdout.strip().splitlines()[-1].strip() if stdout.strip() else ""
    number = line.split(".")[0]
    if not number.isdigit():
        raise SchedulerError(f"qsub printed no job id: {stdout!r}")
    return number


class SgeBackend(BatchBackend):
    """Grid Engine through ``qsub``/``qstat``/``qacct``/``qdel``; every BatchBackend argument too.

    Args:
        memory: the site's memory resource (``h_vmem``, ``h_rss``, ``mem_free``,
            ``m_mem_free``), requested per slot.
        pe: the parallel environment for jobs of more than one slot.
        gpu: the site's GPU resource.
    """

    name = "sge"
    _TRANSIENT = _TRANSIENT
    _ARRAYS = True
    _ARRAY_INDEX = "SGE_TASK_ID"
    _ARRAY_FIRST = 1  # qsub -t n-m: n >= 1

    def __init__(
        self, *, memory: str = "h_vmem", pe: str = "smp", gpu: str = "gpu", **options: Any
    ) -> None:
        super().__init__(**options)
        self.settings = SgeSettings(memory=memory, pe=pe, gpu=gpu)
        self._user = getpass.getuser()
        self._accounted: dict[str, tuple[Observed, Usage]] = {}

    def _common(self, name: str, key: str, spec: JobSpec) -> list[str]:
        context = ",".join([f"{SUBMISSION_CONTEXT}={key}", *sge_context(job_labels(spec))])
        return ["qsub", "-terse", "-N", _job_name(name), "-S", "/bin/sh", "-ac", context,
                *submission(spec.request, **attrs.asdict(self.settings)).args]  # fmt: skip

    def _submit_argv(
        self, spec: JobSpec, files: JobFiles, key: str, exclude: Sequence[str] = ()
    ) -> list[str]:
        argv = self._common(spec.name, key, spec)
        same = files.stdout == files.stderr
        argv += ["-wd", str(spec.workdir or files.directory),
                 *_outputs(same, str(files.stdout), str(files.stderr))]  # fmt: skip
        if exclude:  # a host expression (man sge_types, "wildcard/expression")
            argv += ["-l", "h=" + "&".join(f"!{host}" for host in exclude)]
        return [*argv, str(files.script)]

    def _array_argv(
        self, spec: JobSpec, array: JobFiles, size: int, apart: bool, key: str
    ) -> list[str]:
        # $TASK_ID in -o/-e is each task's number (man qsub, -o): links to each job's files
        out = f"{array.directory}/$TASK_ID.out"
        err = f"{array.directory}/$TASK_ID.err" if apart else out
        argv = self._common(spec.name, key, spec)
        argv += ["-t", f"1-{size}", "-wd", str(array.directory), *_outputs(not apart, out, err)]
        return [*argv, str(array.script)]

    def largest_node(self, queue: str | None) -> Node | None:
        """The largest execution host, from one ``qhost -xml`` (what a squashed allocation
        can get at most; any queue: slots are the queue's, processors the host's)."""
        result = self._run_retrying(["qhost", "-xml"])
        try:
            return parse_qhost(result.stdout) if result.ok else None
        except ET.ParseError:
            return None

    def _element_id(self, base: str, index: int) -> str:
        return f"{base}.{index + self._ARRAY_FIRST}"

    def _parse_submit(self, stdout: str) -> str:
        return parse_submit(stdout)

    def _keys(self) -> dict[str, str] | None:
        result = self._run(["qstat", "-j", "*", "-xml"])
        if not result.ok:
            return None
        try:
            return submission_keys(result.stdout)
        except ET.ParseError:
            return None

    def _active(self, ids: Sequence[str]) -> dict[str, Observed]:
        result = self._run_retrying(["qstat", "-xml", "-u", self._user])
        if not result.ok:
            raise SchedulerError("qstat failed", result)
        try:
            listed = parse_qstat(result.stdout)
        except ET.ParseError as exc:
            raise SchedulerError(f"qstat -xml not understood ({exc})", result) from exc
        seen = {i: listed[i] for i in ids if i in listed}
        errors = [i for i, s in seen.items() if s.state is JobState.FAILED]
        if errors:
            seen.update(self._fail_errors(errors, seen))
        return seen

    def _fail_errors(self, ids: Sequence[str], seen: Mapping[str, Observed]) -> dict[str, Observed]:
        """Why jobs in error are (one ``qstat -j``), then delete them: they never end alone."""
        numbers = sorted({i.split(".")[0] for i in ids})
        result = self._run_retrying(["qstat", "-j", ",".join(numbers), "-xml"])
        try:
            reasons = error_reasons(result.stdout) if result.ok else {}
        except ET.ParseError:
            reasons = {}
        self._run_retrying(["qdel", *ids])
        return {i: sge_state("E", reasons.get(i.split(".")[0])) for i in ids}

    def _finished_lookup(self, ids: Sequence[str]) -> dict[str, Observed]:
        numbers = {i.split(".")[0] for i in ids}
        if len(numbers) == 1:
            argv = ["qacct", "-j", numbers.pop()]
        else:
            since = min(self._written(i) for i in ids) - 300  # the clocks may disagree
            stamp = time.strftime("%Y%m%d%H%M.%S", time.localtime(since))
            argv = ["qacct", "-o", self._user, "-j", "*", "-E", "-b", stamp]
        result = self._run_retrying(argv)
        if not result.ok:  # "job id 12 not found": not written yet
            return {}
        records = parse_qacct(result.stdout, self.settings.memory)
        self._accounted.update(records)
        return {i: records[i][0] for i in ids if i in records}

    def _written(self, native_id: str) -> float:
        directory = self._index.directory(native_id)
        try:
            return (directory / "job.sh").stat().st_mtime if directory else time.time() - 86400
        except OSError:
            return time.time() - 86400

    def _usage(self, ids: Sequence[str]) -> dict[str, Usage]:
        # read by _finished_lookup in this same poll (a job ends by leaving qstat)
        return {i: self._accounted[i][1] for i in ids if i in self._accounted}

    def _settle(self, handle: JobHandle, seen: Observed) -> Observed:
        # qdel reads as "failed 100: assumedly after job", exit 137, like a kill from outside
        if seen.state is JobState.FAILED and handle.native_id in self._cancelled:
            return Observed(JobState.CANCELLED, seen.exit_code, "cancelled", node=seen.node)
        return seen

    def _cancel_argv(self, ids: Sequence[str]) -> list[str]:
        return ["qdel", *ids]

    def _cancel_failed(self, result: CommandResult) -> bool:
        lines = [line for line in f"{result.stdout}\n{result.stderr}".splitlines() if line]
        return not all(any(h in line for h in _HARMLESS_QDEL) for line in lines)


def _job_name(name: str) -> str:
    # qsub -N refuses / : @ \ * ? and a leading digit reads badly in qstat's columns
    clean = _NAME.sub("_", name) or "job"
    return clean if clean[0].isalpha() else f"j{clean}"


def _outputs(same: bool, out: str, err: str) -> list[str]:
    # -j y merges stderr into -o when the job keeps one file (man qsub)
    return ["-o", out, "-j", "y"] if same else ["-o", out, "-e", err]
