"""snakemake-executor-plugin-lsf's resource names (0.3, ``__init__.py`` ``run_job``,
``get_span``, ``docs/further.md``) read into the common request and written as bsub options."""

from __future__ import annotations

import pytest

from seqera_core.dialects import lsf
from seqera_core.dialects.snakemake import request_from_resources
from seqera_core.errors import ResourceError
from seqera_core.models import ResourceRequest
from seqera_core.units import MB


def test_snakemake_reads_the_lsf_plugins_names() -> None:
    translation = request_from_resources(
        {"mem_mb": 1000, "lsf_queue": "long", "lsf_project": "genomics",
         "lsf_extra": "-R 'select[a100]' -gpu num=2", "time_min": 90},
        threads=2,
    )  # fmt: skip
    request = translation.request
    assert translation.ignored == ()
    assert (request.queue, request.account, request.time) == ("long", "genomics", 90 * 60)
    args = lsf.submission(request, unit="MB").args
    assert args[:4] == ("-n", "2", "-R", "span[hosts=1]")
    assert args[-8:] == ("-q", "long", "-P", "genomics", "-R", "select[a100]", "-gpu", "num=2")
    # a Slurm or Grid Engine name given too wins, as for sge_queue
    both = request_from_resources({"lsf_queue": "long", "slurm_partition": "p",
                                   "lsf_project": "x", "sge_project": "y"}).request  # fmt: skip
    assert (both.queue, both.account) == ("p", "y")


def test_runtime_and_walltime_win_over_time_min() -> None:
    assert request_from_resources({"runtime": 5, "time_min": 90}).request.time == 300
    assert request_from_resources({"walltime": 7, "time_min": 90}).request.time == 420
    for bad in ("1.5", "90m", -1):
        with pytest.raises(ResourceError, match="time_min"):
            request_from_resources({"time_min": bad})


@pytest.mark.parametrize(
    ("resources", "span"),
    [({"span": "ptile=4"}, "ptile=4"), ({"ptile": 8}, "ptile=8"),
     ({"cpus_per_node": 6}, "ptile=6"), ({"span": "block=2", "ptile": 8}, "block=2"),
     ({}, "hosts=1")],
)  # fmt: skip
def test_an_mpi_rules_placement_replaces_one_host(resources: dict[str, object], span: str) -> None:
    translation = request_from_resources({"mpi": "mpirun", "tasks": 8, **resources}, threads=8)
    assert translation.ignored == ()
    args = lsf.submission(translation.request).args
    assert args[:4] == ("-n", "8", "-R", f"span[{span}]")


def test_placement_without_mpi_is_named_as_not_read() -> None:
    # the LSF plugin reads span/ptile/cpus_per_node only for an MPI rule
    translation = request_from_resources({"ptile": 4, "span": "ptile=2"}, threads=4)
    assert translation.ignored == ("ptile", "span")
    assert "span[hosts=1]" in lsf.submission(translation.request).args


def test_bad_placement_names_the_key() -> None:
    with pytest.raises(ResourceError, match=r"span.*LSF span string"):
        request_from_resources({"mpi": "mpirun", "tasks": 2, "span": "hosts=2]; rm"})
    with pytest.raises(ResourceError, match="ptile"):
        request_from_resources({"mpi": "mpirun", "tasks": 2, "ptile": "four"})
    with pytest.raises(ResourceError, match=r"lsf\.span"):
        lsf.submission(ResourceRequest(cpus=1, extra={"lsf.span": "nonsense"}))


def test_memory_per_cpu_times_the_cores_is_the_jobs() -> None:
    request = request_from_resources({"mem_mb_per_cpu": 100, "mem_mb": 1000}, threads=3).request
    submission = lsf.submission(request, unit="MB")
    # 3 x 100 MB = 300e6 bytes, 286.1 MiB: 287 MB (LSF's MB is 2^20), rounded up
    assert submission.args[4:8] == ("-R", "rusage[mem=287]", "-M", "287")
    assert any("memory per CPU replaces" in note for note in submission.notes)
    assert -(-3 * 100 * MB // 2**20) == 287


@pytest.mark.parametrize("extra", ["-o /elsewhere", "-J other", "-cwd /tmp", "-R 'a"])
def test_lsf_extra_is_checked(extra: str) -> None:
    with pytest.raises(ResourceError, match="lsf_extra"):
        lsf.submission(ResourceRequest(extra={"lsf.extra": extra}))


def test_an_unknown_lsf_extra_key_is_refused_by_name() -> None:
    with pytest.raises(ResourceError, match=r"lsf\.queue.*lsf\.extra or lsf\.span"):
        lsf.submission(ResourceRequest(extra={"lsf.queue": "x"}))
