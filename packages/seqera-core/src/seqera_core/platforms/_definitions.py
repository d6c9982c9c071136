"""Platform definitions: a scheduler, its queues with limits and cost rates, read from YAML.

A platform names its scheduler, its queues (partitions, or ECS instance types) with
their limits and cost rates, a default queue and resource multipliers. Sizes and
durations use seqera's explicit human units (``512 GiB``, ``7d``, ``168:00:00``); a bare
number where a size or duration belongs is refused, never guessed. Checking a request
against a platform is :func:`validate` (from :mod:`seqera_core.platforms._validation`).

```yaml
name: example-hpc
scheduler: slurm                 # slurm | pbs | torque | sge | lsf | ecs | batch | local
default_queue: normal
multipliers: {memory: +10%}      # or 1.1; never below 1
cost: {core_hour: 0.02, gib_hour: 0.004}   # defaults for every queue
queues:
  normal: {max_cpus: 128, max_memory: 512 GiB, max_walltime: 7d, max_gpus: 0}
  hugemem: {max_memory: 1.5 TiB, auto: false, cost: {gib_hour: 0.008}}
instances:                       # optional: replaces the planner's instance catalogue
  m7i.large: {vcpus: 2, memory: 8 GiB, price: 0.1008}
settings: {memory: m_mem_free, pe: mpi}   # optional: the backend's site settings (sge)
route:                           # optional: route each job between backends (see below)
  backends: [local, slurm, ecs]
  objective: cost-per-hour-saved # finish | cost | cost-per-hour-saved
  max_cost_per_hour_saved: 2.0
  pin: {align: slurm}
  overhead: {ecs: 90}
```

``settings`` are keywords of the scheduler's backend that describe the site rather than a
run (Grid Engine's memory resource and parallel environment); the config's section of
the same backend (``sge.*``) overrides them.

``route:`` holds the routing backend's keys (the config's ``route.*``: ``backends``,
``objective``, ``max_cost_per_hour_saved``, ``pin``, ``overhead``, ``runtime``,
``staged``), checked as the config checks them; with it, a run whose backend nobody chose
routes (``backend: route``), and each ``route.*`` key the config sets overrides it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
from attrs import field, frozen

from ..config import KEYS, checked_value
from ..dialects._values import document_number as _number
from ..dialects.human import DURATION_FORMS, SIZE_FORMS, parse_duration, parse_size
from ..documents import read_document
from ..errors import ResourceError
from ..planning.catalogue import Catalogue, InstanceType, parse_instances
from ..squash import SquashPolicy
from ..units import GIB

__all__ = [
    "SCHEDULERS",
    "CostRates",
    "Multipliers",
    "Platform",
    "Queue",
    "load",
    "parse",
    "read_document",
]

SCHEDULERS = ("local", "slurm", "pbs", "torque", "sge", "lsf", "ecs", "batch")
_MULTIPLIER_FORMS = "a factor >= 1 such as 1.1, or a percentage such as +10%"
_PERCENT = re.compile(r"\+(\d+(?:\.\d+)?) ?%", re.ASCII)  # "10%" alone could mean either way


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
    """Factors applied to every request before validation (memory 1.1 is +10%); each >= 1."""

    cpus: float = 1.0
    memory: float = 1.0
    time: float = 1.0

    def factor(self, name: str) -> Fraction:
        """The factor for ``name`` as written (1.1 is 11/10, not the float 1.10000000000000009)."""
        return Fraction(str(getattr(self, name)))


@frozen
class Platform:
    """A scheduler and its queues, loaded from a platform definition."""

    name: str
    scheduler: str
    queues: tuple[Queue, ...]
    default_queue: str | None = None
    multipliers: Multipliers = field(factory=Multipliers)
    source: str = "<memory>"
    # the planner's instance catalogue when the platform names one (empty: use the default)
    instances: tuple[InstanceType, ...] = ()
    squash: SquashPolicy = field(factory=SquashPolicy)
    # the backend's site settings (Grid Engine: memory, pe, gpu): text values by name
    settings: Mapping[str, str] = field(factory=dict)
    # the routing backend's settings (the config's route.* keys without the prefix)
    route: Mapping[str, Any] = field(factory=dict)

    def queue(self, name: str) -> Queue | None:
        """The queue called ``name``, if any."""
        return next((q for q in self.queues if q.name == name), None)

    def catalogue(self) -> Catalogue | None:
        """The planner's instance types: ``instances:``, else an ECS platform's queues
        (each an instance type with vCPUs, memory and an instance price), else None."""
        if self.instances:
            return Catalogue(self.instances, source=self.source)
        if self.scheduler != "ecs":
            return None
        types = []
        for q in self.queues:
            if q.max_cpus is None or q.max_memory is None:
                return None  # not a fixed machine size
            types.append(
                InstanceType(
                    q.name, q.max_cpus, q.max_memory, q.cost.instance_hour, q.max_gpus or 0
                )
            )
        return Catalogue(tuple(types), source=self.source)


# --- YAML ----------------------------------------------------------------------------


# --- reading the document ------------------------------------------------------------


def _size(where: str, value: Any) -> int:
    if not isinstance(value, str):
        raise ResourceError(where, value, f"a size with a unit: {SIZE_FORMS}")
    return parse_size(value, where)


def _duration(where: str, value: Any) -> int:
    if not isinstance(value, str):
        raise ResourceError(where, value, f"a duration: {DURATION_FORMS}")
    return parse_duration(value, where)


def _multiplier(where: str, value: Any) -> float:
    if isinstance(value, str) and (match := _PERCENT.fullmatch(value.strip())):
        return float(1 + Fraction(match.group(1)) / 100)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ResourceError(where, value, _MULTIPLIER_FORMS)
    if value < 1:  # a task never receives less than it asked for
        raise ResourceError(where, value, _MULTIPLIER_FORMS)
    return float(value)


def _mapping(where: str, value: Any, keys: set[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ResourceError(where, value, f"a mapping with keys {', '.join(sorted(keys))}")
    unknown = set(value) - keys
    if unknown:
        name = min(unknown, key=str)  # YAML keys need not be strings: look up the key itself
        expected = f"one of the keys {', '.join(sorted(keys))}"
        raise ResourceError(f"{where}.{name}", value[name], expected)
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
        max_cpus=optional("max_cpus", lambda w, v: _number(w, v, positive=True)),
        max_memory=optional("max_memory", _size),
        max_walltime=optional("max_walltime", _duration),
        max_gpus=optional("max_gpus", lambda w, v: _number(w, v, integer=True)),
        cost=_cost(f"{where}.cost", data.get("cost"), cost),
    )


def _platform(data: Mapping[str, Any], source: str) -> Platform:
    scheduler = data.get("scheduler")
    if scheduler not in SCHEDULERS:
        raise ResourceError("scheduler", scheduler, f"one of {', '.join(SCHEDULERS)}")
    cost = _cost("cost", data.get("cost"))
    raw_queues = data.get("queues")
    if not isinstance(raw_queues, Mapping) or not raw_queues:
        raise ResourceError("queues", raw_queues, "a mapping of queue names to their limits")
    queues = tuple(
        _queue(f"queues.{name}", str(name), value, cost) for name, value in raw_queues.items()
    )
    names = [q.name for q in queues]
    default = data.get("default_queue")
    if default is not None and default not in names:
        raise ResourceError("default_queue", default, f"one of {', '.join(names)}")
    factors = _mapping("multipliers", data.get("multipliers"), {"cpus", "memory", "time"})
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise ResourceError("name", name, "a string")
    return Platform(
        name=name or Path(source).stem,
        scheduler=scheduler,
        queues=queues,
        default_queue=default,
        multipliers=Multipliers(
            **{k: _multiplier(f"multipliers.{k}", v) for k, v in factors.items()}
        ),
        source=source,
        instances=(parse_instances("instances", data["instances"]) if "instances" in data else ()),
        squash=SquashPolicy.parse(data.get("squash")),
        settings=_settings(data.get("settings")),
        route=_route(data.get("route")),
    )


def _route(value: Any) -> dict[str, Any]:
    keys = {k.removeprefix("route.") for k in KEYS if k.startswith("route.")}
    data = _mapping("route", value, keys)
    return {str(k): checked_value(f"route.{k}", v) for k, v in data.items()}


def _settings(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ResourceError("settings", value, "a mapping of setting names to text values")
    return dict(value)


def parse(document: Any, source: str = "<memory>") -> Platform:
    """A platform from a decoded YAML document; errors name ``source`` and the field path."""
    keys = {
        "name",
        "scheduler",
        "default_queue",
        "multipliers",
        "cost",
        "queues",
        "instances",
        "squash",
        "settings",
        "route",
    }
    try:
        return _platform(_mapping("platform", document, keys), source)
    except ResourceError as exc:
        raise ResourceError(f"{source}: {exc.field}", exc.value, exc.expected) from None


def load(path: str | Path) -> Platform:
    """Read a platform definition file; any fault is a ResourceError naming the file."""
    return parse(read_document(path), str(path))
