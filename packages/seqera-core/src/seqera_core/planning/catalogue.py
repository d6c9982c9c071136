"""Instance catalogues: machine types with vCPUs, memory, GPUs and an hourly price.

A catalogue file is YAML (JSON is YAML too); memory takes seqera's human sizes:

```yaml
date: 2026-11
source: AWS EC2 on-demand pricing, us-east-1, Linux
instances:
  m7i.large:  {vcpus: 2, memory: 8 GiB, price: 0.1008}
  g5.2xlarge: {vcpus: 8, memory: 32 GiB, gpus: 1, price: 1.212}
```

A platform definition may carry the same ``instances:`` mapping; it then replaces the
catalogue (see :mod:`seqera_core.platforms`). :func:`default` is the dated EC2 example
shipped inside the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from attrs import frozen

from ..dialects._values import document_number as _number
from ..dialects.human import SIZE_FORMS, parse_size
from ..documents import read_document
from ..errors import ResourceError

__all__ = [
    "DEFAULT_CATALOGUE",
    "Catalogue",
    "InstanceType",
    "default",
    "load",
    "parse",
    "parse_instances",
    "parse_memory",
]

DEFAULT_CATALOGUE = "ec2-us-east-1-2026-11.yaml"
_INSTANCE_KEYS = ("vcpus", "memory", "gpus", "price")
_LONGEST_SIZE = 64


@frozen
class InstanceType:
    """A machine type: vCPUs, memory in bytes, GPUs and its price per hour."""

    name: str
    vcpus: float
    memory: int
    price: float
    gpus: int = 0

    def covers(self, cpus: float, memory: int, gpus: int = 0) -> bool:
        """Whether one empty instance of this type can hold a job of this size."""
        return self.vcpus >= cpus and self.memory >= memory and self.gpus >= gpus


@frozen
class Catalogue:
    """The instance types a planner may allocate, in the order the file lists them."""

    types: tuple[InstanceType, ...]
    source: str = "<memory>"
    date: str | None = None
    description: str | None = None

    def type(self, name: str) -> InstanceType | None:
        """The type called ``name``, if the catalogue has it."""
        return next((t for t in self.types if t.name == name), None)

    def cheapest(self, cpus: float, memory: int, gpus: int = 0) -> InstanceType | None:
        """The cheapest type that covers the job (the first listed among equal prices)."""
        fitting = [t for t in self.types if t.covers(cpus, memory, gpus)]
        return min(fitting, key=lambda t: t.price) if fitting else None


def parse_memory(where: str, value: Any) -> int:
    """Bytes from a human size (``8 GiB``, ``4 GB``) or a whole number of bytes.

    A string longer than any real size is refused before it is parsed: Python will not
    turn more than 4,300 digits into a number (``sys.get_int_max_str_digits``), and the
    error would otherwise be a ValueError from deep inside the parser.
    """
    if isinstance(value, str):
        if len(value) > _LONGEST_SIZE:
            shown = f"{value[:20]}... ({len(value)} characters)"
            raise ResourceError(where, shown, f"a size ({SIZE_FORMS}) of at most 64 characters")
        return parse_size(value, where)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value  # bytes
    raise ResourceError(where, value, f"a size ({SIZE_FORMS}) or a whole number of bytes > 0")


def _instance(where: str, name: str, value: Any) -> InstanceType:
    if not isinstance(value, Mapping):
        raise ResourceError(where, value, "a mapping with keys vcpus, memory, price, gpus")
    unknown = set(value) - set(_INSTANCE_KEYS)
    if unknown:
        key = min(unknown, key=str)  # YAML keys need not be strings: look up the key itself
        expected = f"one of the keys {', '.join(_INSTANCE_KEYS)}"
        raise ResourceError(f"{where}.{key}", value[key], expected)
    for key in ("vcpus", "memory", "price"):
        if key not in value:
            raise ResourceError(f"{where}.{key}", None, f"a value for {key} (it is required)")
    return InstanceType(
        name=name,
        vcpus=_number(f"{where}.vcpus", value["vcpus"], positive=True),
        memory=parse_memory(f"{where}.memory", value["memory"]),
        price=float(_number(f"{where}.price", value["price"], positive=False)),
        gpus=_number(f"{where}.gpus", value.get("gpus", 0), integer=True, positive=False),
    )


def parse_instances(where: str, value: Any) -> tuple[InstanceType, ...]:
    """Instance types from a mapping of names to ``{vcpus, memory, price, gpus}``."""
    if not isinstance(value, Mapping) or not value:
        raise ResourceError(where, value, "a mapping of instance type names to their sizes")
    return tuple(_instance(f"{where}.{name}", str(name), v) for name, v in value.items())


def _text(where: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if hasattr(value, "isoformat"):  # YAML reads 2026-11-01 as a date
        return str(value.isoformat())
    raise ResourceError(where, value, "a string")


def parse(document: Any, source: str = "<memory>") -> Catalogue:
    """A catalogue from a decoded document; errors name ``source`` and the field path."""
    try:
        if not isinstance(document, Mapping):
            raise ResourceError("catalogue", document, "a mapping with an instances: section")
        unknown = set(document) - {"date", "source", "instances"}
        if unknown:
            key = min(unknown, key=str)
            raise ResourceError(str(key), document[key], "date, source or instances")
        return Catalogue(
            types=parse_instances("instances", document.get("instances")),
            source=source,
            date=_text("date", document.get("date")),
            description=_text("source", document.get("source")),
        )
    except ResourceError as exc:
        raise ResourceError(f"{source}: {exc.field}", exc.value, exc.expected) from None


def load(path: str | Path, flag: str = "--catalogue") -> Catalogue:
    """Read a catalogue file (YAML or JSON); any fault is a ResourceError naming the file."""

    return parse(read_document(path, flag), str(path))


def default() -> Catalogue:
    """The dated EC2 example catalogue shipped with seqera-core."""
    text = resources.files("seqera_core").joinpath("data", DEFAULT_CATALOGUE).read_text()
    return parse(yaml.safe_load(text), f"seqera_core/data/{DEFAULT_CATALOGUE}")
