"""A backend from another package: built and installed by the test, found through the
entry-point group ``seqera.backends``, and run by ``seqera run --backend <its name>``
without a line of seqera-core changed.

The package is installed into a directory of its own (``pip install --target``, by
``uv pip`` where uv is on PATH as under CI) and put on ``PYTHONPATH`` of the ``seqera``
subprocess, so the test environment itself is left as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

PYPROJECT = """\
[project]
name = "seqera-backend-inline"
version = "0.0.1"
requires-python = ">=3.11"

[project.entry-points."seqera.backends"]
inline = "seqera_backend_inline:ENTRY"

[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
"""

# A whole backend: each job runs to its end inside submit(), as a child process, and its
# output and a line per job go where the test can count them.
MODULE = '''\
"""Runs each job at once, in submit(), and writes one line per job to $INLINE_LEDGER."""

import os
import subprocess

from seqera_core.backends import Backend, BackendEntry, JobHandle, JobState, JobStatus

ENTRY = BackendEntry("inline", "seqera_backend_inline", "InlineBackend")


class InlineBackend(Backend):
    name = "inline"

    def __init__(self, work_dir=None):
        super().__init__()
        self._done = {}

    def submit(self, jobs):
        handles = []
        for number, job in enumerate(jobs, start=len(self._done) + 1):
            done = subprocess.run(job.command, cwd=job.workdir, capture_output=True,
                                  text=True, env={**os.environ, **job.env})
            with open(os.environ["INLINE_LEDGER"], "a") as ledger:
                ledger.write(f"{job.name} cpus={job.request.cpus} exit={done.returncode}\\n")
            handle = JobHandle(self.name, str(number), job.name)
            self._done[handle.native_id] = (done.returncode, done.stdout + done.stderr)
            handles.append(handle)
        return handles

    def poll(self, handles):
        self.calls["poll"] += 1
        statuses = []
        for handle in handles:
            code, _ = self._done[handle.native_id]
            state = JobState.SUCCEEDED if code == 0 else JobState.FAILED
            statuses.append(JobStatus(handle, state, exit_code=code))
        return statuses

    def cancel(self, handles):
        pass

    def logs(self, handle):
        return self._done[handle.native_id][1]
'''


def _installer() -> list[str]:
    uv = shutil.which("uv")
    if uv is not None:
        return [uv, "pip", "install", "--quiet", "--python", sys.executable, "--no-deps"]
    done = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if done.returncode == 0:
        return [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    message = "neither uv nor pip is available to install the test's backend package"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)
    raise AssertionError  # not reached


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("inline-backend-src")
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "seqera_backend_inline.py").write_text(MODULE)
    target = tmp_path_factory.mktemp("inline-backend-site")
    done = subprocess.run(
        [*_installer(), "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        message = f"installing the test backend failed:\n{done.stdout}\n{done.stderr}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    assert any(target.glob("seqera_backend_inline-*.dist-info/entry_points.txt"))
    return target


def _seqera(site: Path, ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "INLINE_LEDGER": str(ledger)}
    code = "import sys; from seqera_core.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_seqera_run_goes_through_an_installed_third_party_backend(
    installed: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    script = "import sys; print('from the plugin'); sys.exit(3)"
    done = _seqera(
        installed, ledger, "run", "--backend", "inline", "--cpus", "2", "--name", "hello",
        "--", sys.executable, "-c", script,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "from the plugin" in done.stdout
    assert ledger.read_text().splitlines() == ["hello cpus=2 exit=3"]


def test_the_installed_backend_is_listed_beside_the_own_ones(
    installed: Path, tmp_path: Path
) -> None:
    done = _seqera(installed, tmp_path / "ledger.txt", "run", "--help")
    assert done.returncode == 0, done.stderr
    listed = textwrap.dedent(done.stdout).replace("\n", " ").replace(" ", "")
    # this package's own first, in their order, then the others by name
    choices = listed.split("--backend{", 1)[1].split("}", 1)[0].split(",")
    assert choices[:4] == ["local", "slurm", "pbs", "torque"] and choices[-1] == "inline"
    assert {"sge", "lsf", "ecs"} <= set(choices)
