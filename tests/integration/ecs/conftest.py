"""The ECS suite's emulator: the session's moto server (``aws``), reset for every test."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator


@pytest.fixture
def emulator(aws: Emulator) -> Emulator:
    """A clean emulator with cluster ``seqera`` (managed instances provider, 200 GiB)."""
    aws.reset()
    aws.create_cluster()
    return aws
