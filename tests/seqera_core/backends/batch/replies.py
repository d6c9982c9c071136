"""A command runner for batch backends that replays recorded replies (the schedulers whose
daemons cannot run here, and argv checks): one list per program, the last reply repeats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from seqera_core.backends.batch._base import CommandResult

__all__ = ["Replies", "result"]


class Replies:
    """Answers each program from a list of replies (the last one repeats), recording argv."""

    def __init__(self, replies: Mapping[str, Sequence[CommandResult]]) -> None:
        self.replies = {name: list(items) for name, items in replies.items()}
        self.argvs: list[list[str]] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, cwd: str | None, env: Mapping[str, str] | None
    ) -> CommandResult:
        self.argvs.append(list(argv))
        queue = self.replies[argv[0]]
        return queue.pop(0) if len(queue) > 1 else queue[0]


def result(stdout: str = "", stderr: str = "", code: int = 0) -> CommandResult:
    return CommandResult(["x"], code, stdout, stderr)
