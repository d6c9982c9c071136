"""Names of a package imported on first use (PEP 562).

A package whose public face re-exports names from heavy modules (boto3, the planner, YAML)
keeps ``import`` cheap by resolving each name when it is first asked for: the fork server
and ``seqera plan`` start in a tenth of a second less than with eager imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports"]


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``homes`` (name ->
    the private module defining it) when first looked up, and keeps it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)  # looked up once
        return value

    return __getattr__
