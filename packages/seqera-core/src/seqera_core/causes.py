"""Why a job ended without success: the same strings on every backend and in the history.

Backends set them on :attr:`~seqera_core.backends.base.JobStatus.cause`, the history keeps
them in its ``cause`` column and the report counts them. Strings, not an enum: they are
stored as they are and read by other processes (the sidecar, ``seqera report``). This
module imports nothing, so both the dispatch layer and the store can depend on it.
"""

from __future__ import annotations

__all__ = [
    "CANCELLED", "CAUSES", "NODE_FAILURE", "OTHER", "OUT_OF_MEMORY", "PREEMPTED", "TIME_LIMIT",
]  # fmt: skip

OUT_OF_MEMORY = "out_of_memory"  # killed for memory: the engine retries with more
TIME_LIMIT = "time_limit"  # killed at its time limit: the engine retries with more
NODE_FAILURE = "node_failure"  # its node died: batch backends resubmit it elsewhere
PREEMPTED = "preempted"  # evicted for other work: batch backends resubmit it as is
CANCELLED = "cancelled"  # cancelled by a user, an administrator or the engine
OTHER = "other"  # anything else: the command's own non-zero exit, a launch failure
CAUSES = (OUT_OF_MEMORY, TIME_LIMIT, NODE_FAILURE, PREEMPTED, CANCELLED, OTHER)
