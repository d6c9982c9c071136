"""Nextflow's MemoryUnit and Duration rules, including their published examples."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core.dialects import nextflow
from seqera_core.errors import ResourceError

GB = 1024**3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4 GB", 4294967296),  # the documented example
        ("4GB", 4 * GB),
        ("4G", 4 * GB),  # the trailing B is optional
        ("4 g", 4 * GB),  # the unit letter is case-insensitive
        ("4 gB", 4 * GB),
        ("1.5 GB", 1610612736),
        ("512M", 512 * 1024**2),
        ("2 KB", 2048),
        ("1 TB", 1024**4),
        ("100", 100),  # no unit: bytes
        ("100 B", 100),
        ("100b", 100),
        ("  8 GB  ", 8 * GB),  # TaskConfig trims the directive
        ("1.", None),  # Long.parseLong("1.") fails
        (".5 KB", 512),
        ("0.0001 KB", 0),  # Math.round(0.1024)
        ("0.0005 KB", 1),  # Math.round(0.512)
        ("10 ZB", 2**63 - 1),  # Math.round saturates at Long.MAX_VALUE
    ],
)
def test_memory_accepts_what_memoryunit_accepts(text: str, expected: int | None) -> None:
    if expected is None:
        with pytest.raises(ResourceError):
            nextflow.parse_memory(text)
        return
    assert nextflow.parse_memory(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "4 gb",  # the trailing B is case-sensitive
        "4 GiB",
        "4 Gb",
        "4 XB",
        "1.5",  # Long.parseLong without a unit
        "1.5 B",
        "4 G B",
        "-4 GB",
        "GB",
        ".",
        "1.2.3 GB",
        "4 GBB",
        "",
        "9223372036854775808",  # above Long.MAX_VALUE
        "4\u00a0GB",  # Java's \s is ASCII-only
    ],
)
def test_memory_rejects_what_memoryunit_rejects(text: str) -> None:
    with pytest.raises(ResourceError) as info:
        nextflow.parse_memory(text)
    assert info.value.field == "memory"
    assert "GB" in str(info.value)  # the accepted forms are named


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2d 3h", 183600),  # the documented example
        ("1h 30m", 5400),
        ("1h30m", 5400),
        ("90 min", 5400),
        ("1.5h", 5400),
        ("1hour", 3600),
        ("2 days", 172800),
        ("30s", 30),
        ("1500ms", 2),  # milliseconds round up to whole seconds
        ("1 millis", 1),
        ("01:30:00", 5400),  # legacy hh:mm:ss
        ("1:2:3", 3723),
        ("00:99:99", 99 * 60 + 99),
        ("1h ", 3600),
        (" 1h", 3600),  # trimmed by TaskConfig
    ],
)
def test_duration_examples(text: str, seconds: int) -> None:
    assert nextflow.parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    ["1H", "1 hr", "1000", "1h, 30m", "100:00:00", "1:00", "h", "-1h", "1 Day", "1.5.5h", ""],
)
def test_duration_rejects(text: str) -> None:
    with pytest.raises(ResourceError) as info:
        nextflow.parse_duration(text)
    assert info.value.field == "time"


def test_bare_numbers_are_bytes_and_milliseconds() -> None:
    assert nextflow.parse_memory(4096) == 4096
    assert nextflow.parse_duration_ms(1000) == 1000
    assert nextflow.parse_duration(1001) == 2  # rounds up


def test_duration_parses_numbers_in_single_precision() -> None:
    # Duration uses String.toFloat(): 16777217 is not a float, it becomes 16777216.
    assert nextflow.parse_duration_ms("16777217ms") == 16777216


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_memory_round_trips(size: int) -> None:
    assert nextflow.parse_memory(nextflow.format_memory(size)) == size


@given(st.integers(min_value=0, max_value=10**7))
def test_duration_round_trips(seconds: int) -> None:
    assert nextflow.parse_duration(nextflow.format_duration(seconds)) == seconds


@given(st.decimals(min_value=0, max_value=10**6, places=3), st.sampled_from(["K", "M", "G"]))
def test_fractional_memory_rounds_half_up(amount: object, unit: str) -> None:
    text = f"{amount} {unit}B"
    power = {"K": 1, "M": 2, "G": 3}[unit]
    exact = float(str(amount)) * 1024**power
    assert abs(nextflow.parse_memory(text) - exact) <= 0.5


def test_directives_build_the_request() -> None:
    request = nextflow.request_from_directives(
        {
            "cpus": 4,
            "memory": "8 GB",
            "time": "2h",
            "disk": "100 GB",
            "accelerator": {"request": 2, "type": "nvidia-tesla-a100"},
            "resourceLimits": {"cpus": 2, "memory": "4 GB", "time": "1h"},
            "queue": "long",
            "resourceLabels": {"team": "genomics"},
        },
        process="ALIGN",
    )
    assert (request.cpus, request.memory, request.time) == (4, 8 * GB, 7200)
    assert request.disk == 100 * GB
    assert request.accelerator is not None and request.accelerator.count == 2
    assert request.resource_limits is not None and request.resource_limits.memory == 4 * GB
    assert request.queue == "long" and request.labels == {"team": "genomics"}


@pytest.mark.parametrize(
    ("directives", "field"),
    [
        ({"cpus": -2}, "cpus"),
        ({"cpus": "two"}, "cpus"),
        ({"memory": "4 gb"}, "memory"),
        ({"time": "1 hr"}, "time"),
        ({"accelerator": 0}, "accelerator"),
        ({"memroy": "4 GB"}, "memroy"),
        ({"resourceLimits": {"memory": "lots"}}, "resourceLimits.memory"),
    ],
)
def test_bad_directives_name_the_field(directives: dict[str, object], field: str) -> None:
    with pytest.raises(ResourceError) as info:
        nextflow.request_from_directives(directives)
    assert info.value.field == field


def test_zero_cpus_means_one_as_in_taskconfig() -> None:
    assert nextflow.request_from_directives({"cpus": 0}).cpus == 1
