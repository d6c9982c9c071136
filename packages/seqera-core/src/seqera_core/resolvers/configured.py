"""The resolver chain a user's configuration asks for: installed plugins, then HTTP."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .base import Resolver, discover
from .http import HttpResolver

__all__ = ["close_all", "configured"]


def configured(config: Mapping[str, Any] | Any) -> list[Resolver]:
    """Every enabled installed resolver, plus an :class:`HttpResolver` when ``resolver.url``
    is set (``config`` is a :class:`~seqera_core.config.Config`). The caller closes the
    HTTP resolver (``close()``) when done."""
    found = discover()
    url = config.get("resolver.url")
    if url:
        token, timeout = config.get("resolver.token"), config.get("resolver.timeout", 5.0)
        found.append(HttpResolver(url, token=token, timeout=timeout))
    return found


def close_all(resolvers: Iterable[Resolver]) -> None:
    """Close every resolver (each releases what it holds; most hold nothing)."""
    for resolver in resolvers:
        resolver.close()
