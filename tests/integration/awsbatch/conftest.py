"""moto's server with AWS Batch in its no-Docker mode, once per session, reset for every test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.conftest import require

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator
    from tests.integration.ecs.emulator import Emulator


@pytest.fixture(scope="session")
def moto_batch_server() -> Iterator[Emulator]:
    """moto's server on 127.0.0.1 (the ECS tests' recipe), stopped at the end."""
    require("moto.server", "the AWS Batch tests run against the moto[server] emulator")
    from tests.integration.ecs.emulator import moto_ecs

    with moto_ecs() as emulator:
        yield emulator


@pytest.fixture
def batch_emulator(moto_batch_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> BatchEmulator:
    """A clean emulator with job queue ``seqera`` (m5.large, r5.2xlarge, g4dn.xlarge)."""
    from tests.integration.awsbatch.emulator import BatchEmulator

    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in moto_batch_server.env.items():
        monkeypatch.setenv(name, value)
    emulator = BatchEmulator(moto_batch_server)
    emulator.reset()
    emulator.create_queue()
    return emulator
