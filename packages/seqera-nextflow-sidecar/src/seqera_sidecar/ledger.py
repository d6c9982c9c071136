"""What the per-task config asked with, so the weblog records a task as it was sized.

The per-task closures (:mod:`.pertask`) send a task's input size as the bytes of its
staged local files; the weblog reports ``rchar`` (every byte the task read), which is
what the history records as its input size otherwise. A model fitted on one and asked
with the other mis-sizes, so a closure that sends an input size also sends the task's
``hash`` as Nextflow's trace writes it (``ab/cdef12``: ``TaskRun.hashLog``) in the label
``nextflow/task-hash``, and when that task's ``process_completed`` event arrives its
record takes the input size it was asked with. The resources it was given are the
trace's own (``memory``, ``cpus``, ``time``: ``TaskConfig`` after any ``resourceLimits``),
so a resolved task is learned at what it actually got. Kept in memory, the newest
:data:`LIMIT` tasks; after a restart a task is recorded with ``rchar`` again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs

from seqera_core.history import TaskRecord
from seqera_core.models import ResourceRequest

__all__ = ["HASH_LABEL", "LIMIT", "Asked"]

HASH_LABEL = "nextflow/task-hash"
LIMIT = 100_000


class Asked:
    """Input sizes asked with, by task hash; thread-safe, bounded."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def note(self, request: ResourceRequest) -> None:
        """Remember the input size of a request that names its task."""
        key = request.labels.get(HASH_LABEL)
        if not key or request.input_bytes is None:
            return
        with self._lock:
            self._sizes[key] = request.input_bytes
            self._sizes.move_to_end(key)
            while len(self._sizes) > self._limit:
                self._sizes.popitem(last=False)

    def applied(self, document: Any, record: TaskRecord | None) -> TaskRecord | None:
        """``record`` with the input size its task was asked with, when one was noted."""
        if record is None or not isinstance(document, Mapping):
            return record
        trace = document.get("trace")
        key = trace.get("hash") if isinstance(trace, Mapping) else None
        if not isinstance(key, str):
            return record
        with self._lock:
            size = self._sizes.get(key)
        return record if size is None else attrs.evolve(record, input_bytes=size)
