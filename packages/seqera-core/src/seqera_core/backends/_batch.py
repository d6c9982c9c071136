"""The life cycle every batch scheduler shares; Slurm, PBS Pro and Torque fill in the verbs.

A template-method base in the manner of psij-python's ``BatchSchedulerExecutor``:
:class:`BatchBackend` writes each job's script into a directory of its own, submits it
with bounded retries, polls many jobs with one native call, cancels many with one, and
reads logs. A scheduler supplies only argv builders, output parsers and a state map.

Safety: commands are argv lists run without a shell. Inside the generated script every
value from the caller (command, working directory, environment, labels) is quoted with
:func:`shlex.quote`, its newlines spelled as a variable, so no line of the script starts
with caller text and none can become an ``#SBATCH``/``#PBS`` directive. Scheduler options
go as separate argv elements.

Robustness: every command has a timeout, after which its whole process group is killed
(wrappers such as Debian's Torque ``qsub`` spawn children that would keep the pipes
open). Transient errors are retried with exponential backoff, bounded by
:class:`RetryPolicy`. The script records the command's exit code in the job directory,
so a job whose record the scheduler has already forgotten is not lost.

Exit codes follow the shell: a normal exit N is N, death by signal S is 128 + S and
``reason`` names the signal.
"""

from __future__ import annotations

import abc
import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs
from attrs import field, frozen

from ..errors import SeqeraError
from ..labels import env_name
from ..squash import SquashPolicy, array_key
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus

__all__ = [
    "EXIT_FILE",
    "BatchBackend",
    "CommandResult",
    "JobFiles",
    "Observed",
    "RetryPolicy",
    "SchedulerError",
    "SubmitError",
    "from_wait_status",
    "job_environment",
    "job_labels",
    "job_script",
    "prepare_job",
    "run_command",
    "shell_exit",
]

EXIT_FILE = "exitcode"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_NOT_FILE_NAME = re.compile(r"[^A-Za-z0-9._+-]", re.ASCII)


class SchedulerError(SeqeraError):
    """A scheduler command failed for good (after any retries)."""

    def __init__(self, message: str, result: CommandResult | None = None) -> None:
        self.result = result
        detail = f": {result.describe()}" if result is not None else ""
        super().__init__(message + detail)


class SubmitError(SchedulerError):
    """A submission failed; ``submitted`` holds the handles of the jobs submitted before it."""

    def __init__(
        self, message: str, result: CommandResult | None, submitted: Sequence[JobHandle]
    ) -> None:
        self.submitted = tuple(submitted)
        super().__init__(message, result)


