"""``seqera explain --platform/--label``: queue, effective values, labels, cost, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seqera_core.cli import main
from seqera_core.labels import decode_labels

PLATFORMS = Path(__file__).parents[3] / "shared" / "platforms"


@pytest.fixture(autouse=True)
def clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("SEQERA_PLATFORM", "SEQERA_BACKEND", "SEQERA_LABELS", "SEQERA_AUTO_LABELS",
                 "SEQERA_RESOLVER_URL", "SEQERA_TEST_RESOLVER"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def explain(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> dict[str, Any]:
    assert main(["explain", *argv, "--json"]) == status
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_the_platform_chooses_backend_queue_and_cost(capsys: pytest.CaptureFixture[str]) -> None:
    doc = explain(capsys, "--platform", str(PLATFORMS / "pbs-cluster.yaml"), "--engine",
                  "snakemake", "--set", "mem_mb=8000", "--set", "runtime=30",
                  "--label", "team=a,b")  # fmt: skip
    assert doc["backend"] == "pbs"  # no backend configured: the platform's scheduler
    assert doc["platform"]["queue"] == "workq" and doc["effective"]["queue"] == "workq"
    assert "-q" in doc["native"]["args"] and "workq" in doc["native"]["args"]
    flag, assignment = doc["labels"].split(" ")
    assert flag == "-v" and assignment.startswith("SEQERA_LABELS=")
    labels = decode_labels(assignment.removeprefix("SEQERA_LABELS="))
    assert labels == {"snakemake/engine": "snakemake", "team": "a,b"}
    assert doc["platform"]["estimated_cost"] == pytest.approx(
        (0.025 + 8000 * 10**6 / 2**30 * 0.005) / 2
    )


def test_ecs_labels_are_tags(capsys: pytest.CaptureFixture[str]) -> None:
    doc = explain(capsys, "--platform", str(PLATFORMS / "ecs-account.yaml"), "--engine",
                  "nextflow", "--memory", "4 GB", "--label", "aws:owner=$(id)")  # fmt: skip
    assert doc["backend"] == "ecs" and doc["platform"]["queue"] == "m7i.large"
    assert {"key": "_aws:owner", "value": "__id_"} in doc["labels"]


def test_an_explicit_backend_wins_over_the_platform(capsys: pytest.CaptureFixture[str]) -> None:
    doc = explain(capsys, "--platform", str(PLATFORMS / "slurm-cluster.yaml"), "--backend",
                  "local", "--engine", "cwl", "--set", "ramMin=100")  # fmt: skip
    assert doc["backend"] == "local"
    assert doc["labels"] == {"SEQERA_LABEL_CWL_ENGINE": "cwl"}


def test_labels_from_the_config_and_auto_labels_off(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "seqera.yaml").write_text("backend: slurm\nauto_labels: none\nlabels: {a: 1}\n")
    doc = explain(capsys, "--engine", "nextflow", "--memory", "1 GB", "--label", "b=x y")
    assert doc["labels"] == "--comment=a=1;b=x%20y"


def test_an_impossible_job_exits_2_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explain", "--platform", str(PLATFORMS / "slurm-cluster.yaml"), "--engine",
            "nextflow", "--cpus", "500"]  # fmt: skip
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert "error: cpus 500 exceeds every queue of example-hpc (the largest, normal, allows " \
        "128)" in out  # fmt: skip


def test_text_output_shows_queue_effective_values_labels_and_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["explain", "--platform", str(PLATFORMS / "slurm-cluster.yaml"), "--engine",
            "nextflow", "--memory", "8 GB", "--cpus", "4", "--time", "2h", "--label",
            "sample=S 1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  sbatch --cpus-per-task=4 --mem=8192M --time=120 --partition=short" in out
    assert "effective (declared): cpus=4 memory=8 GiB time=2h queue=short" in out
    assert "labels: --comment=nextflow/engine=nextflow;sample=S%201" in out
    assert "queue: short" in out
    assert "cost: 0.0840 per hour, 0.1680 for the job" in out
