"""Signals while ``seqera run`` waits for its job: each one cancels the job."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["CANCELLING", "Signals", "Terminated", "interruptible"]


class Terminated(Exception):
    """A SIGTERM or SIGHUP, raised in the main thread to end the wait."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class Signals:
    """SIGINT, SIGTERM and SIGHUP while the job is waited for: each ends the wait (SIGINT
    as KeyboardInterrupt, the others as ``Terminated``) so the job is cancelled. Inside
    :meth:`held` (the submission) a signal is kept and raised once it is over: stopped
    half-way, the job would be with the scheduler and its handle not yet known here."""

    def __init__(self) -> None:
        self.holding = False
        self.kept: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.holding:
            self.kept = self.kept or signum
            return
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.kept is not None:
            self(self.kept, None)


# Closing the terminal (SIGHUP) cancels as Ctrl-C does: the job would otherwise run on
# with nobody to see its output or its end.
CANCELLING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interruptible() -> Iterator[Signals]:
    """Install :class:`Signals` for SIGINT, SIGTERM and SIGHUP (main thread only)."""
    handler = Signals()
    if threading.current_thread() is not threading.main_thread():
        yield handler
        return
    previous = {number: signal.signal(number, handler) for number in CANCELLING}
    try:
        yield handler
    finally:
        for number, before in previous.items():
            signal.signal(number, before)
