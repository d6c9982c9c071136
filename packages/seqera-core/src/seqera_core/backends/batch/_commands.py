"""Running one scheduler command: argv without a shell, a timeout, bounded backoff.

Every command has a timeout, after which its whole process group is killed (wrappers
such as Debian's Torque ``qsub`` spawn children that would keep the pipes open). A
command that timed out has ``returncode`` None: whether it did its work is unknown,
which the submit path treats differently from a refusal (see ``_batch``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence

from attrs import field, frozen

__all__ = ["CommandResult", "RetryPolicy", "Runner", "run_command"]


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
