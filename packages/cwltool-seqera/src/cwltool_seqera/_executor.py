"""An executor that starts every ready job at once: the backend, not this machine, queues."""

from __future__ import annotations

import logging
import threading
from typing import Any

from cwltool.context import RuntimeContext
from cwltool.errors import WorkflowException
from cwltool.executors import JobExecutor
from cwltool.process import Process

from ._poller import JobPoller

__all__ = ["DispatchingExecutor"]


class DispatchingExecutor(JobExecutor):
    """Runs each job cwltool yields in its own thread, without counting local cores.

    Jobs block in :meth:`JobPoller.run` while one poller thread watches them all; a
    KeyboardInterrupt cancels every submitted job before it propagates.
    """

    def __init__(self, poller: JobPoller) -> None:
        super().__init__()
        self.poller = poller
        self.exceptions: list[WorkflowException] = []
        self._in_flight = 0
        self._tmpdir_lock = threading.Lock()

    def _runner(self, job: Any, context: RuntimeContext) -> None:
        try:
            job.run(context, self._tmpdir_lock)
        except WorkflowException as err:
            logging.getLogger("cwltool").error("Got workflow error: %s", err)
            self.exceptions.append(err)
        except Exception as err:  # recorded, then raised from the main thread
            logging.getLogger("cwltool").exception("Got workflow error: %s", err)
            wrapped = WorkflowException(str(err))
            wrapped.__cause__ = err
            self.exceptions.append(wrapped)
        finally:
            lock = context.workflow_eval_lock
            assert lock is not None
            with lock:
                self._in_flight -= 1
                lock.notify_all()

    def _start(self, job: Any, context: RuntimeContext) -> None:
        self._in_flight += 1
        thread = threading.Thread(target=self._runner, args=(job, context), daemon=True)
        thread.start()

    def _wait(self, context: RuntimeContext) -> None:
        assert context.workflow_eval_lock is not None
        context.workflow_eval_lock.wait(timeout=1)
        if self.exceptions:
            raise self.exceptions[0]

    def run_jobs(
        self,
        process: Process,
        job_order_object: Any,
        logger: logging.Logger,
        runtime_context: RuntimeContext,
    ) -> None:
        """Start every job as soon as cwltool yields it; wait only when none is ready."""
        lock = runtime_context.workflow_eval_lock
        if lock is None:
            raise WorkflowException("runtimeContext.workflow_eval_lock must not be None")
        try:
            with lock:
                for job in process.job(job_order_object, self.output_callback, runtime_context):
                    if job is not None:
                        outdir = getattr(job, "outdir", None)
                        if outdir is not None:
                            self.output_dirs.add(outdir)
                        self._start(job, runtime_context)
                    elif self._in_flight:
                        self._wait(runtime_context)
                    else:
                        logger.error("Workflow cannot make any more progress.")
                        break
                while self._in_flight:
                    self._wait(runtime_context)
        except BaseException:
            cancelled = self.poller.cancel_all()
            if cancelled:
                logger.warning("cancelled %d submitted job(s)", len(cancelled))
            raise
