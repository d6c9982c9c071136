"""Fixtures of the resolver tests."""

from __future__ import annotations

import pytest

from ._contract import Contract


@pytest.fixture(scope="session")
def contract() -> Contract:
    """The parsed contract (shared/openapi/seqera-sidecar.yaml)."""
    return Contract()
