"""``seqera config``: the merged settings, one row per setting and per label, with sources."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seqera_core.cli import main


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user = tmp_path / "xdg" / "seqera"
    user.mkdir(parents=True)
    (user / "config.yaml").write_text("backend: slurm\nlabels: {team: genomics}\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "seqera.yaml").write_text("platform: site.yaml\nresolver: {token: s3cret}\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_PLATFORM", "SEQERA_LABELS", "SEQERA_AUTO_LABELS", "SEQERA_RESOLVER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEQERA_BACKEND", "pbs")
    monkeypatch.chdir(work)
    return tmp_path


def test_rows_and_sources(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--label", "run=r1"]) == 0
    user = str(project / "xdg" / "seqera" / "config.yaml")
    work = project / "work"
    lines = capsys.readouterr().out.splitlines()
    rows = {}
    for line in lines:
        match = re.fullmatch(r"(\S+) +(\S+) +\((.+)\)", line)
        assert match, line
        rows[match[1]] = (json.loads(match[2]), match[3])
    assert rows == {
        "auto_labels": ("all", "default"),
        "backend": ("pbs", "$SEQERA_BACKEND"),
        "labels.run": ("r1", "command line"),
        "labels.team": ("genomics", user),
        "platform": (str(work / "site.yaml"), str(work / "seqera.yaml")),
        "resolver.token": ("***", str(work / "seqera.yaml")),
    }
    assert len({line.index("(") for line in lines}) == 1  # the sources line up


def test_json_and_flags(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--json", "--backend", "torque"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == {"value": "torque", "source": "command line"}
    assert doc["resolver.token"]["value"] == "***"
    assert doc["labels.team"]["value"] == "genomics"


def test_a_bad_setting_exits_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "work" / "seqera.yaml").write_text("backend: condor\n")
    assert main(["config"]) == 2
    assert "backend: 'condor' is not valid; expected one of local, slurm" in capsys.readouterr().err
