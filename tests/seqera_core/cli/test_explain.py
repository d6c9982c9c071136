"""``seqera explain``: canonical request and native submission, text and JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seqera_core.cli import main
from tests.conftest import require


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["explain", *argv, "--json"]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_nextflow_to_slurm(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--engine", "nextflow", "--memory", "1.5 GB", "--time", "1h 30m", "--cpus", "2",
        "--backend", "slurm",
    )  # fmt: skip
    assert doc["request"] == {
        "cpus": 2,
        "memory_bytes": 1610612736,
        "time_seconds": 5400,
        "attempt": 1,
    }
    assert doc["native"] == {
        "args": ["--cpus-per-task=2", "--mem=1536M", "--time=90"],
        "values": {"cpus_per_task": 2, "mem": "1536M", "time_minutes": 90},
    }


def test_snakemake_to_pbs(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--engine", "snakemake", "--set", "mem_mb=4000", "--set", "runtime=90",
        "--backend", "pbs",
    )  # fmt: skip
    assert doc["request"] == {"memory_bytes": 4 * 10**9, "time_seconds": 5400, "attempt": 1}
    native = doc["native"]
    assert isinstance(native, dict)
    assert native["args"] == ["-l", "select=1:mem=3815mb", "-l", "walltime=01:30:00"]


def test_cwl_to_ecs(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--engine", "cwl", "--set", "ramMin=1000.5", "--set", "coresMin=1.25",
        "--backend", "ecs",
    )  # fmt: skip
    request = doc["request"]
    assert isinstance(request, dict)
    assert request["cpus"] == 1.25 and request["memory_bytes"] == 1001 * 2**20
    native = doc["native"]
    assert isinstance(native, dict)
    assert native["values"]["cpu"] == "1280" and native["values"]["memory"] == "1001"


def test_limits_and_warnings_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--engine", "nextflow", "--memory", "16 GB", "--set", "resourceLimits.memory=8 GB",
    )  # fmt: skip
    assert doc["capped"] == ["memory 16 GiB capped to the resource limit 8 GiB"]
    doc = _json(capsys, "--engine", "snakemake", "--set", "mem_mb=4", "--set", "mem_gb=4")
    warnings = doc["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 2
    assert "4 MB, not 4 GB" in warnings[0] and "mem_gb" in warnings[1]


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--engine", "nextflow", "--memory", "4 gb"], "memory"),
        (["--engine", "nextflow", "--cpus", "-2"], "cpus"),
        (["--engine", "snakemake", "--set", "mem_mb=4GB"], "mem_mb"),
        (["--engine", "cwl", "--set", "ramMin=-1"], "ramMin"),
        (["--engine", "nextflow", "--time", "1 hr"], "time"),
    ],
)
def test_invalid_input_exits_2_naming_the_field(
    capsys: pytest.CaptureFixture[str], argv: list[str], field: str
) -> None:
    assert main(["explain", *argv]) == 2
    err = capsys.readouterr().err
    assert f"error: {field}:" in err and "expected" in err


def test_console_script_as_a_user_runs_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "explain", "--engine", "nextflow",
         "--memory", "1.5 GB", "--time", "1h 30m", "--cpus", "2", "--backend", "slurm"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "sbatch --cpus-per-task=2 --mem=1536M --time=90" in done.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "explain", "--engine", "nextflow",
         "--memory", "4 GiB"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and "memory: '4 GiB'" in bad.stderr


def test_an_installed_resolver_gives_the_effective_values(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require("seqera_test_resolver", "the test plugin package is installed by the core session")
    monkeypatch.setenv("SEQERA_TEST_RESOLVER", "1")
    doc = _json(capsys, "--engine", "nextflow", "--memory", "2 GB", "--backend", "slurm",
                "--label", "team=genomics")  # fmt: skip
    assert doc["resolver"] == "doubling"
    assert doc["request"] == {"memory_bytes": 2 * 2**30, "attempt": 1}  # declared, kept
    effective = doc["effective"]
    assert isinstance(effective, dict) and effective["memory_bytes"] == 4 * 2**30
    native = doc["native"]
    assert isinstance(native, dict) and "--mem=4096M" in native["args"]
    assert doc["labels"] == "--comment=nextflow/engine=nextflow;team=genomics"


def test_ecs_shows_the_instance_type_and_its_price(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--engine", "nextflow", "--memory", "10 GB", "--cpus", "2", "--backend", "ecs"
    )
    # the shipped catalogue: r7i.large (2 vCPUs, 16 GiB) is the cheapest with 10 GiB
    assert doc["instance"] == {
        "type": "r7i.large",
        "hourly_price": 0.1323,
        "catalogue": "seqera_core/data/ec2-us-east-1-2026-11.yaml",
    }
    assert main(["explain", "--engine", "nextflow", "--cpus", "2", "--backend", "ecs"]) == 0
    assert "instance: c7i.large at 0.0893 per hour" in capsys.readouterr().out


def test_ecs_machine_type_too_small_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "explain",
        "--engine",
        "nextflow",
        "--memory",
        "10 GB",
        "--set",
        "machineType=m7i.large",
    ]
    assert main([*argv, "--backend", "ecs"]) == 2
    assert "m7i.large lacks 10 GiB memory (it has 8 GiB)" in capsys.readouterr().err


def test_ecs_instance_comes_from_an_ecs_platform(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--engine", "nextflow", "--memory", "10 GB", "--cpus", "2", "--backend", "ecs",
        "--platform", "shared/platforms/ecs-account.yaml",
    )  # fmt: skip
    assert doc["instance"] == {
        "type": "m7i.xlarge",
        "hourly_price": 0.2016,
        "catalogue": "shared/platforms/ecs-account.yaml",
    }
    assert (
        _json(capsys, "--engine", "nextflow", "--cpus", "2", "--backend", "slurm")["instance"]
        is None
    )


def test_squash_says_what_would_share_and_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["--engine", "snakemake", "--set", "mem_mb=300", "--backend", "slurm"]
    squashed = _json(capsys, *base, "--set", "runtime=5", "--squash", "squash")["squash"]
    assert isinstance(squashed, dict) and squashed["how"] == "squash"
    alone = _json(capsys, *base, "--squash", "squash")["squash"]
    assert isinstance(alone, dict) and alone["how"] == "alone"
    assert "no time limit" in alone["why"]
    assert _json(capsys, *base)["squash"] is None  # off unless asked for
    # the platform's policy applies when no flag or setting overrides it
    platform = tmp_path / "site.yaml"
    platform.write_text(
        "scheduler: slurm\nqueues: {main: {max_cpus: 8}}\nsquash: {mode: squash, max_time: 10m}\n"
    )
    monkeypatch.chdir(tmp_path)
    long = _json(capsys, *base, "--set", "runtime=30", "--platform", str(platform))["squash"]
    assert isinstance(long, dict) and long["how"] == "alone"
    assert "squash.max_time (600 s)" in long["why"]
    assert main(["explain", *base, "--set", "runtime=5", "--squash", "array"]) == 0
    assert "array: goes out as one element of an array" in capsys.readouterr().out


def test_snakemake_without_memory_shows_what_the_executor_submits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `snakemake --executor seqera` submits Snakemake's default (1000 MB without input).
    doc = _json(capsys, "--engine", "snakemake", "--set", "threads=2", "--backend", "slurm")
    effective = doc["effective"]
    assert isinstance(effective, dict) and effective["memory_bytes"] == 1000 * 10**6
    assert doc["native"]["args"][1] == "--mem=954M"  # type: ignore[index]
    assert any("Snakemake's default" in note for note in doc["notes"])  # type: ignore[union-attr]
