"""Platform definitions (YAML) and validation of a request before anything is submitted.

A platform names its scheduler, its queues (partitions, or ECS instance types) with
their limits and cost rates, a default queue and resource multipliers. Sizes and
durations use seqera's explicit human units (``512 GiB``, ``7d``, ``168:00:00``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import yaml
from attrs import field, frozen

from .dialects.human import DURATION_FORMS, SIZE_FORMS, parse_duration, parse_size
from .errors import ResourceError
from .limits import apply_limits
from .models import ResourceRequest
from .units import GIB, ceil_scale, format_bytes, format_seconds

__all__ = ["SCHEDULERS", "CostRates", "Platform", "Queue", "ValidationReport", "load", "validate"]

SCHEDULERS = ("local", "slurm", "pbs", "torque", "ecs")


@frozen
class CostRates:
    """Prices per hour: per core, per GiB of memory, per GPU, and per instance (ECS)."""

    core_hour: float = 0.0
    gib_hour: float = 0.0
    gpu_hour: float = 0.0
    instance_hour: float = 0.0

    def hourly(self, cpus: float, memory: int, gpus: int) -> float:
        """The price of one hour of a job of this size."""
        return (
            cpus * self.core_hour
            + memory / GIB * self.gib_hour
            + gpus * self.gpu_hour
            + self.instance_hour
        )


@frozen
class Queue:
    """A queue, partition or instance type; ``None`` limits are unlimited."""

    name: str
    max_cpus: float | None = None
    max_memory: int | None = None
    max_walltime: int | None = None
    max_gpus: int | None = None
    cost: CostRates = field(factory=CostRates)
    # False: used only when a job names it (hugemem, debug queues), never picked by cost
    auto: bool = True


@frozen
class Multipliers:
    """Factors applied to every request before validation (e.g. memory 1.1 = +10%)."""

    cpus: float = 1.0
    memory: float = 1.0
    time: float = 1.0


@frozen
class Platform:
    """A scheduler and its queues, loaded from a platform definition."""

    name: str
    scheduler: str
    queues: tuple[Queue, ...]
    default_queue: str | None = None
    multipliers: Multipliers = field(factory=Multipliers)
    source: str = "<memory>"

    def queue(self, name: str) -> Queue | None:
        """The queue called ``name``, if any."""
        return next((q for q in self.queues if q.name == name), None)


@frozen
class ValidationReport:
    """What validation found: errors (never runs here), warnings, suggestions, the choice."""

    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    suggestions: tuple[str, ...]
    queue: str | None
    request: ResourceRequest
    hourly_cost: float | None = None
    estimated_cost: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the job can run on this platform."""
        return not self.errors


# --- loading -------------------------------------------------------------------------


def _number(where: str, value: Any, *, integer: bool = False) -> Any:
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ResourceError(where, value, f"{kind} >= 0")
    if integer and not isinstance(value, int):
        raise ResourceError(where, value, f"{kind} >= 0")
    return value


def _size(where: str, value: Any) -> int:
    if not isinstance(value, str):
        raise ResourceError(where, value, f"a size with a unit: {SIZE_FORMS}")
    return parse_size(value, where)


def _duration(where: str, value: Any) -> int:
    if not isinstance(value, str):
        raise ResourceError(where, value, f"a duration: {DURATION_FORMS}")
    return parse_duration(value, where)


