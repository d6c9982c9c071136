"""Property tests over ``cwltool-seqera``'s own ``--executor`` and ``--seqera-*`` flags.

Each flag gets hostile values (tests/hostile.py); the command answers 0 or 2, never a
traceback, and a 2 names the flag and the value. cwltool itself gets ``--version``, so
what is tested is this package's reading of its flags and the session it opens.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwltool_seqera import main
from tests.hostile import SETTINGS, arg_text, file_contents, invoke, place, scoped

FLAGS = ("executor", "seqera-platform", "seqera-resolver-url", "seqera-label",
         "seqera-workdir", "seqera-poll-interval", "seqera-backend-option",
         "seqera-local-cpus", "seqera-local-memory", "seqera-ecs", "seqera-s3-prefix",
         "seqera-image", "seqera-unknown-timeout", "seqera-history", "seqera-report")  # fmt: skip
# What a flag becomes in seqera config, which its errors may name instead.
CONFIG_KEYS = {"seqera-local-cpus": "local.cpus", "seqera-local-memory": "local.memory",
               "seqera-platform": "--platform", "seqera-history": "history",
               "seqera-label": "labels", "seqera-ecs": "ecs.",
               "seqera-resolver-url": "resolver.url"}  # fmt: skip


@pytest.fixture
def home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cwltool-seqera-props-") as folder:
        yield Path(folder)


@SETTINGS
@given(flag=st.sampled_from(FLAGS), value=arg_text)
def test_any_flag_value_is_used_or_refused_by_name(home: Path, flag: str, value: str) -> None:
    folder = Path(tempfile.mkdtemp(dir=home))
    with scoped({"HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "xdg")}, folder):
        answer = invoke(main, [f"--{flag}={value}", "--version"])
    answer.check([f"--{flag}", CONFIG_KEYS.get(flag, f"--{flag}"), "--executor"], value)


@SETTINGS
@given(contents=file_contents() | st.none(), flag=st.sampled_from(["platform", "history"]))
def test_any_platform_or_history_file_is_used_or_refused_by_name(
    home: Path, contents: bytes | None, flag: str
) -> None:
    folder = Path(tempfile.mkdtemp(dir=home))
    path = place(folder, f"{flag}.file", contents)
    with scoped({"HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "xdg")}, folder):
        answer = invoke(main, [f"--seqera-{flag}={path}", "--version"])
    answer.check([path, f"--seqera-{flag}", flag])
