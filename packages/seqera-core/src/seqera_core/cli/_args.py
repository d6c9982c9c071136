"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..config import Config, key_value, load_config

__all__ = ["key_value", "settings"]


def settings(**flags: Any) -> Config:
    """The merged configuration for this process, with the given command-line flags on top."""
    return load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)
