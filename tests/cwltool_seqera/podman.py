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

    def calls(self) -> list[str]:
        """Every ``docker`` command line the shim saw, in order."""
        return self.log.read_text().splitlines() if self.log.exists() else []

    def runs(self) -> list[str]:
        """The ``docker run`` lines the shim saw, in order."""
        return [line for line in self.calls() if " run " in line]


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


ROOTLESS_USER = "seqera-rootless"


@attrs.frozen
class Rootless:
    """Rootless Podman for a non-root user, and a cwltool-seqera that user can run."""

    user: str
    uid: int
    env: dict[str, str]  # the whole environment of the user's commands
    command: Path  # cwltool-seqera in a virtual environment the user can read
    directory: Path  # owned by the user

    def argv(self, *args: str) -> list[str]:
        """``args`` run as the user, in their own environment only."""
        pairs = [f"{k}={v}" for k, v in self.env.items()]
        return ["runuser", "-u", self.user, "--", "env", "-i", *pairs, *args]


def _check(argv: list[str], what: str, **kwargs: object) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        _unavailable(f"{what} failed ({done.returncode}): {done.stderr[-1500:]}")


def rootless_env(packages: list[Path]) -> Rootless:
    """A user with subordinate uid/gid ranges (created when missing), a virtual environment
    of ``packages`` on a Python outside /root, and the test image in the user's storage.

    cwltool's ``--podman`` mode adds ``--userns=keep-id``, which only rootless Podman takes.
    """
    import pwd
    import tempfile

    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("runuser") is None:
        _unavailable("creating the rootless Podman user needs root, useradd and runuser")
    uv = shutil.which("uv")
    python = next(
        (p for p in ("/usr/bin/python3.11", "/usr/bin/python3") if Path(p).exists()), None
    )
    if uv is None or python is None:
        _unavailable("uv and a system Python (outside /root) are needed for the rootless user")
        raise AssertionError  # not reached
    try:
        pwd.getpwnam(ROOTLESS_USER)
    except KeyError:
        _check(["useradd", "-m", "-s", "/bin/sh", ROOTLESS_USER], "useradd")
    ranges = Path("/etc/subuid").read_text() if Path("/etc/subuid").exists() else ""
    if not any(line.startswith(ROOTLESS_USER + ":") for line in ranges.splitlines()):
        _check(["usermod", "--add-subuids", "300000-365535", "--add-subgids", "300000-365535",
                ROOTLESS_USER], "usermod --add-subuids")  # fmt: skip
    entry = pwd.getpwnam(ROOTLESS_USER)
    # pytest's tmp_path lives under a 0700 directory of root's: this one the user reads.
    directory = Path(tempfile.mkdtemp(prefix="seqera-rootless-", dir="/tmp"))
    directory.chmod(0o755)
    venv = directory / "venv"
    _check([uv, "venv", "-q", "-p", python, str(venv)], "uv venv")
    editable = [arg for p in packages for arg in ("-e", str(p))]
    _check([uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *editable],
           "uv pip install")  # fmt: skip
    conf = directory / "containers.conf"
    conf.write_text(CONF)
    tarball = rootfs_tarball(directory)
    tarball.chmod(0o644)
    work = directory / "work"
    work.mkdir()
    os.chown(work, entry.pw_uid, entry.pw_gid)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": entry.pw_dir,
        "CONTAINERS_CONF": str(conf),
    }
    rootless = Rootless(ROOTLESS_USER, entry.pw_uid, env, venv / "bin" / "cwltool-seqera", work)
    _check(rootless.argv("podman", "import", "-q", str(tarball), IMAGE), "rootless podman import",
           cwd=work)  # fmt: skip
    _check(rootless.argv("podman", "run", "--rm", "--userns=keep-id", "--net=none", IMAGE, "cat",
                         "/etc/seqera-image"), "rootless podman run", cwd=work)  # fmt: skip
    return rootless


FAKE_BIN = Path(__file__).parent / "data" / "containers" / "bin"


def fake_singularity_env(directory: Path) -> tuple[dict[str, str], Path]:
    """A stand-in ``singularity`` on PATH (Apptainer cannot be installed here): it answers
    cwltool's version and userns probes, "pulls" by creating the file, and logs every
    command line it is asked to run with its ``SINGULARITYENV_*`` variables."""
    cache = directory / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    log = directory / "singularity.log"
    env = {
        **os.environ,
        "PATH": f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "CWL_SINGULARITY_CACHE": str(cache),
        "SEQERA_FAKE_SINGULARITY_LOG": str(log),
    }
    return env, log


def command_shape(line: str) -> str:
    """A logged command line with cwltool's random directory names taken out."""
    import re

    line = re.sub(r"\S*/[a-z0-9_]{8}(?=[:,\s]|$)", "DIR", line)  # mkdtemp directories
    return re.sub(r"(?<=[:\s])/[A-Za-z]{6}(?=[\s,]|$)", "/OUTDIR", line)  # random outdir


def singularity_runs(log: Path) -> list[str]:
    """The ``run`` command lines the stand-in logged, each with its environment lines."""
    if not log.exists():
        return []
    entries: list[str] = []
    for line in log.read_text().splitlines():
        if line.startswith("job="):
            entries.append(line)
        elif entries:
            entries[-1] += "\n" + line
    return [e for e in entries if " --quiet run " in e.splitlines()[0]]
