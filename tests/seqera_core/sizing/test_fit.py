"""The nearest-input windows the neighbours candidate and local scales slide over, and the
calibration's fast paths against their plain definitions."""

from __future__ import annotations

import math
import statistics

from hypothesis import given
from hypothesis import strategies as st

from seqera_core.sizing._fit import _median_of
from seqera_core.sizing._margin import MOST, RESOLUTION
from seqera_core.sizing._neighbours import LocalPricing, nearest, passing, windows


@given(
    keys=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 7.0]) | st.floats(0, 10),
                  min_size=1, max_size=40),
    count=st.integers(1, 12),
)  # fmt: skip
def test_sliding_windows_match_the_binary_search(keys: list[float], count: int) -> None:
    keys.sort()
    count = min(count, len(keys))
    assert windows(keys, count) == [nearest(keys, key, count)[0] for key in keys]


# The fast paths of a calibration give what their plain definitions give, to the bit: the
# report's and the replay's answers must not move when the arithmetic is rearranged.
_finite = st.floats(-20, 20, allow_nan=False)
_scales = st.lists(st.floats(1e-4, 5), min_size=1, max_size=30)


@given(values=st.lists(_finite, min_size=1, max_size=17))
def test_median_of_is_statistics_median(values: list[float]) -> None:
    assert repr(_median_of(list(values))) == repr(statistics.median(values))


@given(
    scales=_scales,
    data=st.data(),
    margin=st.floats(-1, 6) | st.sampled_from([0.0, MOST, RESOLUTION]),
    resolution=st.sampled_from([0.0, RESOLUTION, 0.02]),
)  # fmt: skip
def test_local_pricing_is_the_plain_sum(
    scales: list[float], data: st.DataObject, margin: float, resolution: float
) -> None:
    n = len(scales)
    allocations = data.draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n))
    covered = data.draw(st.integers(0, n))
    jumps = tuple(sorted(data.draw(st.lists(st.floats(0, 2), min_size=1, max_size=8))))
    tail = data.draw(st.floats(0, 2))
    local = LocalPricing(allocations, scales, scales[::-1], resolution, jumps, tail)
    each = [a * math.exp(min(MOST, max(resolution, margin * s)))
            for a, s in zip(allocations, scales, strict=True)]  # fmt: skip
    given_ = sum(each[:covered])
    assert repr(local.given(margin, covered)) == repr((given_, given_ + sum(each[covered:])))
    assert local.given(margin, covered) == local.given(margin, covered)  # priced once, kept
    # the passing share is averaged over the runs in their own order (``unordered``)
    plain = sum(passing(jumps, margin * s, tail * s) for s in scales[::-1]) / n
    assert repr(local.passing(margin)) == repr(plain)
