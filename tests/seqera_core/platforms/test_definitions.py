"""Platform definitions: loading, queue selection, and every validation message."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import pytest

from seqera_core import Accelerator, ResourceError, ResourceLimits, ResourceRequest
from seqera_core.cli import main
from seqera_core.platforms import load, parse, validate

GIB = 2**30
PLATFORMS = Path(__file__).parents[3] / "shared" / "platforms"
SLURM = load(PLATFORMS / "slurm-cluster.yaml")


@pytest.mark.parametrize("name", ["slurm-cluster", "pbs-cluster", "ecs-account", "batch-account"])
def test_examples_load(name: str) -> None:
    platform = load(PLATFORMS / f"{name}.yaml")
    assert platform.queues and platform.scheduler in ("slurm", "pbs", "sge", "ecs", "batch")


def test_units_in_the_example() -> None:
    normal = SLURM.queue("normal")
    assert normal is not None
    assert (normal.max_memory, normal.max_walltime, normal.max_cpus) == (512 * GIB, 7 * 86400, 128)
    hugemem = SLURM.queue("hugemem")
    assert hugemem is not None and hugemem.max_memory == 1536 * GIB and not hugemem.auto


def test_cheapest_fitting_queue_is_chosen() -> None:
    report = validate(SLURM, ResourceRequest(cpus=2, memory=8 * GIB, time=3600))
    assert report.ok and report.queue == "short" and report.request.queue == "short"
    assert report.hourly_cost == pytest.approx(2 * 0.015 + 8 * 0.003)
    assert report.estimated_cost == pytest.approx(report.hourly_cost)
    longer = validate(SLURM, ResourceRequest(cpus=2, memory=8 * GIB, time=5 * 3600))
    assert longer.queue == "normal"  # short allows 4h


def test_gpus_go_to_the_gpu_queue() -> None:
    report = validate(SLURM, ResourceRequest(cpus=4, accelerator=Accelerator(2), time=3600))
    assert report.queue == "gpu"


def test_too_much_for_the_default_suggests_the_opt_in_queue() -> None:
    report = validate(SLURM, ResourceRequest(memory=600 * GIB))
    assert report.errors == ("memory 600 GiB exceeds queue normal (512 GiB)",)
    assert report.suggestions == ("queue hugemem allows 1.5 TiB for memory: ask for it by name",)
    assert report.queue is None


def test_named_queue_too_small() -> None:
    report = validate(SLURM, ResourceRequest(cpus=200, queue="short", time=3600))
    assert report.errors == ("cpus 200 exceeds queue short (32)",)
    assert report.suggestions == ()  # no queue allows 200 cpus


def test_named_queue_that_fits_is_used_even_if_not_automatic() -> None:
    report = validate(SLURM, ResourceRequest(memory=900 * GIB, queue="hugemem", time=3600))
    assert report.ok and report.queue == "hugemem"


def test_unknown_queue() -> None:
    report = validate(SLURM, ResourceRequest(queue="nope"))
    assert report.errors == (
        "queue 'nope' does not exist on example-hpc; its queues are short, normal, hugemem, gpu",
    )


def test_more_than_any_queue() -> None:
    report = validate(SLURM, ResourceRequest(memory=2048 * GIB))
    assert "memory 2 TiB exceeds every queue of example-hpc (the largest, hugemem, allows " \
        "1.5 TiB)" in report.errors  # fmt: skip


def test_walltime_over_every_queue() -> None:
    report = validate(SLURM, ResourceRequest(time=30 * 86400))
    assert any("time 30d exceeds" in e for e in report.errors)


def test_warnings_for_missing_time_and_limits() -> None:
    request = ResourceRequest(cpus=64, resource_limits=ResourceLimits(cpus=16))
    report = validate(SLURM, request)
    assert report.ok and report.request.cpus == 16
    assert "cpus 64 capped to the resource limit 16" in report.warnings
    assert any(w.startswith("no time given") for w in report.warnings)


def test_multipliers_round_up() -> None:
    platform = parse({"scheduler": "slurm", "multipliers": {"memory": 1.1},
                      "queues": {"q": {"max_memory": "100 GiB"}}})  # fmt: skip
    report = validate(platform, ResourceRequest(memory=10 * GIB))
    assert report.request.memory == 11 * GIB
    assert "memory 10 GiB x 1.1 (platform multiplier) = 11 GiB" in report.warnings


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"scheduler": "condor", "queues": {"q": {}}}, "scheduler"),
        ({"scheduler": "slurm"}, "queues"),
        ({"scheduler": "slurm", "queues": {"q": {"max_memory": "512 gb"}}}, "max_memory"),
        ({"scheduler": "slurm", "queues": {"q": {"max_memory": 512}}}, "max_memory"),
        ({"scheduler": "slurm", "queues": {"q": {"max_walltime": "7 days"}}}, "max_walltime"),
        ({"scheduler": "slurm", "queues": {"q": {"max_cpus": -1}}}, "max_cpus"),
        ({"scheduler": "slurm", "queues": {"q": {"max_mem": "1 GiB"}}}, "max_mem"),
        ({"scheduler": "slurm", "queues": {"q": {}}, "default_queue": "x"}, "default_queue"),
        ({"scheduler": "slurm", "queues": {"q": {"max_cpus": float("nan")}}}, "max_cpus"),
        ({"scheduler": "slurm", "queues": {"q": {"max_cpus": 0}}}, "max_cpus"),
        ({"scheduler": "slurm", "queues": {"q": {"max_gpus": 1.5}}}, "max_gpus"),
        ({"scheduler": "slurm", "queues": {"q": {"max_walltime": 3600}}}, "max_walltime"),
        ({"scheduler": "slurm", "queues": {"q": {"auto": "no"}}}, "auto"),
        ({"scheduler": "slurm", "queues": {"q": {"cost": {"core_hour": -1}}}}, "cost.core_hour"),
        ({"scheduler": "slurm", "queues": {"q": {"cost": {"gb_hour": 1}}}}, "cost.gb_hour"),
        ({"scheduler": "slurm", "queues": {"q": {}}, "multipliers": {"memory": 0.9}}, "memory"),
        ({"scheduler": "slurm", "queues": {"q": {}}, "multipliers": {"memory": "10%"}}, "memory"),
        ({"scheduler": "slurm", "queues": {"q": {}}, "multipliers": {"disk": 2}}, "disk"),
        ({"scheduler": "slurm", "queues": {"q": {}}, "name": ["x"]}, "name"),
        (["scheduler", "slurm"], "platform"),
    ],
)
def test_bad_definitions_name_file_field_and_value(document: Any, field: str) -> None:
    with pytest.raises(ResourceError) as info:
        parse(document, "site.yaml")
    assert info.value.field.startswith("site.yaml: ") and field in info.value.field
    assert "expected" in str(info.value)


def test_multiplier_forms() -> None:
    platform = parse({"scheduler": "slurm", "multipliers": {"memory": "+10%", "time": 2},
                      "queues": {"q": {}}})  # fmt: skip
    assert (platform.multipliers.memory, platform.multipliers.time) == (1.1, 2.0)
    assert platform.multipliers.factor("memory") == Fraction(11, 10)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


def test_clock_walltimes_are_not_read_as_base_60_numbers(tmp_path: Path) -> None:
    # YAML 1.1 reads an unquoted 168:00:00 as the integer 604800; a platform file means
    # 168 hours, so the loader keeps it a string for the duration parser.
    path = write(tmp_path, "scheduler: pbs\nqueues:\n  long: {max_walltime: 168:00:00}\n")
    queue = load(path).queue("long")
    assert queue is not None and queue.max_walltime == 168 * 3600


def test_a_bare_number_for_a_size_names_file_field_value_and_forms(tmp_path: Path) -> None:
    path = write(tmp_path, "scheduler: slurm\nqueues:\n  q: {max_memory: 512}\n")
    with pytest.raises(ResourceError) as info:
        load(path)
    message = str(info.value)
    assert f"{path}: queues.q.max_memory: 512 is not valid" in message and "GiB" in message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("scheduler: slurm\nqueues:\n  q: {}\n  q: {max_cpus: 2}\n", "line 4"),
        ("scheduler: slurm\nqueues: [\n", "line 3"),
    ],
)
def test_duplicate_keys_and_broken_yaml_name_the_line(
    tmp_path: Path, text: str, where: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ResourceError, match=f"{path}: {where}"):
        load(path)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match="--platform"):
        load(tmp_path / "nope.yaml")


def test_loaded_platforms_are_immutable() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        SLURM.queues[0].max_cpus = 1  # type: ignore[misc]


def test_validate_command_exits_2_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["validate", "--platform", str(PLATFORMS / "slurm-cluster.yaml"),
            "--engine", "snakemake", "--set", "mem_mb=900000"]  # fmt: skip
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert "error: memory 838.19 GiB exceeds queue normal (512 GiB)" in out
    assert "suggestion: queue hugemem allows 1.5 TiB" in out


def test_validate_command_ok_and_console_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "validate", "--platform",
         str(PLATFORMS / "pbs-cluster.yaml"), "--engine", "nextflow", "--memory", "8 GB",
         "--time", "30m", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"queue": "express"' in done.stdout or '"queue": "workq"' in done.stdout


def test_explain_with_a_platform_shows_queue_and_cost(capsys: pytest.CaptureFixture[str]) -> None:
    platform = str(PLATFORMS / "slurm-cluster.yaml")
    argv = ["explain", "--platform", platform, "--engine", "nextflow", "--memory", "8 GB",
            "--cpus", "4", "--time", "2h", "--backend", "slurm"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "--partition=short" in out and "queue: short" in out
    assert "cost: 0.0840 per hour, 0.1680 for the job" in out
