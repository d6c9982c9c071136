"""The scale at which the right-sizer prices a retry: what a typical task uses."""

from __future__ import annotations

__all__ = ["Budget"]


class Budget:
    """What a typical task uses (weight x use), over every process of a history: the scale
    at which a retry is priced, so retries go where they save the most waste."""

    __slots__ = ("runs", "total")

    def __init__(self) -> None:
        self.runs = 0
        self.total = 0.0

    def add(self, usage: float, weight: float = 1.0) -> None:
        """Count one successful run."""
        self.runs += 1
        self.total += usage * weight

    @property
    def mean(self) -> float:
        """The mean weight x use of a run (0 before any)."""
        return self.total / self.runs if self.runs else 0.0
