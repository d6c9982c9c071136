"""Resuming a run that died: each run's ledger of what it sent, and adoption by key.

:class:`Ledger` (``_ledger``) keeps, under an engine's work directory, the submission keys
each run sent and saw end, locked while the run lives; :class:`Resume` (``_resume``)
turns the ledgers of dead runs into :class:`Orphan` jobs found through the backend, and
adopts them instead of sending copies. :func:`job_key` makes a key from what a job is.
"""

from __future__ import annotations

from ._ledger import Entry, Ledger
from ._resume import Orphan, Resume, job_key

__all__ = [
    "Entry",
    "Ledger",
    "Orphan",
    "Resume",
    "job_key",
]
