"""The routing backend's reasons, read back from the history's ``route`` column.

The routing backend writes one reason per job (``seqera_core.backends.route.choose``):

    finish: local finish in 1.5 s (slurm 6.2 s; ecs cannot: no shared file system, ...)
    cost: local cost 0 (slurm 0.01)

that is the objective, the backend chosen with its estimate, then every other candidate
with its own estimate (seconds from submission to the end seen for ``finish``, money for
``cost``) or why it could not run the job. :func:`parse` reads one back into a
:class:`Reason`; :func:`phrase` says it in a few words for the report ("finishes first",
"the only backend that could run it (slurm: too many cores)"), so tasks routed for the
same reason count together, and :func:`summarise` counts them. A text that is not such a
reason (a row written before routing, another writer's) reads as ``None``: the task is
counted as "not routed" and adds no estimate. The raw text is never shown: its numbers
are written with ``%g`` (``1.3e+03 s``), which the report never prints.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from attrs import field, frozen

__all__ = ["Counted", "Reason", "parse", "phrase", "short", "summarise"]

_HEAD = re.compile(
    r"(?P<objective>finish|cost): (?P<chosen>\S+) "
    r"(?:finish in (?P<finish>never|\S+ s)|cost (?P<cost>\S+))(?: \((?P<others>.*)\))?",
    re.DOTALL,
)
# One other candidate: "slurm 6.2 s", "slurm never", "slurm 0.01", "ecs cannot: why".
_OTHER = re.compile(r"(?P<backend>\S+) (?:cannot: (?P<why>.*)|(?P<value>never|\S+ s|\S+))",
                    re.DOTALL)  # fmt: skip
# Where one candidate's verdict ends and the next begins: "; " before "name verdict". A
# refusal's own words may hold "; " (a scheduler's error): with the backends' names known,
# only one of them starts a verdict.
_VERDICT = r"; (?={name} (?:cannot: |never(?:;|$)|[-+0-9.eEinfa]+(?: s)?(?:;|$)))"
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
    candidate's ``finish`` estimate (seconds from submission to the end seen; the chosen
    one's too under ``finish``) or ``cost``, and why each other one could not run it."""

    objective: str
    chosen: str
    finish: dict[str, float] = field(factory=dict, converter=_floats)
    cost: dict[str, float] = field(factory=dict, converter=_floats)
    refused: dict[str, str] = field(factory=dict, converter=_texts)


@frozen
class Counted:
    """How many ``jobs`` were routed for one ``reason`` (:func:`phrase`)."""

    jobs: int
    reason: str


def _seconds(text: str) -> float | None:
    """``6.2 s`` as 6.2; ``never`` (the job would never start there) as infinity."""
    if text == "never":
        return math.inf
    return _number(text.removesuffix(" s"))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _splitter(names: Iterable[str]) -> re.Pattern[str]:
    known = sorted(set(names), key=lambda n: (-len(n), n))
    name = "(?:" + "|".join(re.escape(n) for n in known) + ")" if known else r"\S+"
    return re.compile(_VERDICT.format(name=name))


def parse(text: str, names: Iterable[str] = ()) -> Reason | None:
    """The decision ``text`` records, or None when it is not a routing reason.

    ``names``: the backends that may be candidates (the registry's, those of the
    selection), so a refusal holding "; " is not read as two verdicts; empty: any word.
    """
    head = _HEAD.fullmatch(text.strip())
    if head is None:
        return None
    objective, chosen = head["objective"], head["chosen"]
    values: dict[str, float] = {}
    refused: dict[str, str] = {}
    own = _seconds(head["finish"]) if head["finish"] else _number(head["cost"])
    if own is None or own == math.inf:
        return None
    values[chosen] = own
    for item in _splitter(names).split(head["others"]) if head["others"] else ():
        other = _OTHER.fullmatch(item)
        if other is None:
            return None
        backend = other["backend"]
        if other["why"] is not None:
            refused[backend] = other["why"]
            continue
        value = (_seconds if objective == "finish" else _number)(other["value"])
        if value is None:
            return None
        if value == math.inf:  # it would never start there: it could not have run it
            refused[backend] = "never starts"
        else:
            values[backend] = value
    if objective == "finish":
        return Reason(objective, chosen, finish=values, refused=refused)
    return Reason(objective, chosen, cost=values, refused=refused)


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
    else:
        words = "finishes first" if reason.objective == "finish" else "cheapest"
    if unable:
        words += f" ({'; '.join(unable)})"
    return words


def summarise(reasons: Iterable[Reason | None]) -> tuple[Counted, ...]:
    """How many jobs were routed for each reason (:func:`phrase`), most first."""
    counted = Counter(phrase(r) for r in reasons)
    ordered = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Counted(n, words) for words, n in ordered)
