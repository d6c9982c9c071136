"""The moto ECS emulator, once per session, reset for every test; boto3 reaches it by env."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.conftest import require

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Emulator]:
    """moto's server on 127.0.0.1, stopped at the end of the session."""
    require("moto.server", "the ECS tests run against the moto[server] emulator")
    from tests.integration.ecs.emulator import moto_ecs

    with moto_ecs() as emulator:
        yield emulator


@pytest.fixture
def emulator(moto_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """A clean emulator with cluster ``seqera`` (managed instances provider, 200 GiB)."""
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in moto_server.env.items():
        monkeypatch.setenv(name, value)
    moto_server.reset()
    moto_server.create_cluster()
    return moto_server
