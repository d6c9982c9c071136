"""The local machine's form: whole cores, bytes and seconds, as the local backend reserves them."""

from __future__ import annotations

import math

from ..models import ResourceRequest, Submission

__all__ = ["submission"]


def submission(request: ResourceRequest) -> Submission:
    """The reservation the local backend would make for a request."""
    request = request.on_one_machine("local")  # several tasks: their cores together
    native: dict[str, object] = {}
    if request.cpus is not None:
        native["cpus"] = math.ceil(request.cpus)
    if request.memory is not None:
        native["memory_bytes"] = request.memory
    if request.time is not None:
        native["time_seconds"] = request.time
    notes: tuple[str, ...] = ()
    if request.accelerator is not None:
        notes = ("the local backend does not reserve accelerators",)
    return Submission("local", (), native, notes)
