"""Every file a user names is read within a bound: /dev/zero is an error, not a hang."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from seqera_core.documents import line_bounded, read_bounded
from seqera_core.errors import ResourceError


def test_a_file_past_the_limit_is_refused_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match=r"--platform: '/dev/zero' is not valid; expected "
                       r"a YAML file of at most 1,024 bytes"):  # fmt: skip
        read_bounded("/dev/zero", "--platform", "a YAML file", limit=1024)
    fits = tmp_path / "fits.yaml"
    fits.write_text("a" * 1024)
    assert read_bounded(fits, "--platform", "a YAML file", limit=1024) == "a" * 1024


def test_a_line_without_end_is_an_error() -> None:
    with open("/dev/zero") as stream, pytest.raises(ValueError, match="longer than 1,000"):
        for _ in line_bounded(stream, 1000):
            pass


@pytest.mark.parametrize(
    "argv",
    [["validate", "--platform", "/dev/zero", "--engine", "nextflow", "--cpus", "1"],
     ["plan", "/dev/zero"]],
)  # fmt: skip
def test_the_cli_reads_dev_zero_to_a_bound_and_exits_2(tmp_path: Path, argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "seqera_core.cli", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "/dev/zero" in done.stderr, done.stderr
