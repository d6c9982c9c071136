"""A real container runtime for the tests: rootful Podman with an image made here, no network.

Podman 4.3 as root works in this sandbox given a containers.conf with
``default_ulimits = []`` (the sandbox refuses raising them) and ``runtime = "runc"``
(crun's cgroup mode is refused). The image is imported (``podman import``) from a tarball
of a root filesystem built here from the host's static busybox, with a marker file
(``/etc/seqera-image``) only the image has. cwltool's Docker mode runs ``docker``: a
shim on ``PATH`` logs the Slurm job it runs in (its id, and the cores and memory Slurm
granted it, from the job's environment) with its argv, then execs ``podman``.

When Podman cannot run, the tests skip on a developer machine and fail under CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import attrs

from ..conftest import IN_CI

IMAGE = "localhost/seqera-cwl-test:1"
MARKER = "seqera-cwl-test-image"
CONF = '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n'
APPLETS = ("sh", "cat", "echo", "id", "wc", "ls", "sleep", "env", "tr", "head", "sort", "touch")
SHIM = """#!/bin/sh
echo "job=${SLURM_JOB_ID:-none} cpus=${SLURM_CPUS_PER_TASK:-} mem=${SLURM_MEM_PER_NODE:-} $*" >> %s
exec podman "$@"
"""


@attrs.frozen
class Podman:
    """What a test needs to run containers: the environment and the shim's log."""

    env: dict[str, str]
    log: Path

    def runs(self) -> list[str]:
        """The ``docker run`` lines the shim saw, in order."""
        if not self.log.exists():
            return []
        return [line for line in self.log.read_text().splitlines() if " run " in line]


def _unavailable(message: str) -> None:
    import pytest

    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def rootfs_tarball(directory: Path) -> Path:
    """A tarball of a tiny root filesystem: static busybox, its applets and the marker."""
    busybox = shutil.which("busybox")
    if busybox is None:
        _unavailable("busybox (Debian busybox-static) is not installed")
        raise AssertionError  # not reached
    root = directory / "rootfs"
    for sub in ("bin", "etc", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(busybox, root / "bin" / "busybox")
    for applet in APPLETS:
        link = root / "bin" / applet
        if not link.is_symlink():
            link.symlink_to("busybox")
    (root / "etc" / "seqera-image").write_text(MARKER + "\n")
    tarball = directory / "rootfs.tar"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
    return tarball


def podman_env(directory: Path, image: str = IMAGE, entrypoint: str | None = None) -> Podman:
    """Configure Podman under ``directory``, import the image and check a container runs."""
    if shutil.which("podman") is None or shutil.which("runc") is None:
        _unavailable("podman and runc are not installed (Debian podman, runc)")
    if os.geteuid() != 0:
        _unavailable("the tests run rootful podman: they need root")
    directory.mkdir(parents=True, exist_ok=True)
    conf = directory / "containers.conf"
    conf.write_text(CONF)
    bin_dir = directory / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = directory / "docker.log"
    shim = bin_dir / "docker"
    shim.write_text(SHIM % log)
    shim.chmod(0o755)
    env = {
        **os.environ,
        "CONTAINERS_CONF": str(conf),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    tarball = rootfs_tarball(directory)
    change = [f"--change=ENTRYPOINT={entrypoint}"] if entrypoint else []
    steps = (
        ["podman", "import", *change, str(tarball), image],
        ["podman", "run", "--rm", "--net=none", image, "cat", "/etc/seqera-image"],
    )
    for argv in steps:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            _unavailable(f"{' '.join(argv[:2])} failed ({done.returncode}): {done.stderr[-1500:]}")
    return Podman(env, log)
