"""The right-sizer: what a task will use, learned online per process from the history.

``UsageModel`` (``_model``) fits each process's window of runs against its input
(``_window``, ``_fit``, ``_neighbours``), prices a margin from the pipeline's records
(``_margin``) and a retry at what a typical task uses (``_budget``), borrows strength
from the pipeline's other processes while a process has few runs (``_prior``), sizes
retries after a kill (``_retry``), falls back to the plain per-process maximum where the
model has wasted more (``_net``), and keeps tools that size themselves from their
allocation at what they were seen to need (``_guard``).
"""

from ._guard import read_source, references_memory, tracked_at, tracks_allocation
from ._model import KEPT_FAILURES, Budget, UsageModel
from ._prior import Pool

__all__ = [
    "KEPT_FAILURES",
    "Budget",
    "Pool",
    "UsageModel",
    "read_source",
    "references_memory",
    "tracked_at",
    "tracks_allocation",
]
