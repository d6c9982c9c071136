"""Named points where a test may kill this process, to prove nothing is lost or run twice.

``SEQERA_SIDECAR_CRASH_AT=<point>:<n>`` makes the ``n``-th pass through ``point`` send
SIGKILL to this process (no clean-up, as ``kill -9`` or the OOM killer would). Points:
``row-written`` (task rows stored, backend not called yet) and ``submitted`` (the backend
took the jobs, their handles not stored yet). Unset, a point costs one dict lookup.
The fault suite (``tests/faults/test_sidecar_crash.py``) is its only user.
"""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["crash_point"]

_SPEC = os.environ.get("SEQERA_SIDECAR_CRASH_AT", "")
_POINT, _, _COUNT = _SPEC.partition(":")
_passes: dict[str, int] = {}
_lock = threading.Lock()


def crash_point(name: str) -> None:
    """SIGKILL this process if the test asked for it here, now."""
    if name != _POINT:
        return
    with _lock:
        _passes[name] = _passes.get(name, 0) + 1
        if str(_passes[name]) == (_COUNT or "1"):
            os.kill(os.getpid(), signal.SIGKILL)
