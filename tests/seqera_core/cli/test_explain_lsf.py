"""``seqera explain``/``validate`` with ``--backend lsf``: bsub's options in the site's unit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqera_core.cli import main

PLATFORMS = Path(__file__).parents[3] / "shared" / "platforms"


def test_explain_writes_limits_in_the_unit_lsf_conf_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lsf.conf").write_text("LSF_UNIT_FOR_LIMITS=MB\n")
    monkeypatch.setenv("LSF_ENVDIR", str(tmp_path))
    argv = ["explain", "--engine", "snakemake", "--set", "mem_mb=4000", "--set", "runtime=90",
            "--set", "threads=2", "--backend", "lsf", "--json"]  # fmt: skip
    assert main(argv) == 0
    native = json.loads(capsys.readouterr().out)["native"]
    # 4000 MB (10^6) = 3814.7 MiB, rounded up; -W in minutes
    assert native["args"] == ["-n", "2", "-R", "span[hosts=1]", "-R", "rusage[mem=3815]",
                              "-M", "3815", "-W", "90"]  # fmt: skip
    assert native["values"]["unit"] == "MB"


def test_explain_says_a_bad_site_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lsf.conf").write_text("LSF_UNIT_FOR_LIMITS=MiB\n")
    monkeypatch.setenv("LSF_ENVDIR", str(tmp_path))
    code = main(["explain", "--engine", "nextflow", "--memory", "1 GB", "--backend", "lsf"])
    assert code == 2
    assert "LSF_UNIT_FOR_LIMITS" in capsys.readouterr().err


def test_validate_against_the_lsf_platform(capsys: pytest.CaptureFixture[str]) -> None:
    platform = str(PLATFORMS / "lsf-cluster.yaml")
    argv = ["validate", "--platform", platform, "--engine", "nextflow", "--memory", "600 GB"]
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert "exceeds queue normal" in out and "queue bigmem allows 1.5 TiB" in out
