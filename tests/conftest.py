"""Shared test helpers: importing an oracle or a real component, strictly under CI."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(module: str, why: str) -> ModuleType:
    """Import ``module``; skip with a reason on a developer machine, fail under CI."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not importable ({exc}): {why}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
