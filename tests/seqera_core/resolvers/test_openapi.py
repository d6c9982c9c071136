"""The sidecar's OpenAPI file: parses, refers to the shared schemas, agrees with the wire."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urldefrag

import pytest

from seqera_core import wire
from seqera_core.models import Accelerator, ResourceLimits, ResourceRequest, ResourceResponse
from seqera_core.resolvers import BATCH_LIMIT

from ._contract import OPENAPI, SCHEMAS, Contract

RESOLVE, BATCH = "/v1/resources/resolve", "/v1/resources/resolve/batch"
FULL = ResourceRequest(
    cpus=1.5, memory=2**30, disk=2**31, time=600, accelerator=Accelerator(1, "a100"),
    machine_type="m5.large", resource_limits=ResourceLimits(cpus=8, memory=2**34),
    container="ubuntu:24.04", process="ALIGN", attempt=2, task_index=3, input_bytes=0,
    queue="normal", account="lab", labels={"team": "a"}, extra={"slurm.qos": "high"},
)  # fmt: skip
ANSWER = ResourceResponse(cpus=2, memory=2**30, disk=2**30, time=60)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def test_parses_as_openapi_3_1(contract: Contract) -> None:
    spec = contract.spec
    assert spec["openapi"].startswith("3.1.")
    assert {RESOLVE, BATCH, "/health", "/metrics", "/v1/weblog", "/v1/runs"} <= set(spec["paths"])
    assert spec["paths"][RESOLVE]["post"]["responses"].keys() >= {"200", "204"}


def test_every_ref_points_at_something_that_exists(contract: Contract) -> None:
    refs = _refs(contract.spec)
    files = {urldefrag(r).url for r in refs} - {""}
    assert files == {
        "../schemas/resource-request.schema.json",
        "../schemas/resource-response.schema.json",
    }
    for ref in refs:
        target, fragment = urldefrag(ref)
        document = json.loads((OPENAPI.parent / target).read_text()) if target else contract.spec
        for part in filter(None, fragment.split("/")):
            document = document[part.replace("~1", "/").replace("~0", "~")]


def test_schemas_are_referenced_not_copied(contract: Contract) -> None:
    # The field definitions live in shared/schemas only.
    text = OPENAPI.read_text()
    assert "memory_bytes:" not in text and "exclusiveMinimum" not in text
    assert {p.name for p in SCHEMAS.glob("*.json")} >= {
        "resource-request.schema.json",
        "resource-response.schema.json",
    }


def test_every_tag_has_endpoints(contract: Contract) -> None:
    tags = {tag["name"]: tag["description"] for tag in contract.spec["tags"]}
    assert list(tags) == ["resources", "service", "weblog", "runs"]
    used = {t for item in contract.spec["paths"].values() for key, op in item.items()
            if key != "parameters" for t in op["tags"]}  # fmt: skip
    assert used == {"resources", "service", "weblog", "runs"}


def test_the_wire_format_meets_the_contract(contract: Contract) -> None:
    one = wire.unstructure(FULL)
    contract.request(RESOLVE).validate(one)
    contract.request(RESOLVE).validate(wire.unstructure(ResourceRequest()))
    contract.response(RESOLVE, 200).validate(wire.unstructure(ANSWER))
    contract.request(BATCH).validate({"requests": [one] * BATCH_LIMIT})
    contract.response(BATCH, 200).validate({"responses": [wire.unstructure(ANSWER), None]})
    contract.response("/health", 200, "get").validate({"status": "ok"})


@pytest.mark.parametrize(
    "body",
    [
        {"requests": []},
        {"requests": [{}] * (BATCH_LIMIT + 1)},
        {"requests": [{"memory": 1}]},
        {"requests": [{}], "more": 1},
    ],
)
def test_the_batch_contract_rejects(contract: Contract, body: Any) -> None:
    assert not contract.request(BATCH).is_valid(body)