def _strings(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(values)


@frozen
class CommandResult:
    """What one native command did. ``returncode`` is None when it timed out and was killed."""

    argv: tuple[str, ...] = field(converter=_strings)
    returncode: int | None
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0."""
        return self.returncode == 0

    def describe(self) -> str:
        """A one-line account for error messages."""
        status = "timed out" if self.returncode is None else f"exit {self.returncode}"
        text = (self.stderr.strip() or self.stdout.strip()).replace("\n", " | ")
        return f"{shlex.join(self.argv)} ({status}) {text[:500]}".rstrip()


# (argv, timeout, cwd, env) -> result
Runner = Callable[[Sequence[str], float, str | None, Mapping[str, str] | None], CommandResult]


def run_command(
    argv: Sequence[str], timeout: float, cwd: str | None, env: Mapping[str, str] | None
) -> CommandResult:
    """Run argv without a shell; on timeout kill its whole process group."""
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
    except OSError as exc:  # not installed, not executable
        return CommandResult(argv, 127, "", str(exc))
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return CommandResult(argv, None, out, err)
    return CommandResult(argv, proc.returncode, out, err)


@frozen
class RetryPolicy:
    """Exponential backoff for transient scheduler errors: ``attempts`` tries in all."""

    attempts: int = 6
    first_delay: float = 0.5
    factor: float = 2.0
    max_delay: float = 8.0

    def delays(self) -> Iterator[float]:
        """The pause before each retry (``attempts - 1`` of them)."""
        delay = self.first_delay
        for _ in range(self.attempts - 1):
            yield min(delay, self.max_delay)
            delay *= self.factor


@frozen
class Observed:
    """A scheduler's view of one job, before the base class settles its final status."""

    state: JobState
    exit_code: int | None = None
    reason: str | None = None
    out_of_memory: bool = False
    time_limit: bool = False


@frozen
class JobFiles:
    """Where one job's files live: its directory, script, outputs and exit-code file."""

    directory: Path
    script: Path
    stdout: Path
    stderr: Path

    @property
    def exit_file(self) -> Path:
        """The file the script writes the command's exit code to."""
        return self.directory / EXIT_FILE


def shell_exit(code: int | None, sig: int | None) -> tuple[int | None, str | None]:
    """The shell's exit code for an exit status or a signal, and a reason for a signal."""
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return 128 + sig, f"killed by {name}"
    return code, None


def from_wait_status(raw: int) -> tuple[int | None, str | None]:
    """Shell exit code and reason from a ``waitpid`` status (Slurm's ``exit_code`` field)."""
    return shell_exit((raw >> 8) & 0xFF, raw & 0x7F)


class BatchBackend(Backend):
    """The shared life cycle of batch schedulers; subclasses supply the native verbs.

    Args:
        work_dir: where each job gets a directory (script, stdout, stderr, exit code);
            it must be visible from the compute nodes. Defaults to ``~/.seqera/jobs``.
        timeout: seconds any one scheduler command may take before it is killed.
        retry: backoff for transient errors (controller busy or restarting).
        env: extra environment for the scheduler commands (``SLURM_CONF``, ``PBS_SERVER``).
        runner: runs one argv; tests replace it to work without a scheduler.
        sleep: the pause between retries; tests replace it.
        squash: which jobs may go out together (arrays); off by default.
    """

    name = "batch"
    # Substrings of a failed command's output that mean "try again later".
    _TRANSIENT: tuple[str, ...] = ()
    # Whether this scheduler takes job arrays (see _array_argv), and the variable that
    # holds an element's index inside one.
    _ARRAYS = False
    _ARRAY_INDEX = ""

    def __init__(
        self,
        *,
        work_dir: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        runner: Runner | None = None,
        sleep: Callable[[float], None] = time.sleep,
        squash: SquashPolicy | None = None,
    ) -> None:
        super().__init__()
        self.squash = squash or SquashPolicy()
        self.work_dir = Path(work_dir) if work_dir else Path.home() / ".seqera" / "jobs"
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._env = None if env is None else {**os.environ, **env}
        self._runner: Runner = runner or run_command
        self._sleep = sleep
        self._dirs: dict[str, Path] = {}
        self._finished: dict[str, JobStatus] = {}
        self._cancelled: set[str] = set()

    # -- what each scheduler supplies ------------------------------------------------

    @abc.abstractmethod
    def _submit_argv(self, spec: JobSpec, files: JobFiles) -> list[str]:
        """The submission command for one job whose script is ``files.script``."""

    @abc.abstractmethod
    def _parse_submit(self, stdout: str) -> str:
        """The native job id from the submission command's output."""

    @abc.abstractmethod
    def _active(self, ids: Sequence[str]) -> dict[str, Observed]:
        """Jobs the scheduler still lists, with ONE native call; unknown ids are left out."""

    def _finished_lookup(self, ids: Sequence[str]) -> dict[str, Observed]:
        """Jobs the live listing has forgotten, from a history source (one call)."""
        return {}

    @abc.abstractmethod
    def _cancel_argv(self, ids: Sequence[str]) -> list[str]:
        """One command that cancels every id."""

    def _cancel_failed(self, result: CommandResult) -> bool:
        """Whether a non-zero cancel means more than "already finished"."""
        return True

    def _array_argv(self, spec: JobSpec, array: JobFiles, size: int, apart: bool) -> list[str]:
        """One submission of an array of ``size`` elements shaped like ``spec``, running
        ``array.script``; element ``i``'s outputs are ``array.directory/<i>.out``/``.err``
        (one file when not ``apart``)."""
        raise NotImplementedError(f"{self.name} has no job arrays")

    def _element_id(self, base: str, index: int) -> str:
        """The native id of element ``index`` of the array ``base``."""
        raise NotImplementedError(f"{self.name} has no job arrays")

    def _find_submitted(self, files: JobFiles) -> str | None:
        """After an ambiguous submission error, the id of the job if it went through anyway."""
        return None

    def _settle(self, handle: JobHandle, seen: Observed) -> Observed:
        """Last scheduler-specific touch on a finished job (e.g. OOM from its log)."""
        return seen

    def _usage(self, ids: Sequence[str]) -> dict[str, tuple[float | None, int | None]]:
        """Wall seconds and peak memory bytes of jobs that just finished (one call), from
        the scheduler's accounting where it keeps them; what it does not know is left out."""
        return {}

    # -- commands --------------------------------------------------------------------

    def _run(self, argv: Sequence[str], *, cwd: str | None = None) -> CommandResult:
        self.calls[argv[0]] += 1
        return self._runner(argv, self.timeout, cwd, self._env)

    def _transient(self, result: CommandResult) -> bool:
        if result.returncode is None:
            return True
        text = f"{result.stdout}\n{result.stderr}".lower()
        return any(marker.lower() in text for marker in self._TRANSIENT)

    def _run_retrying(self, argv: Sequence[str], *, cwd: str | None = None) -> CommandResult:
        """Run argv, retrying transient failures with backoff; returns the last result."""
        delays = self.retry.delays()
        while True:
            result = self._run(argv, cwd=cwd)
            if result.ok or not self._transient(result):
                return result
            delay = next(delays, None)
            if delay is None:
                return result
            self._sleep(delay)

    # -- the life cycle --------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Write each job's script and submit it; handles in the same order.

        With arrays on (``squash`` policy ``array`` or ``squash``), jobs that could be
        one array's elements go out as one array submission.
        """
        # Every script is written first: a job that cannot be expressed fails the whole
        # call (ValueError) before anything reaches the scheduler.
        prepared = [(spec, self._prepare(spec)) for spec in jobs]
        handles: dict[int, JobHandle] = {}
        for batch in self._batches(prepared):
            members = [prepared[n] for n in batch]
            try:
                if len(batch) == 1:
                    ids = [self._submit_one(*members[0])]
                else:
                    ids = self._submit_array(members)
            except SchedulerError as exc:
                done = [handles[n] for n in sorted(handles)]
                names = ", ".join(repr(spec.name) for spec, _ in members[:3])
                raise SubmitError(f"cannot submit {names}", exc.result, done) from exc
            for n, native_id in zip(batch, ids, strict=True):
                spec, files = prepared[n]
                self._remember(native_id, files.directory)
                handles[n] = JobHandle(
                    self.name, native_id, spec.name, str(files.stdout), str(files.stderr)
                )
        return [handles[n] for n in range(len(prepared))]

    def _batches(self, prepared: Sequence[tuple[JobSpec, JobFiles]]) -> list[list[int]]:
        """Which jobs go out together: lists of indices, in the order of their first job."""
        if not (self._ARRAYS and self.squash.arrays):
            return [[n] for n in range(len(prepared))]
        groups: dict[Hashable, list[int]] = {}
        for n, (spec, files) in enumerate(prepared):
            key = (array_key(spec.request, job_labels(spec), self.squash),
                   files.stdout == files.stderr)  # fmt: skip
            groups.setdefault(key, []).append(n)
        size = self.squash.max_jobs
        return [
            members[i : i + size]
            for members in groups.values()
            for i in range(0, len(members), size)
        ]

    def _submit_array(self, members: Sequence[tuple[JobSpec, JobFiles]]) -> list[str]:
        """Submit jobs as one array; each element runs its own script, with its own outputs."""
        directory = self.work_dir / f"array.{uuid.uuid4().hex[:12]}"
        directory.mkdir(parents=True)
        apart = members[0][1].stdout != members[0][1].stderr
        for index, (_, files) in enumerate(members):
            # links, so the scheduler's per-index output pattern lands in each job's files
            (directory / f"{index}.dir").symlink_to(files.directory)
            (directory / f"{index}.out").symlink_to(files.stdout)
            if apart:
                (directory / f"{index}.err").symlink_to(files.stderr)
        script = directory / "array.sh"
        here = _sh(str(directory))
        element = f'"${{{self._ARRAY_INDEX}}}"'
        script.write_text(
            "#!/bin/sh\n"
            "# Written by seqera-core: element N of the array runs job N's own script.\n"
            f"cd {here}/{element}.dir || exit 1\n"
            f"exec {here}/{element}.dir/job.sh\n"
        )
        script.chmod(0o700)
        shared = dict(members[0][0].labels)
        for spec, _ in members[1:]:
            shared = {k: v for k, v in shared.items() if spec.labels.get(k) == v}
        first = attrs.evolve(members[0][0], labels=shared, workdir=None)
        array = JobFiles(directory, script, directory / "array.out", directory / "array.err")
        argv = self._array_argv(first, array, len(members), apart)
        delays = self.retry.delays()
        while True:
            result = self._run(argv, cwd=str(directory))
            if result.ok:
                base = self._parse_submit(result.stdout)
                break
            if result.returncode is None and (found := self._find_submitted(array)):
                base = found
                break
            delay = next(delays, None)
            if delay is None or not self._transient(result):
                raise SchedulerError("array submission failed", result)
            self._sleep(delay)
        return [self._element_id(base, i) for i in range(len(members))]

    def _submit_one(self, spec: JobSpec, files: JobFiles) -> str:
        argv = self._submit_argv(spec, files)
        delays = self.retry.delays()
        while True:
            result = self._run(argv, cwd=str(files.directory))
            if result.ok:
                return self._parse_submit(result.stdout)
            # A timed-out submission may have reached the scheduler: look before resending.
            if result.returncode is None and (found := self._find_submitted(files)):
                return found
            delay = next(delays, None)
            if delay is None or not self._transient(result):
                raise SchedulerError("submission failed", result)
            self._sleep(delay)

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Every handle's status: one listing call, plus one history call if any were missing.

        Raises:
            SchedulerError: the listing failed for a reason retrying does not cure.
        """
        ids = list(dict.fromkeys(h.native_id for h in handles if h.native_id not in self._finished))
        seen: dict[str, Observed] = {}
        unreachable: str | None = None
        if ids:
            try:
                seen = self._active(ids)
            except SchedulerError as exc:
                # Still failing after the retries: the scheduler is down or overloaded, so
                # say UNKNOWN (not finished: callers poll again). Anything else is a fault.
                if exc.result is None or not self._transient(exc.result):
                    raise
                unreachable = str(exc)
            missing = [i for i in ids if i not in seen]
            if missing and unreachable is None:
                with contextlib.suppress(SchedulerError):
                    seen.update(self._finished_lookup(missing))
        statuses: list[JobStatus] = []
        ended: dict[str, JobStatus] = {}
        for handle in handles:
            cached = self._finished.get(handle.native_id)
            if cached is not None:
                statuses.append(attrs.evolve(cached, handle=handle))
                continue
            status = self._status(handle, seen.get(handle.native_id), unreachable)
            if status.state.finished:
                ended[handle.native_id] = status
            statuses.append(status)
        if ended:
            # what they used: one accounting call for every job that ended in this poll
            for native_id, (wall, peak) in self._usage(list(ended)).items():
                if native_id in ended:
                    ended[native_id] = attrs.evolve(
                        ended[native_id], wall_seconds=wall, peak_memory_bytes=peak
                    )
            self._finished.update(ended)
            statuses = [
                attrs.evolve(ended[s.handle.native_id], handle=s.handle)
                if s.handle.native_id in ended
                else s
                for s in statuses
            ]
        return statuses

    def _status(
        self, handle: JobHandle, seen: Observed | None, unreachable: str | None
    ) -> JobStatus:
        native_id = handle.native_id
        if seen is None:
            code = self._exit_file_code(native_id)
            if code is not None:  # forgotten by the scheduler, but the script recorded its end
                seen = Observed(JobState.SUCCEEDED if code == 0 else JobState.FAILED, code)
            elif native_id in self._cancelled:
                seen = Observed(JobState.CANCELLED, reason="cancelled")
            else:
                why = unreachable or f"{self.name} does not know job {native_id} (yet)"
                return JobStatus(handle, JobState.UNKNOWN, reason=why)
        elif seen.state.finished and seen.exit_code is None:
            # The scheduler says it ended but not how (Torque through Slurm's wrappers).
            code = self._exit_file_code(native_id)
            if code is not None and seen.state in (JobState.SUCCEEDED, JobState.FAILED):
                state = JobState.SUCCEEDED if code == 0 else JobState.FAILED
                seen = attrs.evolve(seen, state=state, exit_code=code)
            elif native_id in self._cancelled and seen.state is JobState.FAILED:
                seen = attrs.evolve(seen, state=JobState.CANCELLED, reason="cancelled")
        if seen.state.finished:
            seen = self._settle(handle, seen)
        return JobStatus(
            handle,
            seen.state,
            exit_code=seen.exit_code,
            reason=seen.reason,
            out_of_memory=seen.out_of_memory,
            time_limit=seen.time_limit,
        )

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel every unfinished job with one command."""
        ids = list(dict.fromkeys(h.native_id for h in handles if h.native_id not in self._finished))
        if not ids:
            return
        result = self._run_retrying(self._cancel_argv(ids))
        if not result.ok and self._cancel_failed(result):
            raise SchedulerError("cancel failed", result)
        self._cancelled.update(ids)

    def logs(self, handle: JobHandle) -> str:
        """The job's stdout so far, then its stderr if kept apart."""
        paths = dict.fromkeys(p for p in (handle.stdout, handle.stderr) if p)
        return "".join(_read(Path(p)) for p in paths)

    # -- job directories and scripts -------------------------------------------------

    def _prepare(self, spec: JobSpec) -> JobFiles:
        return prepare_job(self.work_dir, spec)

    def _remember(self, native_id: str, directory: Path) -> None:
        self._dirs[native_id] = directory
        # A later process (a resumed workflow) finds the directory from the id alone.
        link = self.work_dir / "by-id" / _NOT_FILE_NAME.sub("_", native_id)
        with contextlib.suppress(OSError):
            link.parent.mkdir(exist_ok=True)
            link.unlink(missing_ok=True)
            link.symlink_to(directory)

    def _directory_of(self, native_id: str) -> Path | None:
        directory = self._dirs.get(native_id)
        if directory is None:
            link = self.work_dir / "by-id" / _NOT_FILE_NAME.sub("_", native_id)
            directory = link.resolve() if link.is_dir() else None
        return directory

    def _exit_file_code(self, native_id: str) -> int | None:
        directory = self._directory_of(native_id)
        if directory is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            return int((directory / EXIT_FILE).read_text().strip())
        return None


def prepare_job(work_dir: Path, spec: JobSpec) -> JobFiles:
    """A new directory for ``spec`` under ``work_dir``, with its script written."""
    stem = _NOT_FILE_NAME.sub("_", spec.name)[:60] or "job"
    directory = work_dir / f"{stem}.{uuid.uuid4().hex[:12]}"
    directory.mkdir(parents=True)
    base = Path(spec.workdir) if spec.workdir else directory
    stdout = base / spec.stdout if spec.stdout else directory / "stdout"
    stderr = base / spec.stderr if spec.stderr else directory / "stderr"
    files = JobFiles(directory, directory / "job.sh", stdout, stderr)
    files.script.write_text(job_script(spec, files))
    files.script.chmod(0o700)
    return files


def job_labels(spec: JobSpec) -> dict[str, str]:
    """The labels of a job: its request's, overridden by the spec's own."""
    return {**spec.request.labels, **spec.labels}


def _sh(value: str) -> str:
    # shlex.quote, but a newline becomes "$__seqera_nl": no line of the script can start
    # with a caller's text, so none can look like a #SBATCH/#PBS directive.
    if "\n" not in value:
        return shlex.quote(value)
    return '"$__seqera_nl"'.join(shlex.quote(part) for part in value.split("\n"))


def job_environment(spec: JobSpec) -> dict[str, str]:
    """The variables a job's script exports: its labels (as the local backend sets them),
    then its own environment."""
    variables = {env_name(k): v for k, v in job_labels(spec).items()}
    variables.update(spec.env)
    return variables


def job_script(spec: JobSpec, files: JobFiles) -> str:
    """The POSIX sh script for a job; every caller value is shell-quoted, none is in a comment."""
    if not spec.command:
        raise ValueError(f"job {spec.name!r} has an empty command")
    lines = [
        "#!/bin/sh",
        "# Written by seqera-core. Scheduler options are given on the command line, not here.",
        # Some submitters start jobs with an empty environment (Debian's Torque qsub -v).
        'export PATH="${PATH:-/usr/local/bin:/usr/bin:/bin}"',
        "__seqera_nl='",
        "'",
    ]
    for name, value in job_environment(spec).items():
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"environment variable name {name!r} is not valid in a shell")
        lines.append(f"export {name}={_sh(value)}")
    if spec.workdir:
        lines.append(f"cd {_sh(spec.workdir)} || exit 1")
    exit_file = _sh(str(files.exit_file))
    partial = _sh(f"{files.exit_file}.part")
    lines += [
        " ".join(_sh(arg) for arg in spec.command),
        "status=$?",
        # Written then renamed, so a reader never sees half a number.
        f"printf '%s\\n' \"$status\" > {partial} && mv {partial} {exit_file}",
        'exit "$status"',
        "",
    ]
    return "\n".join(lines)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
