"""Property tests over the executor's ``--seqera-*`` settings, parsed by Snakemake itself.

Snakemake's own argument parser (``snakemake.cli.get_argument_parser``, which also reads
``$SNAKEMAKE_SEQERA_*``) turns each hostile value (tests/hostile.py) into the plugin's
ExecutorSettings through the plugin registry, as ``snakemake --executor seqera`` does;
the executor's configuration and session are then built from them. The answer is a
parser error (exit 2), or settings that either work or fail with a SeqeraError naming
the setting (the executor turns it into a WorkflowError), never another exception.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from snakemake.cli import get_argument_parser
from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

from seqera_core.errors import SeqeraError
from seqera_core.session import Session
from snakemake_executor_plugin_seqera._configure import config_from
from snakemake_executor_plugin_seqera.settings import ExecutorSettings
from tests.hostile import BOUNDARIES, SETTINGS, arg_text, file_contents, invoke, place, scoped

SETTING_NAMES = [f.name for f in dataclasses.fields(ExecutorSettings)]
# The config key each setting becomes, which its errors name.
KEYS = {"local_cores": "local.cpus", "squash": "squash.mode", "labels": "labels",
        "ecs_log_group": "ecs.logs_group", "platform": "platform",
        "history": "history"}  # fmt: skip


def boundaries(test: Any) -> Any:
    for value in BOUNDARIES:
        test = example(value=value, backend="local", via_env=False)(test)
    return test


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return get_argument_parser()  # Snakemake's whole command line, plugins included


@pytest.fixture
def home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="snakemake-seqera-props-") as folder:
        yield Path(folder)


def settings_from(parser: argparse.ArgumentParser, argv: list[str]) -> Any:
    args = parser.parse_args(["--executor", "seqera", *argv])
    return ExecutorPluginRegistry().get_plugin("seqera").get_settings(args)


def open_session(settings: ExecutorSettings, jobdir: Path) -> str:
    """What the executor's set-up does with the settings: config, session, backend."""
    with Session(config_from(settings), "snakemake", work_dir=jobdir) as session:
        return session.backend.name


def check(
    parser: argparse.ArgumentParser,
    argv: list[str],
    names: list[str],
    home: Path,
    environ: dict[str, str] | None = None,
) -> None:
    folder = Path(tempfile.mkdtemp(dir=home))
    base = {"HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "xdg")}
    with scoped({**base, **(environ or {})}, folder):
        answer = invoke(lambda a: settings_from(parser, a) and 0, argv)
        answer.check()  # 0, or argparse's 2 with its usage line
        if answer.code != 0:
            return
        settings = settings_from(parser, argv)
        try:
            open_session(settings, folder / "jobs")
        except SeqeraError as exc:  # WorkflowError(f"seqera executor: {exc}") for the user
            assert any(name in str(exc) for name in names), (names, str(exc)[:300])


@pytest.mark.parametrize("name", SETTING_NAMES)
@boundaries
@settings(SETTINGS, max_examples=10)  # per setting, besides the boundaries
@given(value=arg_text, backend=st.sampled_from(["local", "slurm", "pbs", "torque"]),
       via_env=st.booleans())  # fmt: skip
def test_any_setting_value_is_used_or_refused_by_name(
    parser: argparse.ArgumentParser,
    home: Path,
    name: str,
    value: str,
    backend: str,
    via_env: bool,
) -> None:
    flag = f"--seqera-{name.replace('_', '-')}"
    variable = f"SNAKEMAKE_SEQERA_{name.upper()}"
    environ = {variable: value.replace("\udc80", "?")} if via_env else {}
    argv = [] if via_env or name == "backend" else [f"{flag}={value}"]
    if name != "backend":
        argv.append(f"--seqera-backend={backend}")
    key = KEYS.get(name, name.replace("_", ".", 1))
    names = [flag, variable, key, name, "labels", "--seqera-labels", "local"]
    check(parser, argv, names, home, environ)


@settings(SETTINGS, max_examples=30)
@given(contents=file_contents() | st.none(), name=st.sampled_from(["platform", "history"]))
def test_any_platform_or_history_file_is_used_or_refused_by_name(
    parser: argparse.ArgumentParser, home: Path, contents: bytes | None, name: str
) -> None:
    path = place(Path(tempfile.mkdtemp(dir=home)), f"{name}.file", contents)
    check(parser, [f"--seqera-{name}={path}", "--seqera-backend=local"], [path, name], home)
