"""CWL's resource dialect, checked against cwltool's own evalResources where it is installed."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqera_core.dialects import cwl
from seqera_core.errors import ResourceError
from tests.conftest import require

MIB = 2**20


def _cwltool_resources(requirement: dict[str, Any], cuda: dict[str, Any] | None = None) -> Any:
    require("cwltool", "cwltool's evalResources is the oracle for the CWL dialect")
    from cwltool.context import LoadingContext, RuntimeContext
    from cwltool.load_tool import load_tool
    from cwltool.workflow import default_make_tool

    requirements: list[dict[str, Any]] = [{"class": "ResourceRequirement", **requirement}]
    hints = []
    if cuda is not None:
        hints.append({"class": "http://commonwl.org/cwltool#CUDARequirement", **cuda})
    document = {
        "cwlVersion": "v1.2",
        "class": "CommandLineTool",
        "id": "file:///oracle.cwl",
        "baseCommand": "true",
        "inputs": [],
        "outputs": [],
        "requirements": requirements,
        "hints": hints,
    }
    loading = LoadingContext()
    loading.construct_tool_object = default_make_tool
    tool = load_tool(document, loading)
    return tool._init_job({}, RuntimeContext()).resources


def test_fractional_values_round_up() -> None:
    request = cwl.request_from_requirements({"ramMin": 1000.5, "coresMin": 1.25})
    assert request.cpus == 1.25  # kept fractional in the core
    assert request.memory == 1001 * MIB
    assert request.disk == 2048 * MIB  # tmpdir + outdir defaults


def test_time_limit_and_cuda() -> None:
    request = cwl.request_from_requirements(
        {"timelimit": 3600, "cudaDeviceCountMin": 2, "coresMax": 4}
    )
    assert request.time == 3600 and request.cpus == 4
    assert request.accelerator is not None and request.accelerator.count == 2


def test_zero_time_limit_is_unlimited() -> None:
    assert cwl.request_from_requirements({"timelimit": 0}).time is None


@pytest.mark.parametrize(
    ("requirements", "field"),
    [
        ({"ramMin": -1}, "ramMin"),
        ({"ramMin": "$(inputs.size)"}, "ramMin"),
        ({"coresMin": "lots"}, "coresMin"),
        ({"coresMin": "1e-400"}, "coresMin"),  # reads as 0.0: the error quotes it as written
        ({"timelimit": -5}, "timelimit"),
        ({"ramMinimum": 5}, "ramMinimum"),
    ],
)
def test_bad_values_name_the_field(requirements: dict[str, Any], field: str) -> None:
    with pytest.raises(ResourceError) as info:
        cwl.request_from_requirements(requirements)
    assert info.value.field == field
    assert info.value.value == requirements[field]


EXAMPLES = [
    {"ramMin": 1000.5, "coresMin": 1.25},
    {"ramMax": 3000, "tmpdirMin": 0.1},
    {"coresMin": 0, "coresMax": 3},  # a zero minimum falls through to the maximum
    {"outdirMin": 10.000001, "ramMin": 0.5},
    {},
]


@pytest.mark.oracle
@pytest.mark.parametrize("requirement", EXAMPLES)
def test_agrees_with_cwltool(requirement: dict[str, Any]) -> None:
    assert cwl.evaluate_requirements(requirement) == _cwltool_resources(requirement)


@pytest.mark.oracle
def test_cuda_agrees_with_cwltool() -> None:
    cuda = {"cudaVersionMin": "11.4", "cudaComputeCapability": "3.0", "cudaDeviceCountMin": 2}
    ours = cwl.evaluate_requirements({**cuda, "coresMin": 2})
    assert ours == _cwltool_resources({"coresMin": 2}, cuda)


positive = st.floats(min_value=0.01, max_value=10**6, allow_nan=False, allow_infinity=False)


@pytest.mark.oracle
@settings(max_examples=30, deadline=None)
@given(cores=positive, ram=positive, tmp=positive)
def test_property_agrees_with_cwltool(cores: float, ram: float, tmp: float) -> None:
    requirement = {"coresMin": cores, "ramMin": ram, "tmpdirMin": tmp}
    assert cwl.evaluate_requirements(requirement) == _cwltool_resources(requirement)


@given(cores=positive, ram=positive)
def test_never_below_the_request(cores: float, ram: float) -> None:
    request = cwl.request_from_requirements({"coresMin": cores, "ramMin": ram})
    assert request.memory is not None and request.memory >= Fraction(ram) * MIB
    assert request.memory == math.ceil(ram) * MIB
    assert request.cpus == cores
