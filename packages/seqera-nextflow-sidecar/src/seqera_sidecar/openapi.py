"""The OpenAPI contract this service serves, with the request/response schemas inlined.

The package carries a copy of the repository's ``shared/openapi`` and ``shared/schemas``
(a test keeps them identical); ``/openapi.json`` serves one self-contained document.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import yaml

__all__ = ["bundled_spec"]

_SCHEMAS = {
    "../schemas/resource-request.schema.json": "ResourceRequest",
    "../schemas/resource-response.schema.json": "ResourceResponse",
}


def _inline(node: Any) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref in _SCHEMAS:
            return {"$ref": f"#/components/schemas/{_SCHEMAS[ref]}"}
        return {k: _inline(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v) for v in node]
    return node


@cache
def _spec() -> str:
    contract = resources.files("seqera_sidecar") / "contract"
    spec = yaml.safe_load((contract / "openapi" / "seqera-sidecar.yaml").read_text())
    spec = _inline(spec)
    for path, name in _SCHEMAS.items():
        schema = json.loads((contract / "openapi" / path).read_text())
        schema.pop("$id", None)  # referenced by its component name here
        schema.pop("$schema", None)
        spec["components"]["schemas"][name] = schema
    return json.dumps(spec)


def bundled_spec() -> dict[str, Any]:
    """A fresh copy of the self-contained OpenAPI document."""
    document: dict[str, Any] = json.loads(_spec())
    return document
