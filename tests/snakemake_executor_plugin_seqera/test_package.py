"""The snakemake-executor-plugin-seqera distribution installs, imports and builds on seqera-core."""

from __future__ import annotations

from importlib import metadata

import snakemake_executor_plugin_seqera


def test_installed_with_its_version() -> None:
    assert metadata.version("snakemake-executor-plugin-seqera") == snakemake_executor_plugin_seqera.__version__


def test_depends_on_the_core() -> None:
    requirements = metadata.requires("snakemake-executor-plugin-seqera") or []
    assert any(r.split(";")[0].strip().startswith("seqera-core") for r in requirements)
    assert snakemake_executor_plugin_seqera.__all__ == sorted(snakemake_executor_plugin_seqera.__all__)
