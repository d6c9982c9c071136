"""The routing backend's decisions, read back from the history's ``route`` column.

The routing backend keeps one decision per job (``seqera_core.backends.route.Choice.record``,
JSON): the objective, the backend chosen, the reason in words, and every candidate's
estimates (start and run time in seconds from the decision, cost) or why it could not
run the job. :func:`parse` reads one back into a :class:`Reason`; :func:`phrase` says it
in a few words for the report ("finishes first", "the only backend that could run it
(slurm: too many cores)"), so tasks routed for the same reason count together, and
:func:`summarise` counts them. A text that is not such a decision (a row written before
routing, another writer's) reads as ``None``: the task is counted as "not routed" and
adds no estimate. The reason's own words are never shown: their numbers are written with
``%g`` (``1.3e+03 s``), which the report never prints.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from attrs import field, frozen

__all__ = ["Counted", "Reason", "parse", "phrase", "short", "summarise"]

# The refusals of ``seqera_core.backends.route.refusal`` in a few words each.
_SHORT = (
    (re.compile(r"^rule .* is pinned to "), "pinned"),
    (re.compile(r"cores asked"), "too many cores"),
    (re.compile(r"GiB asked"), "too much memory"),
    (re.compile(r"GPUs asked"), "no GPU"),
    (re.compile(r"s asked, its time limit is"), "over its time limit"),
    (re.compile(r"^no shared file system"), "no shared files"),
    (re.compile(r"^has no queue"), "no such queue"),
)
_LONGEST = 80


def _floats(values: Iterable[tuple[str, float]] | dict[str, float]) -> dict[str, float]:
    return dict(values)


def _texts(values: Iterable[tuple[str, str]] | dict[str, str]) -> dict[str, str]:
    return dict(values)


@frozen
class Reason:
    """One routing decision: the ``objective``, the ``chosen`` backend, each able
    candidate's estimated ``start`` and ``finish`` (seconds from the decision) and
    ``cost``, and why each other one could not run it."""

    objective: str
    chosen: str
    start: dict[str, float] = field(factory=dict, converter=_floats)
    finish: dict[str, float] = field(factory=dict, converter=_floats)
    cost: dict[str, float] = field(factory=dict, converter=_floats)
    refused: dict[str, str] = field(factory=dict, converter=_texts)


@frozen
class Counted:
    """How many ``jobs`` were routed for one ``reason`` (:func:`phrase`)."""

    jobs: int
    reason: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def parse(text: str) -> Reason | None:
    """The decision ``text`` records, or None when it is not a routing decision."""
    try:
        decision = json.loads(text)
    except ValueError:
        return None
    if not isinstance(decision, dict):
        return None
    objective, chosen, options = (decision.get(k) for k in ("objective", "backend", "options"))
    if not (isinstance(objective, str) and isinstance(chosen, str) and isinstance(options, list)):
        return None
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    cost: dict[str, float] = {}
    refused: dict[str, str] = {}
    for option in options:
        backend = option.get("backend") if isinstance(option, dict) else None
        if not isinstance(backend, str):
            return None
        if isinstance(why := option.get("refused"), str):
            refused[backend] = why
            continue
        begins, runtime = _number(option.get("start")), _number(option.get("runtime"))
        if begins is None or runtime is None:  # it would never start there: it could not run it
            refused[backend] = "never starts"
            continue
        start[backend], finish[backend] = begins, begins + runtime
        if (price := _number(option.get("cost"))) is not None:
            cost[backend] = price
    if chosen not in finish:
        return None
    return Reason(objective, chosen, start=start, finish=finish, cost=cost, refused=refused)


def short(why: str) -> str:
    """A refusal in a few words (``too many cores``), or as written (at most 80 characters)
    when not a known one (a scheduler that did not answer)."""
    for pattern, words in _SHORT:
        if pattern.search(why):
            return words
    return why if len(why) <= _LONGEST else why[: _LONGEST - 3] + "..."


def phrase(reason: Reason | None) -> str:
    """The decision in a few words, the same for every task routed for the same reason."""
    if reason is None:
        return "not routed"
    pinned = [b for b, why in reason.refused.items() if short(why) == "pinned"]
    unable = sorted(f"{b}: {short(why)}" for b, why in reason.refused.items()
                    if b not in pinned)  # fmt: skip
    others = (set(reason.finish) | set(reason.cost)) - {reason.chosen}
    if pinned:
        words = "pinned to it by the user"
    elif not others:
        words = "the only backend that could run it"
    elif reason.objective == "finish":
        words = "finishes first"
    elif reason.objective == "cost" or reason.cost.get(reason.chosen) == min(reason.cost.values()):
        words = "cheapest"
    else:  # cost-per-hour-saved, and not the cheapest: the time it saves is worth its cost
        words = "sooner, worth its cost"
    if unable:
        words += f" ({'; '.join(unable)})"
    return words


def summarise(reasons: Iterable[Reason | None]) -> tuple[Counted, ...]:
    """How many jobs were routed for each reason (:func:`phrase`), most first."""
    counted = Counter(phrase(r) for r in reasons)
    ordered = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Counted(n, words) for words, n in ordered)
