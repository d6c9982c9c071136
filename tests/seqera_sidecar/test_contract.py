"""The served OpenAPI document: the repository's contract, and the service keeps to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from seqera_core.config import Config
from seqera_core.history import open_history
from seqera_core.session import Session
from seqera_sidecar import create_app
from seqera_sidecar.runs import Dispatcher

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "packages" / "seqera-nextflow-sidecar" / "src" / "seqera_sidecar" / "contract"


@pytest.mark.parametrize(
    "relative",
    ["openapi/seqera-sidecar.yaml", "schemas/resource-request.schema.json",
     "schemas/resource-response.schema.json"],
)  # fmt: skip
def test_the_package_carries_the_repositorys_contract(relative: str) -> None:
    assert (PACKAGE / relative).read_text() == (ROOT / "shared" / relative).read_text()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> object:
    directory = tmp_path_factory.mktemp("contract")
    history = open_history(directory / "history.db")
    # Runs exist only when created: fuzzed task submissions name runs that do not, so
    # nothing generated is ever executed.
    config = Config({"backend": "local", "history": str(directory / "history.db")})
    session = Session(config, "seqera-sidecar", work_dir=directory / "jobs")
    dispatcher = Dispatcher(session, directory / "runs.db")
    return create_app(history, token="t0ken", dispatcher=dispatcher)


@pytest.fixture(scope="module")
def api(app: object) -> schemathesis.schemas.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_no_5xx_and_every_answer_matches_the_schema(api: schemathesis.schemas.BaseSchema) -> None:
    # Each operation in turn (schemathesis's pytest plugin predates this pytest); with
    # the token, so every documented answer, 200 to 400, is reached.
    operations = [result.ok() for result in api.get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/resources/resolve", "/v1/weblog", "/v1/runs"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers={"Authorization": "Bearer t0ken"})

        check()


def test_the_served_document_is_self_contained(app: object) -> None:
    from starlette.testclient import TestClient

    document = TestClient(app).get("/openapi.json").json()  # type: ignore[arg-type]
    assert '"$ref": "../' not in json.dumps(document)  # every reference is internal
    assert document["components"]["schemas"]["ResourceRequest"]["type"] == "object"
