"""The nearest-input windows the neighbours candidate and local scales slide over."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from seqera_core.sizing._fit import _windows, nearest


@given(
    keys=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 7.0]) | st.floats(0, 10),
                  min_size=1, max_size=40),
    count=st.integers(1, 12),
)  # fmt: skip
def test_sliding_windows_match_the_binary_search(keys: list[float], count: int) -> None:
    keys.sort()
    count = min(count, len(keys))
    assert _windows(keys, count) == [nearest(keys, key, count)[0] for key in keys]
