"""Snakemake's own executor-plugin test base, with this executor on the local backend."""

from __future__ import annotations

import pytest
from snakemake.common.tests import TestWorkflowsLocalStorageBase

from snakemake_executor_plugin_seqera import ExecutorSettings


class TestLocalBackend(TestWorkflowsLocalStorageBase):
    __test__ = True

    def get_executor(self) -> str:
        return "seqera"

    def get_executor_settings(self) -> ExecutorSettings:
        return ExecutorSettings(backend="local", local_cores=2)


@pytest.fixture(autouse=True)
def _own_config(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing from the developer's own seqera configuration may leak into the tests.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_RESOLVER_URL", "SEQERA_LABELS"):
        monkeypatch.delenv(name, raising=False)
