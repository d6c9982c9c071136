"""Fixtures the core's tests share: one real PostgreSQL server for the session
(tests/postgres.py), and an empty history of each kind over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from seqera_core.history import History, open_history

from ..conftest import require
from ..postgres import postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """One server for every test that asks (a module may start its own)."""
    with postgres_server() as server:
        yield server.url


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[History, str]]:
    """An empty history of each kind and where it is (a path or a URL)."""
    if request.param == "sqlite":
        location = str(tmp_path / "history.db")
    else:
        url = request.getfixturevalue("postgres_url")
        psycopg = require("psycopg", "the PostgreSQL history needs the postgresql extra")
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS summaries")
            admin.execute("CREATE DATABASE summaries")
        location = url.rsplit("/", 1)[0] + "/summaries"
    history = open_history(location)
    yield history, location
    history.close()
