"""Pick the store a history location names."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ResourceError
from ._protocol import History
from ._sqlite import SqliteHistory

__all__ = ["open_history"]

_POSTGRES_FORM = "a postgresql://user:password@host:port/database URL"


def open_history(location: str | Path) -> History:
    """A history at a path, ``sqlite:///absolute/path``, ``sqlite:relative``, ``:memory:``,
    or a shared one at ``postgresql://user@host:port/database`` (the ``postgresql`` extra).

    Raises:
        ResourceError: the location is a directory, a file that is not an SQLite
            database, an unknown URL scheme, or a PostgreSQL server that cannot be reached
            (the password is never shown).
    """
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        from ..redaction import redacted
        from ._postgres import PostgresHistory

        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ResourceError(
                "history", redacted(text), f"psycopg installed: seqera-core[postgresql] ({exc})"
            ) from None
        try:
            # Parsed before any connection: libpq's own reading (psycopg.conninfo), and
            # urllib's, which redaction uses; either message would quote the whole URL.
            psycopg.conninfo.conninfo_to_dict(text)
            urlsplit(text).port  # noqa: B018 - raises for a port that is not a number
        except (psycopg.Error, ValueError):
            raise ResourceError(
                "history",
                redacted(text),
                _POSTGRES_FORM + " (its host, port or brackets cannot be read)",
            ) from None
        return PostgresHistory(text)
    if text.startswith("sqlite:"):
        text = text.removeprefix("sqlite:").removeprefix("//")
        text = text or ":memory:"
    elif "://" in text:
        from ..redaction import redacted

        raise ResourceError(
            "history", redacted(text), "a file path, an sqlite:///path or a postgresql:// URL"
        )
    return SqliteHistory(text)
