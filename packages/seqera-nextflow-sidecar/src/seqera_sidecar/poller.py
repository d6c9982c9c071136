"""A supervised background loop: any exception ends one cycle, never the loop.

The dispatcher's poll cycle touches three things that fail on their own: the backend
(a scheduler restarting), its SQLite state and the history store (``database is
locked``, a dropped PostgreSQL connection). A failed cycle is logged, counted and retried
after a backoff that doubles up to ``max_backoff``; a thread that died anyway (an error
raised by the loop itself) is started again by :meth:`Supervisor.check`, which the
``/health`` endpoint calls. ``status()`` says whether the loop is healthy: it is
``degraded`` from the first failed cycle until one succeeds.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Supervisor", "redact"]

_log = logging.getLogger("seqera_sidecar")
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s]*@")
_PASSWORD = re.compile(r"(?i)(password\s*[=:]\s*)\S+")


def redact(text: str) -> str:
    """``text`` with URL userinfo and ``password=...`` values masked, cut to 300 characters."""
    return _PASSWORD.sub(r"\1***", _USERINFO.sub(r"\1***@", text))[:300]


class Supervisor:
    """Runs ``cycle()`` every ``interval`` seconds in a daemon thread, whatever it raises."""

    def __init__(
        self,
        name: str,
        cycle: Callable[[], object],
        *,
        interval: float,
        max_backoff: float = 30.0,
    ) -> None:
        self.name = name
        self.cycle = cycle
        self.interval = interval
        self.max_backoff = max_backoff
        self.failures = 0  # failed cycles since start
        self.restarts = 0  # threads started again after one died
        self.consecutive = 0
        self.last_error: str | None = None
        self.last_success: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread (again, if it died)."""
        with self._lock:
            if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            if self._thread is not None:
                self.restarts += 1
                _log.error("%s thread had died; started again", self.name)
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()

    def check(self) -> None:
        """Start the thread again if it died (called from ``/health``)."""
        if self._thread is not None:
            self.start()

    def _loop(self) -> None:
        delay = self.interval
        while not self._stop.wait(delay):
            try:
                self.cycle()
            except Exception as exc:
                self.failures += 1
                self.consecutive += 1
                self.last_error = f"{type(exc).__name__}: {redact(str(exc))}"
                _log.warning("%s cycle failed (%d in a row): %s", self.name, self.consecutive,
                             self.last_error)  # fmt: skip
                delay = min(self.interval * 2**self.consecutive, self.max_backoff)
                continue
            self.consecutive = 0
            self.last_success = time.time()
            delay = self.interval

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the cycle under way."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def status(self) -> dict[str, Any]:
        """``ok`` or ``degraded`` with the counts and the last error (secrets masked)."""
        alive = self._thread is not None and self._thread.is_alive()
        healthy = alive and self.consecutive == 0
        return {
            "state": "ok" if healthy else "degraded",
            "running": alive,
            "failures": self.failures,
            "consecutive_failures": self.consecutive,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "last_success": self.last_success,
        }
