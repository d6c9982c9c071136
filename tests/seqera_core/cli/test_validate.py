"""``seqera validate``: the report, exit 2 on errors, and the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seqera_core.cli import main

PLATFORMS = Path(__file__).parents[3] / "shared" / "platforms"
SLURM = str(PLATFORMS / "slurm-cluster.yaml")
EXAMPLE = ["validate", "--platform", SLURM, "--engine", "snakemake", "--set", "mem_mb=900000"]


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The developer's own ~/.config/seqera and SEQERA_* variables must not leak in.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_PLATFORM", "SEQERA_BACKEND", "SEQERA_LABELS", "SEQERA_AUTO_LABELS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_the_readme_example_exits_2_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(EXAMPLE) == 2
    assert capsys.readouterr().out.splitlines() == [
        f"platform example-hpc (slurm, {SLURM})",
        "error: memory 838.19 GiB exceeds queue normal (512 GiB)",
        "suggestion: queue hugemem allows 1.5 TiB for memory: ask for it by name",
    ]


def test_naming_the_suggested_queue_makes_it_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*EXAMPLE, "--set", "slurm_partition=hugemem", "--set", "runtime=60"]) == 0
    out = capsys.readouterr().out
    assert "queue: hugemem" in out
    assert "effective: memory=838.19 GiB time=1h queue=hugemem" in out
    # one core (the scheduler's default) at 0.04 and 838.19 GiB at 0.008 for one hour
    assert "cost: 6.7455 per hour, 6.7455 for the job" in out


def test_warnings_alone_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["validate", "--platform", SLURM, "--engine", "snakemake", "--set", "mem_mb=4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "warning: memory is only 3.81 MiB: check the unit" in out
    assert "warning: no time given: queue short's limit 4h applies" in out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["validate", "--platform", SLURM, "--engine", "cwl", "--set", "ramMin=2048",
            "--set", "coresMin=0.5", "--set", "timelimit=600", "--json"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["platform"] == "example-hpc" and doc["queue"] == "short" and doc["errors"] == []
    assert doc["request"]["memory_bytes"] == 2 * 2**30 and doc["request"]["queue"] == "short"
    assert doc["estimated_cost"] == pytest.approx((0.5 * 0.015 + 2 * 0.003) / 6)


def test_the_platform_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEQERA_PLATFORM", str(PLATFORMS / "pbs-cluster.yaml"))
    assert main(["validate", "--engine", "nextflow", "--memory", "2 TB"]) == 2
    assert "exceeds every queue of example-pbs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--engine", "nextflow"], "--platform: no platform given"),
        (["--engine", "nextflow", "--platform", "missing.yaml"], "--platform: 'missing.yaml'"),
        (["--engine", "nextflow", "--platform", SLURM, "--memory", "4 GiB"], "memory: '4 GiB'"),
        (["--engine", "snakemake", "--platform", SLURM, "--set", "mem_mb"], "--set: 'mem_mb'"),
    ],
)
def test_invalid_input_exits_2_naming_the_field(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["validate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_malformed_platform_names_file_field_value_and_forms(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("scheduler: slurm\nqueues:\n  q: {max_walltime: 7 days}\n")
    assert main(["validate", "--platform", str(path), "--engine", "nextflow"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: queues.q.max_walltime: '7 days' is not valid; expected" in err
    assert "1h30m" in err


def test_the_installed_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "seqera"
    done = subprocess.run(
        [str(script), *EXAMPLE], capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "suggestion: queue hugemem allows 1.5 TiB" in done.stdout
