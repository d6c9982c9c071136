"""The AWS Batch suite's emulator: the session's moto server (``aws``) with Batch in its
no-Docker mode, reset for every test."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator
    from tests.integration.ecs.emulator import Emulator


@pytest.fixture
def batch_emulator(aws: Emulator) -> BatchEmulator:
    """A clean emulator with job queue ``seqera`` (m5.large, r5.2xlarge, g4dn.xlarge)."""
    from tests.integration.awsbatch.emulator import BatchEmulator

    emulator = BatchEmulator(aws)
    emulator.reset()
    emulator.create_queue()
    return emulator
