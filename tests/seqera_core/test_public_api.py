"""The package's public face: a sorted ``__all__`` that names exactly what exists."""

from __future__ import annotations

import importlib

import pytest

import seqera_core

MODULES = [
    "seqera_core",
    "seqera_core.models",
    "seqera_core.units",
    "seqera_core.errors",
    "seqera_core.wire",
    "seqera_core.dialects.nextflow",
    "seqera_core.dialects.snakemake",
    "seqera_core.dialects.cwl",
    "seqera_core.dialects.slurm",
    "seqera_core.dialects.pbs",
    "seqera_core.dialects.ecs",
    "seqera_core.backends",
    "seqera_core.backends.registry",
    "seqera_core.backends.entries",
    "seqera_core.backends.local",
    "seqera_core.backends.batch",
    "seqera_core.backends.squash",
    "seqera_core.backends.ecs",
    "seqera_core.backends.awsbatch",
    "seqera_core.backends.awslogs",
    "seqera_core.labels",
    "seqera_core.platforms",
    "seqera_core.config",
    "seqera_core.pipeline",
    "seqera_core.resolvers",
    "seqera_core.sizing",
    "seqera_core.dialects.human",
    "seqera_core.planning",
    "seqera_core.planning.catalogue",
    "seqera_core.planning.jobsfile",
    "seqera_core.cli.plan",
    "seqera_core.resume",
    # kept for one release where users import them
    "seqera_core.backends.slurm",
    "seqera_core.backends.pbs",
]

# The packages whose public face is a sorted __all__ of names that exist.
PACKAGES = [
    "seqera_core.config",
    "seqera_core.backends",
    "seqera_core.backends.local",
    "seqera_core.backends.batch",
    "seqera_core.backends.squash",
    "seqera_core.backends.ecs",
    "seqera_core.backends.awsbatch",
    "seqera_core.backends.awslogs",
    "seqera_core.platforms",
    "seqera_core.planning",
    "seqera_core.sizing",
    "seqera_core.resume",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    for symbol in module.__all__:
        assert hasattr(module, symbol), f"{name}.__all__ names missing {symbol}"


def test_top_level_all_is_sorted_and_complete() -> None:
    assert seqera_core.__all__ == sorted(seqera_core.__all__)
    public = {n for n in vars(seqera_core) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(seqera_core, n)).__name__ == "module"}
    assert public - modules == set(seqera_core.__all__)


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_face_is_sorted(name: str) -> None:
    module = importlib.import_module(name)
    # isort-style, as ruff's RUF022 keeps it: constants, then classes, then the rest
    kind = {True: 0, False: 1}
    order = sorted(module.__all__, key=lambda n: (kind[n.isupper()] + (not n[0].isupper()), n))
    assert list(module.__all__) == order


def test_the_old_backend_modules_are_the_new_ones() -> None:
    from seqera_core.backends import batch, slurm

    assert slurm.SlurmBackend is batch.SlurmBackend
