"""cwltool's ``--podman`` mode through cwltool-seqera: rootless Podman as a non-root user.

cwltool adds ``--userns=keep-id`` in this mode (``cwltool/docker.py``), which only a
rootless Podman accepts; the test creates a user with subordinate uid/gid ranges and runs
the whole of cwltool-seqera as that user on the local backend.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..cwltool_seqera.podman import MARKER, Rootless, rootless_env

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "cwltool_seqera" / "data" / "containers"


@pytest.fixture(scope="module")
def rootless() -> Iterator[Rootless]:
    """The user, their virtual environment and their image; the directory removed after."""
    made = rootless_env([ROOT / "packages" / "seqera-core", ROOT / "packages" / "cwltool-seqera"])
    yield made
    shutil.rmtree(made.directory.parent, ignore_errors=True)


def test_podman_mode_runs_each_job_in_a_rootless_container(rootless: Rootless) -> None:
    job = rootless.directory / "job.json"
    job.write_text(json.dumps({"words": ["one", "two"]}))
    out = rootless.directory / "out"
    done = subprocess.run(
        rootless.argv(str(rootless.command), "--podman", "--executor", "local", "--outdir",
                      str(out), str(DATA / "pipeline.cwl"), str(job)),
        cwd=rootless.directory, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    lines = (out / "all.txt").read_text().splitlines()
    # Rootless Podman on cgroup v1 cannot enforce the memory limit (it says so and runs):
    # only the words and the image's own marker are checked.
    assert [line.split(" mem=")[0] for line in lines[:2]] == [
        f"{w} {MARKER}" for w in ("one", "two")
    ]
    assert lines[2] == f"gathered in {MARKER}"
    # cwltool's own --podman command line, run by that user: keep-id, their uid.
    assert done.stderr.count("podman run -i --userns=keep-id") == 3
    assert f"--user={rootless.uid}:" in done.stderr
    assert (out / "all.txt").stat().st_uid == rootless.uid
