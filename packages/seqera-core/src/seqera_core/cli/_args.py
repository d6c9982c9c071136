"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..errors import ResourceError

__all__ = ["key_value", "settings"]


def key_value(flag: str, text: str) -> tuple[str, str]:
    """``KEY=VALUE`` split once; a missing ``=`` or key is a ResourceError naming the flag."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ResourceError(flag, text, "KEY=VALUE, e.g. project=rnaseq")
    return key.strip(), value


def settings(**flags: Any) -> Config:
    """The merged configuration for this process, with the given command-line flags on top."""
    return load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)
