"""The snakemake-executor-plugin-seqera distribution installs, imports and builds on seqera-core."""

from __future__ import annotations

from importlib import metadata

import snakemake_executor_plugin_seqera as package


def test_installed_with_its_version() -> None:
    assert metadata.version("snakemake-executor-plugin-seqera") == package.__version__


def test_depends_on_the_core() -> None:
    requirements = metadata.requires("snakemake-executor-plugin-seqera") or []
    assert any(r.split(";")[0].strip().startswith("seqera-core") for r in requirements)
    assert package.__all__ == sorted(package.__all__)
