"""Instance catalogues: the shipped EC2 example, files, and the platform's instances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqera_core import platforms
from seqera_core.errors import ResourceError
from seqera_core.planning import catalogue
from seqera_core.planning.catalogue import DEFAULT_CATALOGUE, Catalogue, InstanceType
from seqera_core.units import GB, GIB

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_catalogue_is_dated_and_the_same_as_shared() -> None:
    shipped = catalogue.default()
    assert shipped.date == "2026-11" and "us-east-1" in (shipped.description or "")
    package = ROOT / "packages/seqera-core/src/seqera_core/data" / DEFAULT_CATALOGUE
    shared = ROOT / "shared/catalogues" / DEFAULT_CATALOGUE
    assert package.read_bytes() == shared.read_bytes()  # one file, two places: no drift
    assert catalogue.load(shared).types == shipped.types


def test_the_shipped_catalogue_matches_the_example_ecs_platform_prices() -> None:
    shipped = catalogue.default()
    ecs = platforms.load(ROOT / "shared/platforms/ecs-account.yaml").catalogue()
    assert ecs is not None
    for t in ecs.types:
        assert shipped.type(t.name) == t


def test_types_carry_sizes_in_bytes_and_gpus() -> None:
    shipped = catalogue.default()
    assert shipped.type("m7i.large") == InstanceType("m7i.large", 2, 8 * GIB, 0.1008)
    g5 = shipped.type("g5.2xlarge")
    assert g5 is not None and g5.gpus == 1 and g5.covers(8, 32 * GIB, 1)
    assert not g5.covers(8, 32 * GIB, 2)
    assert shipped.type("nope") is None


def test_a_json_file_loads_too(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"instances": {"x": {"vcpus": 1, "memory": 2000, "price": 0}}}))
    loaded = catalogue.load(path)
    assert loaded == Catalogue((InstanceType("x", 1, 2000, 0.0),), source=str(path))


def _one(**values: object) -> dict[str, object]:
    return {"instances": {"x": {"vcpus": 1, "memory": "1 GB", "price": 1, **values}}}


@pytest.mark.parametrize(
    ("document", "field", "expected"),
    [
        ({}, "instances", "a mapping of instance type names"),
        ({"instances": {"x": {"vcpus": 1, "memory": "1 GB"}}}, "instances.x.price", "required"),
        (_one(vcpus=0), "instances.x.vcpus", "> 0"),
        (_one(memory="1G"), "instances.x.memory", "4GiB"),
        (_one(price=-1), "instances.x.price", ">= 0"),
        (_one(gpus=0.5), "instances.x.gpus", "whole"),
        (_one(ram=2), "instances.x.ram", "vcpus, memory"),
        ({"instances": {}, "region": "x"}, "region", "date, source or instances"),
    ],
)
def test_bad_catalogues_name_the_file_field_and_expectation(
    document: object, field: str, expected: str
) -> None:
    with pytest.raises(ResourceError) as caught:
        catalogue.parse(document, "cat.yaml")
    assert caught.value.field == f"cat.yaml: {field}"
    assert expected in caught.value.expected


def test_duplicate_types_and_unreadable_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("instances:\n  x: {vcpus: 1, memory: 1 GB, price: 1}\n  x: {vcpus: 2}\n")
    with pytest.raises(ResourceError, match="line 3"):
        catalogue.load(path)
    with pytest.raises(ResourceError, match="--catalogue"):
        catalogue.load(tmp_path / "missing.yaml")


def test_a_platform_instances_section_overrides_the_catalogue() -> None:
    platform = platforms.parse(
        {
            "scheduler": "slurm",
            "queues": {"normal": {}},
            "instances": {"box": {"vcpus": 4, "memory": "16 GiB", "gpus": 1, "price": 0.5}},
        },
        "p.yaml",
    )
    assert platform.catalogue() == Catalogue(
        (InstanceType("box", 4, 16 * GIB, 0.5, 1),), source="p.yaml"
    )
    with pytest.raises(ResourceError) as caught:
        platforms.parse(
            {"scheduler": "slurm", "queues": {"q": {}}, "instances": {"b": 1}}, "p.yaml"
        )
    assert caught.value.field == "p.yaml: instances.b"


def test_an_ecs_platform_queues_are_its_catalogue_and_others_have_none() -> None:
    ecs = platforms.parse(
        {
            "scheduler": "ecs",
            "queues": {"a": {"max_cpus": 2, "max_memory": "4 GB", "cost": {"instance_hour": 0.1}}},
        }
    )
    assert ecs.catalogue() == Catalogue((InstanceType("a", 2, 4 * GB, 0.1),))
    slurm = platforms.parse({"scheduler": "slurm", "queues": {"a": {"max_cpus": 2}}})
    assert slurm.catalogue() is None
    open_ended = platforms.parse({"scheduler": "ecs", "queues": {"a": {"max_cpus": 2}}})
    assert open_ended.catalogue() is None
