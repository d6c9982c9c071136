"""What the history tests compare summaries with: every stored attempt read and folded,
and a history as the first release wrote it (the attempts' table alone)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from seqera_core.history import Fed, History, Summary, Totals, _sql
from seqera_core.history._tally import fold


def fold_every_row(history: History) -> tuple[Totals, dict[tuple[str, str], Summary]]:
    """What folding every stored attempt in order gives (the summaries kept as rows are
    written must hold it, and so must an older history's upgrade)."""
    totals, summaries = Totals(), dict[tuple[str, str], Summary]()
    after, fed = 0, list[Fed]()
    while batch := history.feed(after):
        fed += batch
        after = batch[-1].seq
    fold(totals, summaries, ((f.seq, f.record) for f in fed))
    return totals, summaries


def write_version_one(location: str, rows: Sequence[Sequence[Any]], dialect: str) -> None:
    """The first release's table at ``location``, holding ``rows`` as they are."""
    marks = ", ".join(("?" if dialect == "sqlite" else "%s") for _ in _sql.FIELDS)
    insert = f"INSERT INTO task_history ({_sql.COLUMNS}) VALUES ({marks})"
    if dialect == "sqlite":
        db = sqlite3.connect(location)
        db.executescript(_sql.schema("sqlite"))
        db.executemany(insert, rows)
        db.commit()
        db.close()
        return
    import psycopg

    with psycopg.connect(location, autocommit=True) as pg:
        pg.execute(_sql.schema("postgresql"))
        with pg.cursor() as cursor:
            cursor.executemany(insert, rows)
