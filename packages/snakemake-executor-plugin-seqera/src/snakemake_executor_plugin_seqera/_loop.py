"""The status loop's ends: parking when the interpreter exits, waking an idle wait."""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["IdleWait", "exiting", "resolve"]


def exiting() -> bool:
    """Whether the interpreter has begun to exit, so the status loop must stop for good.

    With nothing to be done Snakemake builds the executor but never calls its
    ``shutdown()`` (``Workflow.execute`` returns before ``JobScheduler.schedule``), and
    the base class's status loop (a daemon thread, ``RemoteExecutor._wait_for_jobs``)
    is still running when the interpreter exits. Past ``threading._shutdown`` the
    ``concurrent.futures`` exit hook has stopped every pool's workers, the plugin
    interface's lock pool among them (``utils.async_lock``), so the loop's next turn
    fails with ``cannot schedule new futures after shutdown``, which the base class
    prints. A loop that parks instead is frozen with its daemon thread, silently.
    """
    return bool(getattr(threading, "_SHUTTING_DOWN", False)) or not (
        threading.main_thread().is_alive()
    )


def resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # a timeout may have cancelled it
        waiter.set_result(None)


class IdleWait:
    """The status loop's wait while no job is active, cut short from any thread (a
    submission, or the end)."""

    def __init__(self) -> None:
        # Set by a submission and at shutdown: the loop then stops waiting for jobs that
        # are not there.
        self._woken = threading.Event()
        # The loop's idle wait, resolved from any thread by wake().
        self._idle: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None

    def clear(self) -> None:
        """Before the loop looks at its jobs: a wake-up after the look is not lost."""
        self._woken.clear()

    async def wait(self, seconds: float) -> None:
        """Wait in the event loop itself, not in a worker thread (``asyncio.to_thread``):
        ``concurrent.futures``' exit hook joins every worker, so a wait in one held the
        interpreter's exit up to ``seconds`` (see :func:`exiting`)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._idle = (loop, waiter)
        try:
            if not self._woken.is_set():  # a wake-up before _idle was set is not lost
                await asyncio.wait_for(waiter, seconds)
        except TimeoutError:
            pass
        finally:
            self._idle = None

    def wake(self) -> None:
        """Cut the idle wait short: any thread."""
        self._woken.set()
        idle = self._idle
        if idle is not None:
            loop, waiter = idle
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(resolve, waiter)
