"""Debian's Groovy on OpenJDK 17, for tests that read generated Nextflow configs back."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import IN_CI

__all__ = ["run_groovy", "units"]


def run_groovy(script: str, directory: Path) -> list[str]:
    """The lines ``script`` prints (it must exit 0); a skip without Groovy, a failure in CI."""
    groovy, java = shutil.which("groovy"), shutil.which("java")
    if groovy is None or java is None:
        if IN_CI:
            pytest.fail("groovy or java not installed (Debian: groovy, openjdk-17-jre-headless)")
        pytest.skip("groovy or java not installed")
    env = dict(os.environ)
    # Debian's groovy wants JAVA_HOME; the java on PATH says where it is
    env.setdefault("JAVA_HOME", str(Path(os.path.realpath(java)).parents[1]))
    path = directory / "check.groovy"
    path.write_text(script, encoding="utf-8")
    done = subprocess.run([groovy, str(path)], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def units(text: str) -> str:
    """UTF-16 code units as Groovy's ``String.chars()`` lists them, in hex."""
    data = text.encode("utf-16-be", "surrogatepass")
    return ",".join(f"{int.from_bytes(data[i : i + 2], 'big'):x}" for i in range(0, len(data), 2))
