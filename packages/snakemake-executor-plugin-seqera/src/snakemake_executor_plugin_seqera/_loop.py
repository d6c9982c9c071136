"""The status loop's ends: parking when the interpreter exits, waking an idle wait."""

from __future__ import annotations

import asyncio
import threading

__all__ = ["exiting", "resolve"]


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