def _mapping(where: str, value: Any, keys: set[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ResourceError(where, value, f"a mapping with keys {sorted(keys)}")
    unknown = set(value) - keys
    if unknown:
        name = sorted(unknown)[0]
        raise ResourceError(f"{where}.{name}", value[name], f"one of the keys {sorted(keys)}")
    return value


def _cost(where: str, value: Any, base: CostRates | None = None) -> CostRates:
    keys = {a.name for a in attrs.fields(CostRates)}
    data = _mapping(where, value, keys)
    rates = {k: float(_number(f"{where}.{k}", v)) for k, v in data.items()}
    return attrs.evolve(base or CostRates(), **rates)


def _queue(where: str, name: str, value: Any, cost: CostRates) -> Queue:
    keys = {"max_cpus", "max_memory", "max_walltime", "max_gpus", "cost", "auto"}
    data = _mapping(where, value, keys)

    def optional(key: str, read: Any) -> Any:
        return read(f"{where}.{key}", data[key]) if key in data else None

    auto = data.get("auto", True)
    if not isinstance(auto, bool):
        raise ResourceError(f"{where}.auto", auto, "true or false")
    return Queue(
        name=name,
        auto=auto,
        max_cpus=optional("max_cpus", _number),
        max_memory=optional("max_memory", _size),
        max_walltime=optional("max_walltime", _duration),
        max_gpus=optional("max_gpus", lambda w, v: _number(w, v, integer=True)),
        cost=_cost(f"{where}.cost", data.get("cost"), cost),
    )


def parse(document: Any, source: str = "<memory>") -> Platform:
    """A platform from a decoded YAML document; errors name ``source`` and the field path."""
    keys = {"name", "scheduler", "default_queue", "multipliers", "cost", "queues"}
    try:
        data = _mapping("platform", document, keys)
        scheduler = data.get("scheduler")
        if scheduler not in SCHEDULERS:
            raise ResourceError("scheduler", scheduler, f"one of {', '.join(SCHEDULERS)}")
        cost = _cost("cost", data.get("cost"))
        raw_queues = data.get("queues")
        if not isinstance(raw_queues, Mapping) or not raw_queues:
            raise ResourceError("queues", raw_queues, "a mapping of queue name to its limits")
        queues = tuple(
            _queue(f"queues.{name}", str(name), value, cost) for name, value in raw_queues.items()
        )
        default = data.get("default_queue")
        if default is not None and default not in raw_queues:
            raise ResourceError("default_queue", default, f"one of {', '.join(raw_queues)}")
        factors = _mapping("multipliers", data.get("multipliers"), {"cpus", "memory", "time"})
        multipliers = Multipliers(
            **{k: float(_number(f"multipliers.{k}", v)) for k, v in factors.items()}
        )
    except ResourceError as exc:
        raise ResourceError(f"{source}: {exc.field}", exc.value, exc.expected) from None
    return Platform(
        name=str(data.get("name") or Path(source).stem),
        scheduler=str(scheduler),
        queues=queues,
        default_queue=default,
        multipliers=multipliers,
        source=source,
    )


def load(path: str | Path) -> Platform:
    """Read a platform definition file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ResourceError("--platform", str(path), f"a readable YAML file ({exc})") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ResourceError(str(path), "", f"valid YAML ({exc})") from None
    return parse(document, str(path))


# --- validation ----------------------------------------------------------------------


def _show(dimension: str, value: float) -> str:
    if dimension == "memory":
        return format_bytes(int(value))
    if dimension == "time":
        return format_seconds(int(value))
    return f"{value:g}"


def _needs(request: ResourceRequest) -> dict[str, float]:
    gpus = request.accelerator.count if request.accelerator else 0
    needs = {"cpus": request.cpus or 0, "memory": request.memory or 0, "gpus": gpus}
    needs["time"] = request.time or 0
    return needs


_LIMITS = {"cpus": "max_cpus", "memory": "max_memory", "time": "max_walltime", "gpus": "max_gpus"}


def _too_big(queue: Queue, needs: Mapping[str, float]) -> dict[str, float]:
    over = {}
    for dimension, attribute in _LIMITS.items():
        limit = getattr(queue, attribute)
        if limit is not None and needs[dimension] > limit:
            over[dimension] = limit
    return over


def _scaled(platform: Platform, request: ResourceRequest) -> ResourceRequest:
    factors = platform.multipliers
    changes: dict[str, Any] = {}
    if request.cpus is not None and factors.cpus != 1:
        changes["cpus"] = math.ceil(request.cpus * factors.cpus * 1000) / 1000
    if request.memory is not None and factors.memory != 1:
        changes["memory"] = ceil_scale(request.memory, _fraction(factors.memory))
    if request.time is not None and factors.time != 1:
        changes["time"] = ceil_scale(request.time, _fraction(factors.time))
    return attrs.evolve(request, **changes) if changes else request


def _fraction(value: float) -> Fraction:
    return Fraction(str(value))  # 1.1 as written, not as the float 1.100000000000000088


def _hourly(queue: Queue, request: ResourceRequest) -> float:
    gpus = request.accelerator.count if request.accelerator else 0
    return queue.cost.hourly(request.cpus or 1, request.memory or 0, gpus)


def _nothing_fits(
    platform: Platform,
    needs: Mapping[str, float],
    fitting: list[Queue],
    errors: list[str],
    suggestions: list[str],
) -> None:
    # Compare with the queue the job would land in: the default, else the largest automatic.
    automatic = [q for q in platform.queues if q.auto] or list(platform.queues)
    default = platform.queue(platform.default_queue or "")
    for dimension, attribute in _LIMITS.items():
        target = default if default is not None and default.auto else None
        if target is None:
            limits = [getattr(q, attribute) for q in automatic]
            if any(v is None for v in limits):
                continue
            target = max(automatic, key=lambda q: getattr(q, attribute))
        limit = getattr(target, attribute)
        if limit is None or needs[dimension] <= limit:
            continue
        errors.append(
            f"{dimension} {_show(dimension, needs[dimension])} exceeds queue {target.name} "
            f"({_show(dimension, limit)})"
        )
        for other in fitting:
            allowed = getattr(other, attribute)
            allows = "no limit" if allowed is None else _show(dimension, allowed)
            suggestions.append(
                f"queue {other.name} allows {allows} for {dimension}: ask for it by name"
            )
    if not fitting:
        for dimension, attribute in _LIMITS.items():
            limits = [getattr(q, attribute) for q in platform.queues]
            if all(v is not None for v in limits) and needs[dimension] > max(limits):
                largest = max(platform.queues, key=lambda q: getattr(q, attribute))
                errors.append(
                    f"{dimension} {_show(dimension, needs[dimension])} exceeds every queue of "
                    f"{platform.name} (the largest, {largest.name}, allows "
                    f"{_show(dimension, getattr(largest, attribute))})"
                )
    if not errors:
        errors.append(f"no queue of {platform.name} fits cpus, memory, time and gpus together")


def validate(platform: Platform, request: ResourceRequest) -> ValidationReport:
    """Check ``request`` against ``platform``: errors, warnings, suggestions, queue and cost."""
    errors: list[str] = []
    warnings: list[str] = []
    suggestions: list[str] = []
    scaled = _scaled(platform, request)
    if scaled is not request:
        warnings.append(f"platform multipliers applied: {attrs.asdict(platform.multipliers)}")
    capped = apply_limits(scaled)
    warnings.extend(capped.notes)
    effective = capped.request
    needs = _needs(effective)
    fitting = [q for q in platform.queues if not _too_big(q, needs)]

    queue: Queue | None = None
    if effective.queue is not None:
        queue = platform.queue(effective.queue)
        if queue is None:
            names = ", ".join(q.name for q in platform.queues)
            errors.append(f"queue {effective.queue!r} does not exist on {platform.name}; "
                          f"its queues are {names}")  # fmt: skip
        else:
            for dimension, limit in _too_big(queue, needs).items():
                errors.append(
                    f"{dimension} {_show(dimension, needs[dimension])} exceeds queue "
                    f"{queue.name} ({_show(dimension, limit)})"
                )
                for other in fitting:
                    limit_there = getattr(other, _LIMITS[dimension])
                    allows = "no limit" if limit_there is None else _show(dimension, limit_there)
                    suggestions.append(f"queue {other.name} allows {allows} for {dimension}")
    elif not any(q.auto for q in fitting):
        _nothing_fits(platform, needs, fitting, errors, suggestions)
    else:
        order = {q.name: i for i, q in enumerate(platform.queues)}

        def rank(q: Queue) -> tuple[float, int, int]:
            return (_hourly(q, effective), q.name != platform.default_queue, order[q.name])

        automatic = [q for q in fitting if q.auto]
        queue = min(automatic, key=rank)
        if len(automatic) > 1:
            others = ", ".join(q.name for q in automatic if q is not queue)
            suggestions.append(f"queue {queue.name} is the cheapest that fits (also fit: {others})")

    if queue is not None and not errors:
        effective = attrs.evolve(effective, queue=queue.name)
        if effective.time is None and queue.max_walltime is not None:
            warnings.append(
                f"no time given: queue {queue.name}'s limit "
                f"{format_seconds(queue.max_walltime)} applies"
            )
    hourly = _hourly(queue, effective) if queue is not None and not errors else None
    total = None
    if hourly is not None and effective.time is not None:
        total = hourly * effective.time / 3600
    return ValidationReport(
        tuple(errors), tuple(warnings), tuple(dict.fromkeys(suggestions)),
        None if errors or queue is None else queue.name, effective, hourly, total,
    )  # fmt: skip
