"""Snakemake's resource dialect, checked against Snakemake's own parser where it is installed."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core.dialects import snakemake
from seqera_core.errors import ResourceError
from tests.conftest import require

MB = 10**6
MIB = 2**20


def _oracle() -> Any:
    return require("snakemake.resources", "Snakemake's parser is the oracle for its dialect")


@pytest.mark.parametrize(
    ("resources", "memory"),
    [
        ({"mem": "4GB"}, 4 * 10**9),  # decimal: mem_mb 4000
        ({"mem": "4GiB"}, 4 * 2**30),  # binary
        ({"mem_mb": 4000}, 4 * 10**9),
        ({"mem_mb": "4000"}, 4 * 10**9),
        ({"mem_mib": 4096}, 4 * 2**30),
        ({"mem": 4000}, 4 * 10**9),  # an integer mem is megabytes
        ({"mem": "4000"}, 4 * 10**9),
        ({"mem_mb": 1000, "mem_mib": 1000}, 1000 * MIB),  # both given: the larger wins
    ],
)
def test_memory(resources: dict[str, object], memory: int) -> None:
    assert snakemake.request_from_resources(resources).request.memory == memory


def test_mem_4gb_is_mem_mb_4000() -> None:
    assert snakemake.size_mb("4GB") == 4000


def test_runtime_threads_gpus_and_slurm_keys() -> None:
    translation = snakemake.request_from_resources(
        {
            "runtime": 90,
            "disk_mb": 10000,
            "gpu": 2,
            "gpu_model": "a100",
            "slurm_partition": "gpu",
            "slurm_account": "lab",
            "slurm_extra": "--mail-type=END",
            "qos": "high",
            "tmpdir": "/tmp",
            "load": 1,
        },
        threads=8,
        rule="align",
    )
    request = translation.request
    assert (request.cpus, request.time, request.disk) == (8, 5400, 10**10)
    assert request.accelerator is not None
    assert (request.accelerator.count, request.accelerator.type) == (2, "a100")
    assert (request.queue, request.account, request.process) == ("gpu", "lab", "align")
    assert request.extra == {"slurm.extra": "--mail-type=END", "slurm.qos": "high"}
    assert translation.ignored == ("load",)


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"mem_mb": "4GB"}, "mem_mb"),  # a suffixed resource takes a number
        ({"mem_mb": -4}, "mem_mb"),
        ({"mem": "4 XB"}, "mem"),
        ({"mem": "lots"}, "mem"),
        ({"runtime": "soon"}, "runtime"),
        ({"runtime": -5}, "runtime"),
        ({"threads": 0}, "threads"),
        ({"threads": -1}, "threads"),
        ({"gpu": 1.5}, "gpu"),
    ],
)
def test_bad_values_name_the_field(resources: dict[str, object], field: str) -> None:
    with pytest.raises(ResourceError) as info:
        snakemake.request_from_resources(resources)
    assert info.value.field == field
    assert repr(resources[field]) in str(info.value)


def test_suffixed_string_error_suggests_the_unsuffixed_key() -> None:
    with pytest.raises(ResourceError, match="mem='4GB'"):
        snakemake.request_from_resources({"mem_mb": "4GB"})


SIZES = ["4GB", "4GiB", "4 gb", "4g", "1.5 GB", "4 gigabytes", "2TB", "0.5 KB", "4000", "100 MiB",
         "7 mebibytes", "1e3MB", "-4GB", "4 XB", "lots", "12 bytes"]  # fmt: skip
TIMES = ["90", "90m", "1.5h", "2 hours", "90s", "1 day", "30 seconds", "1h30m", "soon", "-1h",
         "1 week", "3 min"]  # fmt: skip


@pytest.mark.oracle
@pytest.mark.parametrize("text", SIZES)
def test_size_agrees_with_snakemake(text: str) -> None:
    resources = _oracle()
    try:
        expected = resources.Resource.parse_human_friendly("mem", text)
    except Exception:
        with pytest.raises(ResourceError):
            snakemake.size_mb(text)
        return
    assert snakemake.size_mb(text) == expected
    # Snakemake rounds mem_mb up from the exact bytes the canonical request keeps
    assert snakemake.parse_size_bytes(text) <= expected * MB


@pytest.mark.oracle
@pytest.mark.parametrize("text", TIMES)
def test_runtime_agrees_with_snakemake(text: str) -> None:
    resources = _oracle()
    try:
        expected = resources.Resource.parse_human_friendly("runtime", text)
    except Exception:
        with pytest.raises(ResourceError):
            snakemake.runtime_minutes(text)
        return
    assert snakemake.runtime_minutes(text) == expected
    # Snakemake truncates to whole minutes; the canonical seconds keep every second
    seconds = snakemake.parse_runtime_seconds(text)
    assert snakemake.format_runtime(seconds) >= expected


@pytest.mark.oracle
@given(st.integers(min_value=1, max_value=10**7))
def test_mib_never_loses_bytes_where_snakemake_does(mib: int) -> None:
    resources = _oracle()
    normalised = resources.Resources.from_mapping({"mem_mib": mib})
    snakemake_mb = normalised["mem_mb"].value
    ours = snakemake.request_from_resources({"mem_mib": mib}).request.memory
    assert ours == mib * MIB
    # Snakemake's mib_to_mb floors, so its mem_mb can be below the request; ours is not
    assert snakemake_mb * MB <= ours
    assert snakemake.format_mem_mb(ours) >= snakemake_mb


@given(st.integers(min_value=1, max_value=10**9))
def test_mem_mb_round_trips(mem_mb: int) -> None:
    memory = snakemake.request_from_resources({"mem_mb": mem_mb}).request.memory
    assert memory is not None and snakemake.format_mem_mb(memory) == mem_mb


@given(st.integers(min_value=1, max_value=10**7))
def test_runtime_round_trips(minutes: int) -> None:
    time = snakemake.request_from_resources({"runtime": minutes}).request.time
    assert time is not None and snakemake.format_runtime(time) == minutes


@given(st.floats(min_value=0.001, max_value=10**6, allow_nan=False))
def test_fractional_mem_mb_rounds_up(mem_mb: float) -> None:
    memory = snakemake.request_from_resources({"mem_mb": mem_mb}).request.memory
    assert memory == math.ceil(Fraction(mem_mb) * MB)  # exact, never below the request


@pytest.mark.parametrize("text", ["²", "½ hour"])
def test_a_runtime_of_other_digits_is_refused_naming_it(text: str) -> None:
    # humanfriendly raises a bare ValueError for these (float("²") fails)
    for parse in (snakemake.parse_runtime_seconds, snakemake.runtime_minutes):
        with pytest.raises(ResourceError, match="runtime"):
            parse(text)
