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


@pytest.fixture(autouse=True)
def _own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home of each test's own: every engine records its runs in
    ``~/.seqera/history.db`` by default, and no test may read what another (or the
    developer) left there. Tests that need another set ``HOME`` themselves."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
