"""``seqera run``: one command on any backend; waits, streams its output, exits with its code.

A job accepted runs once even if ``seqera run`` is killed (``kill -9``) while it runs: the
job carries a submission key made from what it is (its directory, command, name and
attempt), and each run keeps a ledger of it (``seqera_core.resume``) under
``~/.seqera/run/<key>/``, where the local backend keeps its records too; the same
command run again adopts the job the dead run left (waits for it and streams its output,
or reports how it ended) instead of starting a second copy. A job whose end a run saw,
a failed one and a cancelled one run again when asked again.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from ..backends.base import Backend, JobHandle, JobSpec, JobState, JobStatus
from ..dialects.human import DURATION_FORMS, SIZE_FORMS, parse_duration, parse_size
from ..errors import ResourceError, UsageError
from ..models import ResourceRequest
from ..outcomes import cause, failure_message
from ..resume import job_key
from ..session import Finished, Session
from ..units import format_bytes, format_seconds
from ._args import key_value, settings
from ._interrupt import CANCELLING, Terminated, interruptible
from ._runflags import EPILOG, add_arguments, request_of
from ._tail import Tail

__all__ = [
    "DURATION_FORMS",
    "SIZE_FORMS",
    "add_parser",
    "parse_duration",
    "parse_size",
    "run",
]

# Where each command's runs keep their ledgers (and the local backend its job records).
_RESUME_HOME = "~/.seqera/run"
_LOGDIR_PREFIX = "seqera-run-"  # a local job's logs, in a temporary directory per run
# The longest pause between polls: local polls are free, a scheduler's are not.
_MAX_DELAY = {"local": 0.25}
# The engine task key of the one job a run submits (its attempts share it).
_TASK = "job"
# A nameless job's process is its command, up to this many characters.
_PROCESS_MAX = 120
_BATCH_MAX_DELAY = 5.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera run``."""
    parser = commands.add_parser(
        "run",
        help="run one command on a backend and wait for it, like sbatch --wait",
        description=(
            "Validate the resources, submit COMMAND to a backend, stream its output while it "
            "runs and exit with its exit code."
        ),
        usage="seqera run [options] -- COMMAND [ARGS...]",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(run=run)
    add_arguments(parser)


def _wait(backend: Backend, handle: JobHandle, tails: list[Tail], limit: float) -> JobStatus:
    delay, ceiling = 0.02, _MAX_DELAY.get(backend.name, _BATCH_MAX_DELAY)
    deadline = time.monotonic() + limit
    while True:
        (status,) = backend.poll([handle])
        for tail in tails:
            tail.pump()
        if status.state.finished or time.monotonic() >= deadline:
            return status
        time.sleep(delay)
        delay = min(delay * 1.5, ceiling)


def _exit_status(status: JobStatus) -> int:
    if status.state is JobState.SUCCEEDED:
        return 0
    if status.exit_code:
        return status.exit_code
    return 1  # failed or cancelled without a code: still a failure


def _report(status: JobStatus, request: ResourceRequest, verbose: bool) -> None:
    job = f"job {status.handle.native_id}"
    # The command's own non-zero exit speaks for itself; anything else is said.
    if cause(status) not in (None, "other") or (status.exit_code or 0) >= 126:
        _say(failure_message(status, request))
    if verbose:
        wall = "?" if status.wall_seconds is None else f"{status.wall_seconds:.2f} s"
        peak = status.peak_memory_bytes
        memory = "?" if peak is None else format_bytes(peak)
        _say(f"{job} {status.state.value}, exit {status.exit_code}, wall {wall}, peak {memory}")


def _say(message: str) -> None:
    sys.stdout.flush()
    print(f"seqera run: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Submit, wait and stream; returns the job's exit status. Invalid input raises UsageError."""
    command = list(args.argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ResourceError("COMMAND", command, "a command after --, e.g. seqera run -- echo hi")
    if args.workdir is not None and not os.path.isdir(args.workdir):
        # Said now, by name: a job started in a missing directory fails with exit 127.
        raise ResourceError("--workdir", args.workdir, "an existing directory")
    ecs = dict(key_value("--ecs", text) for text in args.ecs)
    batch = dict(key_value("--batch", text) for text in args.batch)
    config = settings(
        backend=args.backend,
        platform=args.platform,
        history=args.history,
        **{f"ecs.{key}": value for key, value in ecs.items()},
        **{f"batch.{key}": value for key, value in batch.items()},
    )
    request = request_of(args)
    workdir = os.path.abspath(args.workdir or os.getcwd())
    # the same command in the same place: one key, one ledger directory, for all its runs
    what = job_key("seqera-run", workdir, command, args.name)
    resume = Path(os.path.expanduser(_RESUME_HOME)) / what
    with tempfile.TemporaryDirectory(prefix=_LOGDIR_PREFIX) as logdir:
        session = Session(
            config,
            "seqera-run",
            label_prefix="seqera",
            metadata={"engine": "seqera"},
            run_id=f"seqera-run-{os.getpid()}-{time.time_ns()}",
            # A batch scheduler's job scripts go to its own default place (visible to the
            # nodes); locally the logs are ours and go with the run.
            work_dir=lambda backend: None if backend.batch else logdir,
            ledger=resume / "runs",
        )
        with session:
            if session.records_history:
                # The right-sizer learns per process: the job's name, else the whole command
                # (two scripts of one interpreter are not one process).
                request = attrs.evolve(request, process=args.name or _process(command))
            try:
                return _run(session, request, command, args, logdir)
            except UsageError as exc:
                flag = session.entry.section  # the settings a flag of this command gives
                if flag in ("ecs", "batch") and f"{flag}." in str(exc):
                    raise UsageError(f"{exc} (or --{flag} KEY=VALUE)") from None
                raise
            finally:
                session.close()
                _tidy(resume)


def _tidy(resume: Path) -> None:
    """Remove the command's ledger directory once nothing is left in it (a run that
    saw its job end deletes its ledger; the local backend its records)."""
    for directory in (*sorted(resume.iterdir(), reverse=True), resume) if resume.is_dir() else ():
        with contextlib.suppress(OSError):  # not empty: kept for the next run
            directory.rmdir()


def _process(command: list[str]) -> str:
    """The process a nameless job is learned as: its whole command, shortened with a hash
    of the rest past what a report's row can show."""
    text = shlex.join(command)
    if len(text) <= _PROCESS_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{text[: _PROCESS_MAX - 14]}… {digest}"


def _run(
    session: Session,
    request: ResourceRequest,
    command: list[str],
    args: argparse.Namespace,
    logdir: str,
) -> int:
    while True:
        status = _attempt(session, request, command, args, logdir)
        if not isinstance(status, JobStatus):
            return status
        if status.state is JobState.SUCCEEDED or not session.rescue(_TASK):
            return _exit_status(status)
        # Never a gate: the right-sizer gave it less than it declared and it ran out.
        _say(
            "the right-sizer gave it less than it asked for and it ran out: sent again "
            "at once at the size it asked for"
        )


def _attempt(
    session: Session,
    request: ResourceRequest,
    command: list[str],
    args: argparse.Namespace,
    logdir: str,
) -> JobStatus | int:
    prepared = session.prepare(request, task=_TASK)
    report = prepared.report
    for line in report.warnings if report else ():
        print(f"seqera run: warning: {line}", file=sys.stderr)
    for line in report.suggestions if report else ():
        print(f"seqera run: suggestion: {line}", file=sys.stderr)
    if report is not None and report.errors:
        path = session.config.get("platform")
        raise UsageError(f"the job cannot run on platform {path}: " + "; ".join(report.errors))
    request = attrs.evolve(prepared.request, labels=prepared.labels)
    resolution = prepared.resolution
    if args.verbose and resolution is not None and resolution.resolver != "declared":
        _say(f"sized by {resolution.resolver}: {_sizes(request)}")
    if request.accelerator is not None and session.backend_name == "local":
        # Said, not refused: a workstation user may know the GPU is there and free.
        _say(
            f"warning: --gpus {args.gpus}: the local backend neither reserves nor isolates "
            "accelerators; the job sees whatever devices this machine has"
        )
    for note in prepared.notes:
        if note.startswith("retry after"):
            _say(f"{note}: {_sizes(request)}")
    status = _submit_and_wait(session, command, request, args, logdir)
    if isinstance(status, JobStatus):
        session.record([Finished(request, status, task_id=_TASK)])
    return status


def _sizes(request: ResourceRequest) -> str:
    memory = "?" if request.memory is None else format_bytes(request.memory)
    seconds = "?" if request.time is None else format_seconds(request.time)
    return f"memory {memory}, time {seconds}"


def _submit_and_wait(
    session: Session,
    command: list[str],
    request: ResourceRequest,
    args: argparse.Namespace,
    logdir: str,
) -> JobStatus | int:
    """The finished job's status, or the exit status after an interruption."""
    backend = session.backend
    local = backend.name == "local"
    workdir = os.path.abspath(args.workdir or os.getcwd())
    # base.JobSpec's bare `converter=tuple` leaves mypy an unsolved TypeVar for `command`.
    argv: Any = tuple(command)
    spec = JobSpec(
        args.name or Path(command[0]).name,
        argv,
        request,
        workdir=workdir,
        labels=request.labels,
        # Locally stdout and stderr stay apart so each reaches our own stream.
        stdout=os.path.join(logdir, "stdout") if local else None,
        stderr=os.path.join(logdir, "stderr") if local else None,
        key=job_key("seqera-run", workdir, command, args.name, request.attempt),
    )
    handle: JobHandle | None = None
    tails: list[Tail] = []
    with interruptible() as signals:
        try:
            with signals.held():
                # a job a killed run of this command left is adopted, not sent again
                (handle,) = session.submit([spec])
            if args.verbose:
                # under routing, the backend chosen and why
                from ..backends.route import said

                why = f" ({said(handle.route)})" if handle.route else ""
                _say(f"submitted job {handle.native_id} to {handle.backend}{why}")
            tails.append(Tail(handle.stdout, sys.stdout))
            if handle.stderr != handle.stdout:
                tails.append(Tail(handle.stderr, sys.stderr))
            status = _wait(backend, handle, tails, limit=float("inf"))
        except (KeyboardInterrupt, Terminated) as exc:
            signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
            return _cancel(session, handle, tails, signum)
    if handle.stdout is None:
        sys.stdout.write(backend.logs(handle))
    _report(status, request, args.verbose)
    _tidy_dead(handle, logdir)
    return status


def _tidy_dead(handle: JobHandle, logdir: str) -> None:
    """Remove the log directory of the killed run whose job this run adopted (a
    ``seqera-run-*`` temporary directory it could not remove), once the job has ended."""
    ours = Path(logdir)
    for log in {handle.stdout, handle.stderr} - {None}:
        directory = Path(str(log)).parent
        if (
            directory != ours
            and directory.parent == ours.parent
            and directory.name.startswith(_LOGDIR_PREFIX)
        ):
            shutil.rmtree(directory, ignore_errors=True)


def _cancel(session: Session, handle: JobHandle | None, tails: list[Tail], signum: int) -> int:
    backend = session.backend
    # A second Ctrl-C must not abandon a job half-way through its kill grace.
    if threading.current_thread() is threading.main_thread():
        for number in CANCELLING:
            signal.signal(number, signal.SIG_IGN)
    if handle is not None:
        _say(f"interrupted: cancelling job {handle.native_id}")
        session.cancel([handle])
        grace = backend.kill_grace
        status = _wait(backend, handle, tails, limit=grace + 10.0)
        if not status.state.finished:
            _say(f"job {handle.native_id} is still {status.state.value} after cancelling")
    return 128 + signum
