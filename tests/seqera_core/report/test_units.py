"""Units chosen per figure, numbers in plain decimals: never 2.8e-05."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from seqera_core.report._units import BYTE_SECONDS, CORE_SECONDS, SECONDS, number, pick, text

SCIENTIFIC = re.compile(r"\d[eE][-+]?\d")


def test_each_figure_picks_the_unit_its_largest_value_fills() -> None:
    assert pick([0.5e6, 30e6], BYTE_SECONDS).name == "MB·s"
    assert pick([3.6e9 * 5], BYTE_SECONDS).name == "MB·h"
    assert pick([2.8e-05 * 3.6e12], BYTE_SECONDS).name == "MB·s"  # the 2.8e-05 GB-h
    assert pick([5 * 3.6e15], BYTE_SECONDS).name == "TB·h"
    assert pick([0.1, 5], SECONDS).name == "s" and pick([300, 7200], SECONDS).name == "h"
    assert pick([3 * 86400], SECONDS).name == "days"
    assert pick([None, 90], CORE_SECONDS).name == "core·min"
    assert pick([], SECONDS).name == "s"


def test_plain_numbers() -> None:
    assert [number(v) for v in (1234.5, 12.34, 1.234, 0.5, 0.0123, 0.0004, 0, -2.5)] == [
        "1,234", "12.3", "1.23", "0.50", "0.012", "< 0.001", "0", "-2.50",
    ]  # fmt: skip
    assert text(2.8e-05 * 3.6e12, BYTE_SECONDS) == "101 MB·s"
    assert text(9.3e-05 * 3600, SECONDS) == "0.33 s"
    assert text(None, SECONDS) == "not measured"


@given(st.floats(min_value=-1e18, max_value=1e18, allow_nan=False))
def test_no_figure_is_ever_written_in_scientific_notation(value: float) -> None:
    for units in (BYTE_SECONDS, SECONDS, CORE_SECONDS):
        assert not SCIENTIFIC.search(text(value, units))
    assert not SCIENTIFIC.search(number(value))
