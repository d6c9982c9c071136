"""The JSON wire format against the JSON Schemas in shared/schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqera_core import (
    Accelerator,
    ResourceLimits,
    ResourceRequest,
    ResourceResponse,
    WireError,
    wire,
)
from seqera_core.bounds import LARGEST, MAX_ACCELERATORS, MAX_BYTES, MAX_CPUS, MAX_SECONDS

SCHEMAS = Path(__file__).parents[2] / "shared" / "schemas"
REQUEST_SCHEMA = json.loads((SCHEMAS / "resource-request.schema.json").read_text())
RESPONSE_SCHEMA = json.loads((SCHEMAS / "resource-response.schema.json").read_text())

optional_int = st.none() | st.integers(min_value=1, max_value=MAX_BYTES)
requests = st.builds(
    ResourceRequest,
    cpus=st.none() | st.integers(1, 512) | st.floats(0.01, 512, allow_nan=False),
    memory=optional_int,
    disk=optional_int,
    time=st.none() | st.integers(1, MAX_SECONDS),
    accelerator=st.none() | st.builds(Accelerator, st.integers(1, 16), st.none() | st.text()),
    resource_limits=st.none() | st.builds(ResourceLimits, memory=optional_int),
    container=st.none() | st.text(),
    process=st.none() | st.text(),
    attempt=st.integers(1, 10),
    task_index=st.none() | st.integers(0, 10**6),
    labels=st.dictionaries(st.text(), st.text(), max_size=3),
    nodes=optional_int,
    tasks=optional_int,
    tasks_per_node=optional_int,
    memory_per_cpu=optional_int,
    mpi=st.none() | st.text(),
)
responses = st.builds(
    ResourceResponse,
    cpus=st.integers(1, 512) | st.floats(0.01, 512, allow_nan=False),
    memory=st.integers(1, MAX_BYTES),
    disk=st.integers(1, MAX_BYTES),
    time=st.integers(1, MAX_SECONDS),
)


@settings(deadline=None)  # a loaded CI runner is no measure of the converter's speed
@given(requests)
def test_requests_validate_and_round_trip(request: ResourceRequest) -> None:
    document = json.loads(wire.dumps(request))
    jsonschema.validate(document, REQUEST_SCHEMA)
    assert wire.loads(json.dumps(document), ResourceRequest) == request


@settings(deadline=None)
@given(responses)
def test_responses_validate_and_round_trip(response: ResourceResponse) -> None:
    document = wire.unstructure(response)
    jsonschema.validate(document, RESPONSE_SCHEMA)
    assert wire.structure(document, ResourceResponse) == response


def test_field_names_carry_units() -> None:
    document = wire.unstructure(ResourceRequest(memory=4, time=5, disk=6, container="img"))
    assert document == {
        "memory_bytes": 4,
        "time_seconds": 5,
        "disk_bytes": 6,
        "container_image": "img",
        "attempt": 1,
    }


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"memory_bytes": 4.5}, "memory_bytes"),
        ({"memory_bytes": "4 GB"}, "memory_bytes"),
        ({"memory": 4}, "memory"),
        ({"cpus": -1}, "cpus"),
        ({"cpus": True}, "cpus"),
        ({"time_seconds": 0}, "time_seconds"),
        ({"accelerator": {"count": 0}}, "accelerator"),
        ({"labels": {"a": 1}}, "labels"),
        ({"resource_limits": {"memory_bytes": -1}}, "memory_bytes"),
    ],
)
def test_bad_request_documents_are_rejected_naming_the_field(
    document: dict[str, Any], field: str
) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, REQUEST_SCHEMA)
    with pytest.raises(WireError) as info:
        wire.structure(document, ResourceRequest)
    assert field in str(info.value)


def test_response_missing_fields_are_named() -> None:
    with pytest.raises(WireError) as info:
        wire.loads('{"cpus": 1, "memory_bytes": 1}', ResourceResponse)
    assert "disk_bytes" in str(info.value) and "time_seconds" in str(info.value)


def test_not_json_and_not_an_object() -> None:
    with pytest.raises(WireError, match="not JSON"):
        wire.loads("{", ResourceRequest)
    with pytest.raises(WireError, match="object"):
        wire.loads("[]", ResourceRequest)


def test_whole_numbers_written_with_a_point_are_integers_as_json_schema_says() -> None:
    # Found by schemathesis against the sidecar: the schema accepted 4.0, the converter did not.
    document = {"memory_bytes": 4096.0, "accelerator": {"count": 2.0}}
    jsonschema.validate(document, REQUEST_SCHEMA)
    request = wire.structure(document, ResourceRequest)
    assert request.memory == 4096 and isinstance(request.memory, int)
    assert request.accelerator is not None and request.accelerator.count == 2


def test_the_schemas_maxima_are_the_cores_bounds() -> None:
    maxima = {"cpus": MAX_CPUS, "memory_bytes": MAX_BYTES, "disk_bytes": MAX_BYTES,
              "time_seconds": MAX_SECONDS}  # fmt: skip
    for schema in (REQUEST_SCHEMA, RESPONSE_SCHEMA):
        assert {k: schema["properties"][k]["maximum"] for k in maxima} == maxima
    limits = REQUEST_SCHEMA["properties"]["resource_limits"]["properties"]
    assert {k: limits[k]["maximum"] for k in maxima} == maxima
    assert REQUEST_SCHEMA["properties"]["accelerator"]["properties"]["count"]["maximum"] == (
        MAX_ACCELERATORS
    )
    for key in ("attempt", "task_index", "input_bytes"):
        assert REQUEST_SCHEMA["properties"][key]["maximum"] == LARGEST


@pytest.mark.parametrize(
    ("document", "field"),
    [({"time_seconds": 10**308}, "$.time_seconds"), ({"cpus": 1e308}, "$.cpus"),
     ({"cpus": 100_001}, "$.cpus"), ({"memory_bytes": MAX_BYTES + 1}, "$.memory_bytes"),
     ({"disk_bytes": 2**63}, "$.disk_bytes"), ({"accelerator": {"count": 5000}},
     "$.accelerator.count"), ({"resource_limits": {"time_seconds": 10**20}},
     "$.resource_limits.time_seconds"), ({"attempt": 2**63}, "$.attempt")],
)  # fmt: skip
def test_a_number_past_the_contract_is_refused_naming_its_field(
    document: dict[str, Any], field: str
) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, REQUEST_SCHEMA)
    with pytest.raises(WireError) as caught:
        wire.structure(document, ResourceRequest)
    assert caught.value.problems[0].endswith(f" @ {field}"), caught.value.problems
    assert "is larger than" in caught.value.problems[0]
    assert len(caught.value.problems[0]) < 200  # a 309-digit number is said by its size
