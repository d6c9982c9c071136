"""Argument helpers shared by the subcommands."""

from __future__ import annotations

from ..errors import ResourceError

__all__ = ["key_value"]


def key_value(flag: str, text: str) -> tuple[str, str]:
    """``KEY=VALUE`` split once; a missing ``=`` or key is a ResourceError naming the flag."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ResourceError(flag, text, "KEY=VALUE, e.g. project=rnaseq")
    return key.strip(), value
