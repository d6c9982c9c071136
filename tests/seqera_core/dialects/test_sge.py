"""Grid Engine's native forms (``man sge_types``), the Snakemake names of
snakemake-executor-plugin-sge, and ``seqera explain --backend sge``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqera_core import platforms
from seqera_core.cli import main
from seqera_core.dialects import sge
from seqera_core.dialects.snakemake import request_from_resources
from seqera_core.errors import ResourceError
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.units import GIB, MIB

ROOT = Path(__file__).parents[3]


def test_memory_is_divided_per_slot_and_rounded_up() -> None:
    # 1000 MB over 3 slots: 953.67 MiB / 3 = 317.9 MiB: 318M each, never less in total
    request = ResourceRequest(cpus=2.5, memory=10**9, time=61)
    done = sge.submission(request)
    assert done.args == ("-pe", "smp", "3", "-l", "h_rt=0:01:01,h_vmem=318M")
    assert 318 * 3 * MIB >= 10**9
    assert any("per slot" in note for note in done.notes)


def test_one_slot_asks_for_no_parallel_environment() -> None:
    done = sge.submission(ResourceRequest(cpus=1, memory=GIB))
    assert done.args == ("-l", "h_vmem=1024M")


def test_the_sites_names_are_used() -> None:
    request = ResourceRequest(cpus=4, memory=8 * GIB, accelerator=Accelerator(2, "a100"))
    done = sge.submission(request, memory="m_mem_free", pe="threads", gpu="gpus")
    assert done.args == ("-pe", "threads", "4", "-l", "m_mem_free=2048M,gpus=2")
    assert any("a100" in note for note in done.notes)
    with pytest.raises(ResourceError, match=r"sge\.pe"):
        sge.submission(request, pe="smp 4")


@pytest.mark.parametrize(
    ("text", "size"),
    [("2G", 2 * GIB), ("2g", 2 * 10**9), ("500M", 500 * MIB), ("1.5K", 1536), ("7", 7)],
)
def test_sizes(text: str, size: int) -> None:
    assert sge.parse_size(text) == size


def test_times_and_bad_values_name_the_field() -> None:
    assert sge.parse_time("1:30:00") == 5400 and sge.parse_time("90:00") == 5400
    assert sge.parse_time(sge.format_time(100000)) == 100000
    with pytest.raises(ResourceError, match="h_rt"):
        sge.parse_time("1h")
    with pytest.raises(ResourceError, match="h_vmem"):
        sge.parse_size("2 GB")


def test_snakemake_reads_the_sge_plugins_names() -> None:
    translation = request_from_resources({
        "mem_mb": 1000, "sge_queue": "long.q", "sge_project": "genomics", "sge_pe": "mpi",
        "sge_extra": "-l scratch=1G",
    }, threads=2)  # fmt: skip
    request = translation.request
    assert translation.ignored == ()
    assert (request.queue, request.account) == ("long.q", "genomics")
    args = sge.submission(request).args
    assert args[:3] == ("-pe", "mpi", "2")
    assert args[-6:] == ("-q", "long.q", "-P", "genomics", "-l", "scratch=1G")
    # a Slurm partition named too wins the queue, as the slurm plugin reads it
    both = request_from_resources({"sge_queue": "long.q", "slurm_partition": "p"}).request
    assert both.queue == "p"


def test_sge_extra_is_checked() -> None:
    request = ResourceRequest(extra={"sge.extra": "-wd /tmp"})
    with pytest.raises(ResourceError, match="sge_extra"):
        sge.submission(request)
    with pytest.raises(ResourceError, match="sge_extra"):
        sge.submission(ResourceRequest(extra={"sge.extra": "-l 'a=1"}))


def test_explain_uses_the_platforms_site_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = ROOT / "shared" / "platforms" / "sge-cluster.yaml"
    site = tmp_path / "site.yaml"
    site.write_text(path.read_text().replace("memory: h_vmem", "memory: h_rss"))
    argv = ["explain", "--engine", "snakemake", "--set", "mem_mb=4000", "--set", "threads=4",
            "--set", "runtime=90", "--label", "team=a", "--json"]  # fmt: skip
    assert main([*argv, "--platform", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == "sge"  # the platform's scheduler
    assert doc["native"]["args"] == ["-pe", "smp", "4", "-l", "h_rt=1:30:00,h_vmem=954M",
                                     "-q", "all.q"]  # fmt: skip
    assert "team=a" in doc["labels"] and doc["labels"].startswith("-ac ")
    assert main([*argv, "--platform", str(site)]) == 0
    assert "h_rss=954M" in json.loads(capsys.readouterr().out)["native"]["args"][4]


def test_the_example_platform_loads() -> None:
    platform = platforms.load(ROOT / "shared" / "platforms" / "sge-cluster.yaml")
    assert platform.scheduler == "sge"
    assert platform.settings == {"memory": "h_vmem", "pe": "smp", "gpu": "gpu"}
    with pytest.raises(ResourceError, match="settings"):
        platforms.parse({"scheduler": "sge", "queues": {"q": {}}, "settings": {"pe": 4}})
