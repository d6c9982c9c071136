"""What the history tests compare summaries with: every stored attempt read and folded."""

from __future__ import annotations

from seqera_core.history import Fed, History, Summary, Totals
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
