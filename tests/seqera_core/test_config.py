"""Layered configuration: user file < project file < environment < flags, with provenance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seqera_core import ResourceError
from seqera_core.config import load_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    user = tmp_path / "home" / ".config" / "seqera"
    user.mkdir(parents=True)
    (user / "config.yaml").write_text(
        "backend: slurm\nplatform: sites/hpc.yaml\nresolver:\n  url: http://127.0.0.1:1\n"
        "  token: t0k3n\nlabels:\n  team: genomics\n"
    )
    return tmp_path / "home"


def test_each_layer_overrides_the_one_before(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "seqera.yaml").write_text("backend: pbs\nlabels: {team: imaging}\n")
    environ = {"SEQERA_RESOLVER_TIMEOUT": "2.5", "SEQERA_LABELS": "team=env,cost=42"}
    config = load_config(environ=environ, cwd=project, home=home, flags={"backend": "torque"})
    assert config.get("backend") == "torque" and config.sources["backend"] == "command line"
    assert config.get("platform") == str(home / ".config/seqera/sites/hpc.yaml")
    assert config.sources["platform"] == str(home / ".config/seqera/config.yaml")
    assert config.get("labels") == {"team": "env", "cost": "42"}
    assert config.sources["labels.team"] == "$SEQERA_LABELS"
    assert config.get("resolver.timeout") == 2.5
    assert config.get("resolver.url") == "http://127.0.0.1:1"


def test_xdg_config_home_and_defaults(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "seqera").mkdir(parents=True)
    (xdg / "seqera" / "config.yaml").write_text("backend: pbs\n")
    config = load_config(environ={"XDG_CONFIG_HOME": str(xdg)}, cwd=tmp_path, home=tmp_path)
    assert config.get("backend") == "pbs"
    empty = load_config(environ={}, cwd=tmp_path, home=tmp_path / "nobody")
    assert empty.values == {"backend": "local", "auto_labels": "all"}
    assert empty.sources["backend"] == "default"


def test_flags_that_were_not_given_do_not_count(home: Path, tmp_path: Path) -> None:
    config = load_config(environ={}, cwd=tmp_path, home=home, flags={"backend": None})
    assert config.get("backend") == "slurm"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("backend: condor\n", "backend"),
        ("memory: 4 GB\n", "memory"),
        ("resolver:\n  timeout: soon\n", "resolver.timeout"),
        ("resolver:\n  timeout: .nan\n", "resolver.timeout"),
        ("resolver:\n  timeout: .inf\n", "resolver.timeout"),
        ("labels: [a, b]\n", "labels"),
    ],
)
def test_bad_values_name_the_file_and_key(tmp_path: Path, text: str, field: str) -> None:
    (tmp_path / "seqera.yaml").write_text(text)
    with pytest.raises(ResourceError) as info:
        load_config(environ={}, cwd=tmp_path, home=tmp_path)
    assert str(tmp_path / "seqera.yaml") in info.value.field and field in info.value.field


def test_bad_environment_value() -> None:
    with pytest.raises(ResourceError, match=r"\$SEQERA_LABELS"):
        load_config(environ={"SEQERA_LABELS": "novalue"}, cwd=Path("/"), home=Path("/nonexistent"))


def test_config_command_shows_sources_and_masks_secrets(home: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "config", "--json"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "SEQERA_BACKEND": "pbs"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["backend"] == {"value": "pbs", "source": "$SEQERA_BACKEND"}
    assert document["resolver.token"]["value"] == "***"


def test_validate_reads_the_platform_from_the_environment(tmp_path: Path) -> None:
    platform = Path(__file__).parents[2] / "shared" / "platforms" / "slurm-cluster.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "validate", "--engine", "snakemake",
         "--set", "mem_mb=900000"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "SEQERA_PLATFORM": str(platform)},
    )  # fmt: skip
    assert done.returncode == 2 and "queue hugemem allows" in done.stdout


def test_auto_labels_from_the_environment_and_files(tmp_path: Path) -> None:
    environ = {"SEQERA_AUTO_LABELS": "run-id,project"}
    config = load_config(environ=environ, cwd=tmp_path, home=tmp_path)
    assert config.get("auto_labels") == ["run-id", "project"]
    (tmp_path / "seqera.yaml").write_text("auto_labels: none\n")
    assert load_config(environ={}, cwd=tmp_path, home=tmp_path).get("auto_labels") == "none"
    with pytest.raises(ResourceError, match="auto_labels"):
        load_config(environ={"SEQERA_AUTO_LABELS": "runName"}, cwd=tmp_path, home=tmp_path)


def test_labels_merge_name_by_name_with_a_source_each(home: Path, tmp_path: Path) -> None:
    (tmp_path / ".seqera.yaml").write_text("labels: {project: rnaseq, urgent: true}\n")
    config = load_config(environ={}, cwd=tmp_path, home=home, flags={"labels": {"project": "atac"}})
    assert config.get("labels") == {"team": "genomics", "project": "atac", "urgent": "true"}
    user_file = str(home / ".config/seqera/config.yaml")
    assert config.sources["labels.team"] == user_file
    assert config.sources["labels.urgent"] == str(tmp_path / ".seqera.yaml")
    assert config.sources["labels.project"] == "command line"
    assert config.sources["labels"] == f"{user_file}, {tmp_path / '.seqera.yaml'}, command line"


def test_seqera_yaml_wins_over_the_hidden_file(tmp_path: Path) -> None:
    (tmp_path / "seqera.yaml").write_text("backend: slurm\n")
    (tmp_path / ".seqera.yaml").write_text("backend: [broken\n")  # never read
    config = load_config(environ={}, cwd=tmp_path, home=tmp_path)
    assert config.get("backend") == "slurm"
    assert config.sources["backend"] == str(tmp_path / "seqera.yaml")


def test_an_empty_variable_counts_as_unset(tmp_path: Path) -> None:
    environ = {"SEQERA_BACKEND": "", "XDG_CONFIG_HOME": ""}
    config = load_config(environ=environ, cwd=tmp_path, home=tmp_path)
    assert config.sources["backend"] == "default"


def test_environment_overrides_files_and_flags_override_the_environment(home: Path) -> None:
    environ = {"SEQERA_BACKEND": "pbs", "SEQERA_PLATFORM": "/site/p.yaml"}
    config = load_config(environ=environ, cwd=home, home=home)
    assert (config.get("backend"), config.sources["backend"]) == ("pbs", "$SEQERA_BACKEND")
    assert config.get("platform") == "/site/p.yaml"  # as given: relative to the process
    flagged = load_config(environ=environ, cwd=home, home=home, flags={"platform": "x.yaml"})
    assert (flagged.get("platform"), flagged.sources["platform"]) == ("x.yaml", "command line")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("backend: [lsf\n", "line 2"),
        ("- backend\n", "seqera.yaml"),
        ("resolver:\n  timeout: true\n", "resolver.timeout"),
        ("resolver:\n  url: ''\n", "resolver.url"),
        ("platform: [a, b]\n", "platform"),
        ("labels: {team: [a]}\n", "labels"),
        ("auto_labels: [user, runName]\n", "auto_labels"),
    ],
)
def test_more_bad_files(tmp_path: Path, text: str, field: str) -> None:
    (tmp_path / "seqera.yaml").write_text(text)
    with pytest.raises(ResourceError) as info:
        load_config(environ={}, cwd=tmp_path, home=tmp_path)
    assert str(tmp_path / "seqera.yaml") in info.value.field and field in info.value.field
    assert "expected" in str(info.value)


def test_auto_labels_tolerate_spaces(tmp_path: Path) -> None:
    environ = {"SEQERA_AUTO_LABELS": " run-id , user "}
    assert load_config(environ=environ, cwd=tmp_path, home=tmp_path).get("auto_labels") == [
        "run-id",
        "user",
    ]


def test_the_self_sizing_guard_opt_out(tmp_path: Path) -> None:
    def shrink(environ: dict[str, str]) -> object:
        config = load_config(environ=environ, cwd=tmp_path, home=tmp_path)
        return config.get("sizing.shrink_self_sizing", False)

    assert shrink({}) is False
    assert shrink({"SEQERA_SIZING_SHRINK_SELF_SIZING": "yes"}) is True
    with pytest.raises(ResourceError, match=r"SEQERA_SIZING_SHRINK_SELF_SIZING.*true or false"):
        shrink({"SEQERA_SIZING_SHRINK_SELF_SIZING": "sometimes"})


def test_route_objectives_and_the_cost_ceiling(tmp_path: Path) -> None:
    from seqera_core.backends.route import OBJECTIVES
    from seqera_core.config._keys import _OBJECTIVES

    assert _OBJECTIVES == OBJECTIVES  # the config checks what the policy knows
    text = "route: {objective: cost-per-hour-saved, max_cost_per_hour_saved: 2.5}\n"
    (tmp_path / "seqera.yaml").write_text(text)
    config = load_config(environ={}, cwd=tmp_path, home=tmp_path)
    assert config.section("route") == {"objective": "cost-per-hour-saved",
                                       "max_cost_per_hour_saved": 2.5}  # fmt: skip
    for bad in ("-1", "cheap", ".inf", "true"):
        with pytest.raises(ResourceError) as info:
            load_config(environ={"SEQERA_ROUTE_MAX_COST_PER_HOUR_SAVED": bad}, cwd=tmp_path,
                        home=tmp_path)  # fmt: skip
        assert "route.max_cost_per_hour_saved" in info.value.field and info.value.value == bad


@pytest.mark.parametrize(
    ("variable", "key"),
    [
        ("SEQERA_SQUASH_CPUS", "squash.cpus"),
        ("SEQERA_SQUASH_MAX_JOBS", "squash.max_jobs"),
        ("SEQERA_LOCAL_CPUS", "local.cpus"),
        ("SEQERA_LOCAL_MEMORY", "local.memory"),
        ("SEQERA_RESOLVER_TIMEOUT", "resolver.timeout"),
        ("SEQERA_ROUTE_MAX_COST_PER_HOUR_SAVED", "route.max_cost_per_hour_saved"),
    ],
)
@pytest.mark.parametrize("digits", ["7" * 31, "7" * 5000, "0." + "1" * 40])
def test_a_number_too_long_to_read_is_named(tmp_path: Path, variable: str, key: str,
                                            digits: str) -> None:  # fmt: skip
    with pytest.raises(ResourceError) as info:
        load_config(environ={variable: digits}, cwd=tmp_path, home=tmp_path)
    assert info.value.field == f"${variable}: {key}" and info.value.value == digits
    assert info.value.expected.endswith("(numbers of at most 30 digits)")
    assert len(str(info.value)) < len(info.value.expected) + 300  # the value cut short
