"""Which jobs a batch backend may put together: one array call, or one squashed allocation.

Three modes. ``off`` submits every job on its own. ``array`` sends jobs of the same shape
that are ready together as one ``sbatch --array`` / ``qsub -J``. ``squash`` runs many
small jobs inside one allocation through a launcher, and submits those allocations as
arrays where it can.

Jobs share an array or an allocation only when everything the scheduler would see as a
different kind of job is equal: queue (partition), account, container, pass-through
options (QoS, constraint, extra flags), and the value of the ``key`` label or resource,
which a user sets to keep unrelated jobs apart. An array also needs the same resources.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from typing import Any

import attrs
from attrs import field, frozen

from .dialects._values import LARGEST
from .dialects.human import DURATION_FORMS, parse_duration
from .errors import ResourceError
from .models import ResourceRequest

__all__ = ["SLACK", "Node", "SquashMode", "SquashPolicy", "array_key", "share_key", "unsquashable"]

# What a squashed allocation asks for beyond its jobs' summed time: the launcher's
# start-up and the margin it keeps before the allocation's end.
SLACK = 60


@frozen
class Node:
    """The largest node of a queue as its scheduler reports it: what one squashed
    allocation can get at most. ``memory`` in bytes, None when not reported."""

    cpus: int
    memory: int | None = None


class SquashMode(enum.Enum):
    """How much a backend puts together."""

    OFF = "off"
    ARRAY = "array"
    SQUASH = "squash"


def _mode(value: Any) -> SquashMode:
    if isinstance(value, SquashMode):
        return value
    try:
        return SquashMode(str(value).strip().lower())
    except ValueError:
        raise ResourceError(
            "squash.mode", value, "one of " + ", ".join(m.value for m in SquashMode)
        ) from None


def _at_least(name: str, minimum: int) -> Any:
    def check(_: Any, attribute: Any, value: Any) -> None:
        # At most LARGEST: a larger count has no float, and packing divides by it.
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= LARGEST:
            expected = f"a whole number >= {minimum}, at most {LARGEST}"
            raise ResourceError(f"squash.{name}", value, expected)

    return check


def _cpus(_: Any, attribute: Any, value: Any) -> None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LARGEST
    ):
        raise ResourceError(
            "squash.cpus", value, f"a whole number of cores >= 1, at most {LARGEST}"
        )


@frozen
class SquashPolicy:
    """What may go together, and how big a squashed allocation may get.

    ``max_jobs`` caps the jobs of one array call and of one allocation; ``max_time`` is
    the longest allocation (seconds); ``cpus`` sizes an allocation (default: the summed
    cores of its jobs, at most the largest node of its queue where the scheduler reports
    one, else its largest job's; see ``backends/squash/_plan.py``); ``key`` names the
    label or resource whose value keeps jobs apart.
    """

    mode: SquashMode = field(default=SquashMode.OFF, converter=_mode)
    max_jobs: int = field(default=100, validator=_at_least("max_jobs", 1))
    max_time: int = field(default=3600, validator=_at_least("max_time", 60))
    cpus: int | None = field(default=None, validator=_cpus)
    key: str = "squash_key"

    @property
    def arrays(self) -> bool:
        """Whether jobs of one shape go out as one array call."""
        return self.mode is not SquashMode.OFF

    def merged(self, overrides: Mapping[str, Any], where: str = "squash") -> SquashPolicy:
        """This policy with the fields ``overrides`` sets (a config's ``squash.*`` keys)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if not given:
            return self
        base = {"mode": self.mode.value, "max_jobs": self.max_jobs, "cpus": self.cpus}
        base["key"] = self.key
        parsed = SquashPolicy.parse({**base, **given}, where)
        if "max_time" not in given:
            parsed = attrs.evolve(parsed, max_time=self.max_time)
        return parsed

    @classmethod
    def parse(cls, value: Any, where: str = "squash") -> SquashPolicy:
        """A policy from a platform definition's or a config's ``squash`` mapping.

        A bare string is the mode; ``max_time`` is a duration (``'2h'``, ``'01:00:00'``).
        """
        if value is None:
            return cls()
        if isinstance(value, str | SquashMode):
            return cls(mode=value)
        if not isinstance(value, Mapping):
            raise ResourceError(where, value, "a mode (off, array, squash) or a mapping")
        known = {"mode", "max_jobs", "max_time", "cpus", "key"}
        unknown = [k for k in value if k not in known]
        if unknown:
            key = min(unknown, key=str)  # YAML keys need not be strings: look up the key itself
            expected = "one of " + ", ".join(sorted(known))
            raise ResourceError(f"{where}.{key}", value[key], expected)
        options = dict(value)
        if "max_time" in options:
            # a bare number is refused, as for a queue's max_walltime: minutes or seconds?
            if not isinstance(options["max_time"], str):
                raise ResourceError(f"{where}.max_time", options["max_time"], DURATION_FORMS)
            options["max_time"] = parse_duration(options["max_time"], f"{where}.max_time")
        if "key" in options and not isinstance(options["key"], str):
            raise ResourceError(f"{where}.key", options["key"], "a label or resource name")
        for name in ("max_jobs", "cpus"):
            if name in options and options[name] is not None:
                options[name] = _whole_number(f"{where}.{name}", options[name])
        return cls(**options)


def _whole_number(where: str, value: Any) -> Any:
    # YAML and JSON give 8.0 for 8; a fraction stays as it is for the validator to name.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    text = value.strip() if isinstance(value, str) else ""
    # From an environment variable or a quoted YAML value. A string longer than LARGEST
    # stays text for the validator to name: past 4,300 digits int() raises ValueError.
    if text.isascii() and text.isdigit() and len(text.lstrip("0")) <= len(str(LARGEST)):
        return int(text)
    return value


def unsquashable(request: ResourceRequest, policy: SquashPolicy) -> str | None:
    """Why a job with ``request`` runs as its own scheduler job, or None if it can share."""
    if request.time is None:
        return "it has no time limit, so whether it fits an allocation is unknown"
    if request.time + SLACK > policy.max_time:
        return (
            f"its time limit ({request.time} s) and the launcher's margin ({SLACK} s) "
            f"exceed squash.max_time ({policy.max_time} s)"
        )
    if request.accelerator is not None:
        return "it asks for GPUs"
    if request.multi_task:
        # its tasks are laid out by the scheduler (srun, mpiexec): a launcher slot is one
        return "it is a multi-task (MPI) job"
    if request.machine_type is not None:
        return "it names a machine type"
    cpus = request.cpus or 1.0
    if policy.cpus is not None and cpus > policy.cpus:
        return f"it asks for {cpus:g} cores, more than squash.cpus ({policy.cpus})"
    return None


def _key_value(request: ResourceRequest, labels: Mapping[str, str], key: str) -> str | None:
    return labels.get(key) or request.labels.get(key) or request.extra.get(key)


def share_key(
    request: ResourceRequest, labels: Mapping[str, str], policy: SquashPolicy
) -> Hashable:
    """What must be equal for two jobs to share an allocation."""
    return (
        request.queue,
        request.account,
        request.container,
        tuple(sorted(request.extra.items())),
        _key_value(request, labels, policy.key),
    )


def array_key(
    request: ResourceRequest, labels: Mapping[str, str], policy: SquashPolicy
) -> Hashable:
    """What must be equal for two jobs to go out as elements of one array."""
    return (
        share_key(request, labels, policy),
        request.cpus,
        request.memory,
        request.disk,
        request.time,
        request.accelerator,
        request.machine_type,
    )
