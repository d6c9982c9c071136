"""A job's resources, threads, rule and wildcards as the common request."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from seqera_core.errors import ResourceError
from seqera_core.units import MB, MIB
from snakemake_executor_plugin_seqera.resources import (
    RUNNER_MEMORY,
    default_memory,
    input_bytes,
    job_request,
    task_labels,
)


@attrs.frozen
class _Rule:
    name: str


@attrs.frozen
class Job:
    """The attributes of Snakemake's job interface that the translation reads."""

    resources: Mapping[str, Any]
    threads: int = 1
    rule: _Rule = _Rule("align")
    attempt: int = 1
    input: tuple[str, ...] = ()
    wildcards_dict: Mapping[str, str] = attrs.field(factory=dict)
    group: str | None = None
    container_img_url: str | None = None

    @property
    def groupid(self) -> str | None:
        return self.group

    def is_group(self) -> bool:
        return self.group is not None


def test_snakemake_names_become_canonical_units() -> None:
    job = Job({"mem_mb": 4000, "mem_mib": 3815, "runtime": 90, "disk_mb": 2000}, threads=4)
    request, warnings = job_request(job)
    # mem_mib is Snakemake's own rounding of mem_mb: the larger of the two is kept.
    assert request.memory == max(4000 * MB, 3815 * MIB)
    assert (request.cpus, request.time, request.disk) == (4, 90 * 60, 2000 * MB)
    assert request.process == "align" and warnings == []


def test_slurm_plugin_names_carry_over() -> None:
    resources = {"mem_mb": 1000, "slurm_partition": "long", "slurm_account": "lab",
                 "constraint": "avx2", "qos": "high", "slurm_extra": "--exclusive"}  # fmt: skip
    request, _ = job_request(Job(resources))
    assert (request.queue, request.account) == ("long", "lab")
    assert request.extra == {
        "slurm.constraint": "avx2", "slurm.qos": "high", "slurm.extra": "--exclusive",
    }  # fmt: skip


def test_settings_fill_queue_and_account_only_where_the_rule_names_none() -> None:
    own, _ = job_request(Job({"slurm_partition": "long"}), queue="short", account="lab")
    assert (own.queue, own.account) == ("long", "lab")


def test_gpus_and_attempt() -> None:
    request, _ = job_request(Job({"gpu": 2, "gpu_model": "a100"}, attempt=3))
    assert request.accelerator is not None
    assert (request.accelerator.count, request.accelerator.type) == (2, "a100")
    assert request.attempt == 3


def test_no_memory_gets_snakemakes_own_default(tmp_path: Path) -> None:
    data = tmp_path / "reads.fq"
    data.write_bytes(b"x" * 2_000_000)
    request, _ = job_request(Job({}, input=(str(data), str(tmp_path / "not-yet"))))
    assert request.input_bytes == 2_000_000
    assert request.memory == 1000 * MB  # max(2 * 2 MB, 1000 MB)
    assert default_memory(6000 * MB) == 8000 * MB  # capped as Snakemake caps it
    assert input_bytes([]) is None


def test_tiny_memory_is_raised_to_what_snakemake_needs_with_a_warning() -> None:
    request, warnings = job_request(Job({"mem_mb": 4}))  # meant as 4 GB
    assert request.memory == RUNNER_MEMORY
    assert any("check the unit" in w for w in warnings)
    assert any("raised from 3.81 MiB to 256 MiB" in w for w in warnings)


def test_bad_units_name_the_field() -> None:
    with pytest.raises(ResourceError, match="mem_mb"):
        job_request(Job({"mem_mb": "4 gb"}))
    with pytest.raises(ResourceError, match="threads"):
        job_request(Job({}, threads=-2))


def test_labels_name_rule_and_wildcards_or_the_group() -> None:
    job = Job({}, wildcards_dict={"sample": "a", "lane": "1"})
    assert task_labels(job) == {
        "snakemake/rule": "align", "snakemake/wildcard.sample": "a",
        "snakemake/wildcard.lane": "1",
    }  # fmt: skip
    assert task_labels(Job({}, group="qc")) == {"snakemake/group": "qc"}
    request, _ = job_request(Job({}, group="qc"))
    assert request.process == "qc"


@pytest.mark.parametrize(
    "given",
    [["project=x", "team=y"], "[project=x, team=y]", "['project=x', 'team=y']", "project=x,team=y"],
)
def test_labels_in_every_form_configargparse_hands_over(given: object) -> None:
    from snakemake_executor_plugin_seqera._configure import _labels

    assert _labels(given) == {"project": "x", "team": "y"}  # type: ignore[arg-type]


def test_the_rules_container_is_a_feature_of_the_request() -> None:
    request, _ = job_request(
        Job({"mem_mb": 1000}, container_img_url="docker://biocontainers/bwa:0.7")
    )
    assert request.container == "docker://biocontainers/bwa:0.7"
    assert job_request(Job({"mem_mb": 1000}))[0].container is None


@pytest.mark.parametrize("given", [["local", "slurm"], "['local', 'slurm']", "local,slurm"])
def test_route_backends_in_every_form_configargparse_hands_over(given: object) -> None:
    # CI's Snakemake handed `--seqera-route-backends local slurm` over as "['local', 'slurm']"
    from snakemake_executor_plugin_seqera._configure import _listed

    assert _listed(given) == ["local", "slurm"]  # type: ignore[arg-type]
