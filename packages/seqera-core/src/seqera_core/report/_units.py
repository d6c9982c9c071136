"""Units people read: one per figure, chosen from its values; plain decimals, never ``1e-05``.

A figure (a table column, a chart's axis, a line of text) picks the largest unit its
largest value reaches at least once of (``pick``), so its numbers read between about 1
and 1,000: memory areas from MB·s to TB·h, durations from seconds to days, CPU from
core-seconds to core-days, sizes from MiB to TiB. Numbers are written in fixed point
(``number``): whole above 100, one decimal above 10, two below, and three significant
decimals at most below 1, so a tiny figure reads ``0.002`` or ``< 0.001``, never
``2e-03``. Memory areas are decimal (GB = 10^9 bytes, as ``seqera-sidecar evaluate``
counts them); memory sizes are binary (MiB, GiB), as the engines' requests are shown.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

__all__ = [
    "BYTES",
    "BYTE_SECONDS",
    "CORE_SECONDS",
    "SECONDS",
    "Unit",
    "number",
    "pick",
    "text",
]


@frozen
class Unit:
    """A unit of a figure: its name and how many base units (bytes, seconds) one holds."""

    name: str
    size: float

    def of(self, value: float) -> float:
        """``value`` (in base units) in this unit."""
        return value / self.size


BYTE_SECONDS = (
    Unit("MB·s", 1e6),
    Unit("MB·h", 1e6 * 3600),
    Unit("GB·h", 1e9 * 3600),
    Unit("TB·h", 1e12 * 3600),
)
SECONDS = (Unit("s", 1), Unit("min", 60), Unit("h", 3600), Unit("days", 86400))
CORE_SECONDS = (
    Unit("core·s", 1),
    Unit("core·min", 60),
    Unit("core·h", 3600),
    Unit("core·days", 86400),
)
BYTES = (Unit("MiB", 2**20), Unit("GiB", 2**30), Unit("TiB", 2**40))


def pick(values: Iterable[float | None], units: tuple[Unit, ...]) -> Unit:
    """The largest of ``units`` that the largest of ``values`` (base units) fills once."""
    largest = max((abs(v) for v in values if v is not None), default=0.0)
    chosen = units[0]
    for unit in units:
        if largest >= unit.size:
            chosen = unit
    return chosen


def number(value: float) -> str:
    """``value`` in fixed point for people: ``1,234``, ``12.3``, ``1.23``, ``0.012``."""
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 0.1 or size == 0:
        return f"{value:.2f}".removesuffix(".00") if size == 0 else f"{value:.2f}"
    if size < 0.001:
        return "< 0.001" if value > 0 else "> -0.001"
    return f"{value:.3f}".rstrip("0")


def text(value: float | None, units: tuple[Unit, ...], unit: Unit | None = None) -> str:
    """``value`` (base units) as ``number unit``, in ``unit`` or the one it fills."""
    if value is None:
        return "not measured"
    chosen = unit or pick([value], units)
    return f"{number(chosen.of(value))} {chosen.name}"
