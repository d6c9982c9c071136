"""The sidecar's OpenAPI contract as JSON Schema validators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry
from referencing.jsonschema import DRAFT202012

SHARED = Path(__file__).parents[3] / "shared"
OPENAPI = SHARED / "openapi" / "seqera-sidecar.yaml"
SCHEMAS = SHARED / "schemas"


class Contract:
    """Validators for the bodies of each operation, their $refs resolved from the files."""

    def __init__(self) -> None:
        self.spec: dict[str, Any] = yaml.safe_load(OPENAPI.read_text())
        self.uri = OPENAPI.resolve().as_uri()
        # Each document is registered at its file URI, so the spec's relative $refs
        # ("../schemas/x.json") reach the very files in shared/schemas.
        resources = [(self.uri, DRAFT202012.create_resource(self.spec))]
        for path in SCHEMAS.glob("*.schema.json"):
            schema = json.loads(path.read_text())
            resources.append((path.resolve().as_uri(), DRAFT202012.create_resource(schema)))
        self.registry: Registry[Any] = Registry().with_resources(resources)

    def _validator(self, *pointer: str) -> jsonschema.Draft202012Validator:
        escaped = "/".join(p.replace("~", "~0").replace("/", "~1") for p in pointer)
        schema = {"$ref": f"{self.uri}#/{escaped}"}
        return jsonschema.Draft202012Validator(schema, registry=self.registry)

    def request(self, path: str) -> jsonschema.Draft202012Validator:
        """The validator of the JSON body ``POST path`` accepts."""
        return self._validator(
            "paths", path, "post", "requestBody", "content", "application/json", "schema"
        )

    def response(
        self, path: str, status: int, method: str = "post"
    ) -> jsonschema.Draft202012Validator:
        """The validator of the JSON body ``path`` answers with ``status``."""
        return self._validator(
            "paths", path, method, "responses", str(status), "content", "application/json", "schema"
        )
