"""Slurm, PBS Pro, Torque, ECS and local native forms: published examples and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core.dialects import ecs, local, pbs, slurm
from seqera_core.errors import ResourceError
from seqera_core.models import Accelerator, ResourceRequest

GIB = 2**30
MIB = 2**20


def test_slurm_three_gib_is_3072m() -> None:
    assert slurm.format_memory(3 * GIB) == "3072M"
    args = slurm.submission(ResourceRequest(memory=3 * GIB)).args
    assert args == ("--mem=3072M",)


@pytest.mark.parametrize(
    ("text", "size"),
    [("3072M", 3 * GIB), ("3072", 3 * GIB), ("3G", 3 * GIB), ("3g", 3 * GIB), ("1T", 1024 * GIB),
     ("512K", 512 * 1024)],
)  # fmt: skip
def test_slurm_memory_forms(text: str, size: int) -> None:
    assert slurm.parse_memory(text) == size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 5400), ("5:30", 330), ("01:30:00", 5400), ("2-12", 216000), ("1-02:03", 93780),
     ("1-02:03:04", 93784), ("UNLIMITED", None), ("INFINITE", None)],
)  # fmt: skip
def test_slurm_time_forms(text: str, seconds: int | None) -> None:
    assert slurm.parse_time(text) == seconds


@pytest.mark.parametrize("text", ["1h", "1:2:3:4", "-5", "", "1-", "4 GB"])
def test_slurm_time_rejects(text: str) -> None:
    with pytest.raises(ResourceError, match="--time"):
        slurm.parse_time(text)


@given(st.integers(min_value=1, max_value=10**9))
def test_slurm_time_rounds_up_to_minutes(seconds: int) -> None:
    parsed = slurm.parse_time(slurm.format_time(seconds))
    assert parsed is not None and seconds <= parsed < seconds + 60


@given(st.integers(min_value=1, max_value=2**50))
def test_slurm_memory_never_below(size: int) -> None:
    parsed = slurm.parse_memory(slurm.format_memory(size))
    assert size <= parsed < size + MIB
    if size % MIB == 0:
        assert parsed == size


def test_slurm_full_submission() -> None:
    request = ResourceRequest(
        cpus=1.5,
        memory=4 * GIB,
        time=5401,
        disk=10 * GIB,
        accelerator=Accelerator(2, "a100"),
        queue="gpu",
        account="lab",
        extra={"slurm.qos": "high", "slurm.extra": "--mail-type=END --exclusive"},
    )
    assert slurm.submission(request).args == (
        "--cpus-per-task=2",
        "--mem=4096M",
        "--time=91",
        "--tmp=10240M",
        "--gres=gpu:a100:2",
        "--partition=gpu",
        "--account=lab",
        "--mail-type=END",
        "--exclusive",
        "--qos=high",
    )


def test_slurm_extra_option_names_are_checked() -> None:
    with pytest.raises(ResourceError, match="slurm"):
        slurm.submission(ResourceRequest(extra={"slurm.x; rm -rf": "1"}))


@pytest.mark.parametrize(
    ("text", "size"),
    [("4096mb", 4 * GIB), ("4gb", 4 * GIB), ("4GB", 4 * GIB), ("100", 100), ("100b", 100),
     ("1kw", 8192), ("2tb", 2 * 1024 * GIB)],
)  # fmt: skip
def test_pbs_sizes(text: str, size: int) -> None:
    assert pbs.parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("01:30:00", 5400), ("48:00:00", 172800), ("90:00", 5400), ("5400", 5400), ("00:00:01.5", 2)],
)
def test_pbs_walltime(text: str, seconds: int) -> None:
    assert pbs.parse_walltime(text) == seconds


@given(st.integers(min_value=0, max_value=10**9))
def test_pbs_walltime_round_trips(seconds: int) -> None:
    assert pbs.parse_walltime(pbs.format_walltime(seconds)) == seconds


@given(st.integers(min_value=1, max_value=2**50))
def test_pbs_size_never_below(size: int) -> None:
    assert size <= pbs.parse_size(pbs.format_size(size)) < size + MIB


def test_pbs_pro_and_torque_submissions() -> None:
    request = ResourceRequest(
        cpus=2, memory=3 * GIB, time=5400, accelerator=Accelerator(1), queue="workq", account="p1"
    )
    assert pbs.pro_submission(request).args == (
        "-l", "select=1:ncpus=2:mem=3072mb:ngpus=1", "-l", "walltime=01:30:00",
        "-q", "workq", "-A", "p1",
    )  # fmt: skip
    assert pbs.torque_submission(request).args == (
        "-l", "nodes=1:ppn=2:gpus=1,mem=3072mb,walltime=01:30:00", "-q", "workq", "-A", "p1",
    )  # fmt: skip


def test_pbs_disk_is_reported_not_dropped_silently() -> None:
    result = pbs.pro_submission(ResourceRequest(disk=GIB))
    assert any("disk" in note for note in result.notes)


def test_ecs_units() -> None:
    request = ResourceRequest(
        cpus=1.25, memory=1001 * MIB + 1, disk=100 * GIB, time=60, accelerator=Accelerator(1)
    )
    native = ecs.submission(request).native
    assert native["cpu"] == "1280"
    assert native["memory"] == "1002"
    assert native["storageSizeGiB"] == 100
    assert native["resourceRequirements"] == [{"type": "GPU", "value": "1"}]
    assert native["timeoutSeconds"] == 60


def test_ecs_storage_limits() -> None:
    assert ecs.storage_gib(1) == ecs.MIN_STORAGE_GIB
    with pytest.raises(ResourceError, match="16384"):
        ecs.storage_gib(16385 * GIB)


@given(st.floats(min_value=0.001, max_value=192, allow_nan=False))
def test_ecs_cpu_never_below(cpus: float) -> None:
    assert ecs.cpu_units(cpus) >= cpus * 1024


def test_local_rounds_cores_up() -> None:
    assert local.submission(ResourceRequest(cpus=1.25, memory=5)).native == {
        "cpus": 2,
        "memory_bytes": 5,
    }
