"""What a batch scheduler supplies, and how its commands run: the base of ``_batch``.

:class:`BatchVerbs` holds a batch backend's settings and state, declares the verbs each
scheduler fills in (argv builders, output parsers, its listings) and runs commands through
``_commands`` (a timeout on each, backoff for transient failures of commands that are safe
to repeat). The life cycle built on these verbs (submit once, find, poll, retry by cause,
cancel) is :class:`~seqera_core.backends.batch._base.BatchBackend`'s.
"""

from __future__ import annotations

import abc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ...squash import SquashPolicy
from ..base import Backend, JobHandle, JobSpec, JobStatus, NoLookup
from ._commands import CommandResult, RetryPolicy, Runner, run_command
from ._exits import Observed
from ._jobdir import JobFiles, JobIndex
from ._recovery import Sent

__all__ = ["BatchVerbs"]


class BatchVerbs(Backend):
    """A batch scheduler's state and native verbs; :class:`BatchBackend` runs the life cycle.

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
    # The index of an array's first element (Grid Engine's -t starts at 1).
    _ARRAY_FIRST = 0

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
        self._index = JobIndex(self.work_dir)
        self._jobs: dict[str, Sent] = {}  # by the id submit() returned
        self._current: dict[str, str] = {}  # id submit() returned -> id of its latest run
        self._finished: dict[str, JobStatus] = {}
        self._cancelled: set[str] = set()

    # -- what each scheduler supplies ------------------------------------------------

    @abc.abstractmethod
    def _submit_argv(
        self, spec: JobSpec, files: JobFiles, key: str, exclude: Sequence[str] = ()
    ) -> list[str]:
        """The submission command for one job whose script is ``files.script``, carrying
        ``key`` where the scheduler keeps it and avoiding the ``exclude`` nodes if it can.

        Raises:
            UsageError: an option that cannot be used; it must name the field.
        """

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

    def _array_argv(
        self, spec: JobSpec, array: JobFiles, size: int, apart: bool, key: str
    ) -> list[str]:
        """One submission of an array of ``size`` elements shaped like ``spec``, running
        ``array.script``; element ``i``'s outputs are ``array.directory/<i>.out``/``.err``
        (one file when not ``apart``)."""
        raise NotImplementedError(f"{self.name} has no job arrays")

    def _element_id(self, base: str, index: int) -> str:
        """The native id of element ``index`` of the array ``base``."""
        raise NotImplementedError(f"{self.name} has no job arrays")

    def _keys(self) -> dict[str, str] | None:
        """Every submission key the scheduler lists, finished jobs it still shows too, to
        its job's id (an array's own id), with one call; None when it did not answer.

        Raises:
            NoLookup: this default, which cannot ask: a submission with an unknown
                outcome is then never sent again, and ``find`` says it cannot look up.
        """
        raise NoLookup(f"the {self.name} backend cannot list submission keys")

    def _forgotten_keys(self, since: float) -> dict[str, str]:
        """Submission keys of jobs submitted after ``since`` (epoch seconds) that the
        listing has forgotten, from a history source (one call); what it cannot tell is
        left out."""
        return {}

    def _settle(self, handle: JobHandle, seen: Observed) -> Observed:
        """Last scheduler-specific touch on a finished job (e.g. OOM from its log)."""
        return seen

    def _usage(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[float | None, int | None, float | None]]:
        """Wall seconds, peak memory bytes and CPU seconds of jobs that just finished (one
        call), from the scheduler's accounting where it keeps them; what it does not know
        is left out (None)."""
        return {}

    # -- commands --------------------------------------------------------------------

    def _run(self, argv: Sequence[str], *, cwd: str | None = None) -> CommandResult:
        self.calls[argv[0]] += 1
        return self._runner(list(argv), self.timeout, cwd, self._env)

    def _transient(self, result: CommandResult) -> bool:
        if result.returncode is None:
            return True
        text = f"{result.stdout}\n{result.stderr}".lower()
        return any(marker.lower() in text for marker in self._TRANSIENT)

    def query(self, argv: Sequence[str]) -> CommandResult:
        """Run a read-only command of the scheduler (``sinfo``, ``squeue``) as the backend
        runs its own: its environment and timeout, transient failures tried again, counted
        in :attr:`calls`. What a router asks about a queue's load."""
        return self._run_retrying(argv)

    def _run_retrying(self, argv: Sequence[str], *, cwd: str | None = None) -> CommandResult:
        """Run argv, retrying transient failures with backoff; returns the last result.

        Only for commands that are safe to repeat (listing, cancelling): never submission.
        """
        delays = self.retry.delays()
        while True:
            result = self._run(argv, cwd=cwd)
            if result.ok or not self._transient(result):
                return result
            delay = next(delays, None)
            if delay is None:
                return result
            self._sleep(delay)
