"""Defect 11 for ``slurm_extra``: ``explain`` and ``validate`` refuse one sbatch could never
take (unbalanced quotes, an option seqera sets itself) with exit 2 and the field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.cli import main

SLURM = str(Path(__file__).parents[3] / "shared" / "platforms" / "slurm-cluster.yaml")


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_PLATFORM", "SEQERA_BACKEND", "SEQERA_LABELS", "SEQERA_AUTO_LABELS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


COMMANDS = [
    ["explain", "--backend", "slurm"],
    ["validate", "--platform", SLURM],
]


@pytest.mark.parametrize("command", COMMANDS, ids=["explain", "validate"])
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("--qos='high", "no closing quotation"),
        ('--mail-user="a b', "no closing quotation"),
        ("--comment=x", "other than --comment"),
    ],
)
def test_a_bad_slurm_extra_exits_2_naming_the_field(
    command: list[str], extra: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*command, "--engine", "snakemake", "--set", "mem_mb=100"]
    assert main([*argv, "--set", f"slurm_extra={extra}"]) == 2
    err = capsys.readouterr().err
    assert "slurm_extra" in err and expected in err and "Traceback" not in err
    # the same command with a good one is accepted
    assert main([*argv, "--set", "slurm_extra=--qos=high --exclusive"]) == 0
