"""``seqera explain`` under the routing backend: each candidate's verdict (eligible or why
not), the objective's pick with its estimate, exit 2 when none can run the job; and a
platform's ``route:`` section, checked, with the config's ``route.*`` over it.

The candidates are real: the local backend (two cores here) and an ECS client, which is
only asked what it could run (nothing is sent, so no emulator is needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from seqera_core.cli import main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

PLATFORMS = Path(__file__).parents[3] / "shared" / "platforms"


@pytest.fixture(autouse=True)
def _route(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HOME": str(tmp_path),
        "SEQERA_ROUTE_BACKENDS": "local,ecs",
        "SEQERA_LOCAL_CPUS": "2",
        "SEQERA_LOCAL_MEMORY": "4GiB",
        "SEQERA_ECS_CLUSTER": "genomics",
        "SEQERA_ECS_EXECUTION_ROLE": "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # never reached: nothing is sent
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_ROUTE_PIN", "SEQERA_ROUTE_STAGED"):
        monkeypatch.delenv(name, raising=False)


def explain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["explain", "--engine", "snakemake", "--process", "align", *args])
    return code, capsys.readouterr().out


def test_each_candidate_says_why_it_cannot_and_none_left_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = explain(capsys, "--backend", "route", "--cpus", "4")
    assert code == 2
    assert "route: objective finish" in out
    assert "  local: not eligible: 4 cores asked, its largest node has 2" in out
    assert (
        "  ecs: not eligible: no shared file system, and the engine does not stage this "
        "job's files" in out
    )
    assert "error: no backend can run it: local: 4 cores asked" in out


def test_a_staged_job_may_go_to_the_cloud_and_gets_its_submission(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = explain(capsys, "--backend", "route", "--cpus", "4", "--staged")
    assert code == 0
    assert "  ecs: eligible, starts in 1m, ends in 2m, cost 0" in out
    assert "route: ecs (finish: ecs finish in 120 s (local cannot: 4 cores asked" in out
    assert "native submission (ecs):" in out and 'cpu = "4096"' in out


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (["--set", "mem_mb=8000"], "local: not eligible: 7.45 GiB asked, its largest node has 4"),
        (["--set", "gpu=1"], "local: not eligible: 1 GPUs asked, it has none"),
    ],
)
def test_memory_and_gpus_refuse_the_machine(
    capsys: pytest.CaptureFixture[str], flags: list[str], why: str
) -> None:
    code, out = explain(capsys, "--backend", "route", "--staged", *flags)
    assert code == 0 and why in out and "route: ecs (" in out


def test_a_pinned_rule_names_its_backend(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEQERA_ROUTE_PIN", "align=ecs")
    code, out = explain(capsys, "--backend", "route", "--staged", "--json")
    document = json.loads(out)
    assert code == 0
    local, ecs = document["route"]["candidates"]
    assert local == {"backend": "local", "eligible": False, "reason": "rule align is pinned to ecs"}
    assert ecs["eligible"] and ecs["start_seconds"] == 60.0 and ecs["finish_seconds"] == 120.0
    assert document["route"]["chosen"] == "ecs" and document["backend"] == "ecs"


def _platform(tmp_path: Path, route: str) -> Path:
    text = (PLATFORMS / "ecs-account.yaml").read_text() + route
    path = tmp_path / "cloud.yaml"
    path.write_text(text)
    return path


def test_a_platforms_route_section_routes_and_the_config_overrides_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SEQERA_ROUTE_BACKENDS")
    path = _platform(tmp_path, "route: {backends: [local, ecs], objective: cost-per-hour-saved,"
                               " max_cost_per_hour_saved: 5, pin: {other: local}}\n")  # fmt: skip
    # nobody chose a backend: the platform's route; ECS priced by the platform's first type
    code, out = explain(capsys, "--platform", str(path), "--staged", "--json")
    routed = json.loads(out)["route"]
    assert code == 0 and routed["objective"] == "cost-per-hour-saved"
    assert routed["max_cost_per_hour_saved"] == 5.0
    local, ecs = routed["candidates"]
    assert local["eligible"] and local["cost"] == 0  # the platform prices ECS only
    assert ecs["cost"] == pytest.approx(0.1008 * 60 / 3600)
    # the cloud would end later, so paying for it saves nothing: the machine
    assert routed["chosen"] == "local"
    assert "ecs 0.00168, 120 s, saves no time" in routed["why"]
    monkeypatch.setenv("SEQERA_ROUTE_OBJECTIVE", "cost")  # the config over the platform
    code, out = explain(capsys, "--platform", str(path), "--staged")
    assert code == 0 and "route: objective cost, at most 5 per hour saved" in out
    assert "route: local (cost: local cost 0 (ecs 0.00168))" in out


@pytest.mark.parametrize(
    ("route", "message"),
    [
        ("route: {objective: fast}", "route.objective: 'fast' is not valid; expected one of "
         "finish, cost, cost-per-hour-saved"),
        ("route: {backends: [local, nope]}", "route.backends: 'nope' is not valid; expected one "
         "of local, slurm"),
        ("route: {max_cost_per_hour_saved: -1}", "route.max_cost_per_hour_saved: -1 is not "
         "valid; expected a number >= 0"),
        ("route: {pin: [align]}", "route.pin: 'align' is not valid; expected RULE=BACKEND"),
        ("route: {speed: 3}", "route.speed: 3 is not valid; expected one of the keys backends, "
         "max_cost_per_hour_saved, objective, overhead, pin, runtime, staged"),
    ],
)  # fmt: skip
def test_a_bad_route_section_names_field_value_and_expected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, route: str, message: str
) -> None:
    path = _platform(tmp_path, route + "\n")
    assert main(["explain", "--engine", "snakemake", "--platform", str(path)]) == 2
    assert f"{path}: {message}" in capsys.readouterr().err


def test_the_ceiling_is_required_by_its_objective(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _platform(tmp_path, "route: {objective: cost-per-hour-saved}\n")
    assert main(["explain", "--engine", "snakemake", "--platform", str(path)]) == 2
    assert "route.max_cost_per_hour_saved: not set" in capsys.readouterr().err
