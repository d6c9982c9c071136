"""Memory limits the kernel enforces: one memory cgroup per job, under this process's own.

Standard library only (the squashed allocations' launcher may use it on a compute node).

Where a memory cgroup can be made (root, or a subtree delegated to this user), each job
with a memory request runs in its own cgroup with the request as its hard limit: the
kernel's OOM killer ends it at the limit, the same way every time, however loaded the
machine. Its peak comes from the cgroup and an OOM kill from its event counter:

* cgroup v1 (``/sys/fs/cgroup/memory``): ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes``, so the job cannot swap past it),
  ``memory.max_usage_in_bytes``, ``oom_kill`` in ``memory.oom_control`` (Linux 4.13);
* cgroup v2 (``/sys/fs/cgroup``): ``memory.max`` and ``memory.swap.max = 0``,
  ``memory.peak`` (Linux 5.19), ``oom_kill`` in ``memory.events``.

(Documentation/admin-guide/cgroup-v1/memory.rst and cgroup-v2.rst in the Linux sources.)
The jobs' cgroups live in one directory made under this process's own cgroup (read from
``/proc/self/cgroup``), so whatever limits that one has still hold, and it is removed
when the backend closes. A job joins its cgroup before its command runs: ``sh`` writes
its own pid to ``cgroup.procs`` and then ``exec``s the command, so nothing it allocates
is counted elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ["JOIN", "MemoryCgroups", "joined"]

_ROOT = Path("/sys/fs/cgroup")
# argv prefix: $0 is the cgroup.procs file, "$@" the command ("0" is the writer itself).
JOIN = ("/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"')


def joined(procs: str, argv: tuple[str, ...] | list[str]) -> list[str]:
    """``argv`` started inside the cgroup whose ``cgroup.procs`` file is ``procs``."""
    return [*JOIN, procs, *argv]


def _own(controller: str) -> tuple[int, str] | None:
    """(cgroup version, this process's path) for the memory controller, from /proc."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if controller in names.split(","):
            return 1, path
    for line in lines:
        if line.startswith("0::"):
            return 2, line[3:]
    return None


class MemoryCgroups:
    """The directory of one backend's job cgroups; :meth:`open` says why there is none."""

    def __init__(self, version: int, base: Path) -> None:
        self.version = version
        self.base = base

    @classmethod
    def open(cls) -> tuple[MemoryCgroups | None, str]:
        """A new directory for job cgroups, or None and why none can be made here."""
        own = _own("memory")
        if own is None:
            return None, "no memory cgroup controller in /proc/self/cgroup"
        version, path = own
        mount = _ROOT / "memory" if version == 1 else _ROOT
        parent = mount / path.lstrip("/")
        if version == 2:
            try:
                controllers = (parent / "cgroup.subtree_control").read_text().split()
            except OSError as exc:
                return None, f"cgroup v2 at {parent} cannot be read ({exc.strerror})"
            if "memory" not in controllers:
                return None, f"cgroup v2: the memory controller is not delegated to {parent}"
        base = parent / f"seqera-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            base.mkdir()
        except OSError as exc:
            return None, f"cannot make a cgroup under {parent} ({exc.strerror})"
        if version == 2:
            try:  # the jobs' cgroups below it get the memory controller too
                (base / "cgroup.subtree_control").write_text("+memory")
            except OSError as exc:
                with contextlib.suppress(OSError):
                    base.rmdir()
                return None, f"cgroup v2: cannot enable memory under {base} ({exc.strerror})"
        return cls(version, base), ""

    def make(self, name: str, limit: int) -> Path:
        """A job's cgroup with ``limit`` bytes; raises OSError if it cannot be made."""
        group = self.base / name
        group.mkdir()
        try:
            if self.version == 1:
                (group / "memory.limit_in_bytes").write_text(str(limit))
                swap = group / "memory.memsw.limit_in_bytes"
                if swap.exists():  # no swapping past the limit instead of an OOM kill
                    swap.write_text(str(limit))
            else:
                (group / "memory.max").write_text(str(limit))
                with contextlib.suppress(OSError):
                    (group / "memory.swap.max").write_text("0")
        except OSError:
            self.remove(group)
            raise
        return group

    def procs(self, group: Path) -> str:
        """The file a process writes its pid to, to join ``group``."""
        return str(group / "cgroup.procs")

    def peak(self, group: Path) -> int | None:
        """The most memory the job's processes held at once, in bytes."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int((group / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def oom_killed(self, group: Path) -> bool:
        """Whether the kernel's OOM killer ended a process of the job."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (group / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def remove(self, group: Path) -> None:
        """Remove a job's cgroup and any its job made below it (a squashed allocation's
        launcher killed before it removed its own), deepest first: a cgroup directory
        goes only once it holds neither processes nor cgroups. A straggler keeps it."""
        for directory, _, _ in sorted(os.walk(group), key=lambda w: -len(Path(w[0]).parts)):
            with contextlib.suppress(OSError):
                os.rmdir(directory)

    def close(self) -> None:
        """Remove every job cgroup left and the directory."""
        with contextlib.suppress(OSError):
            for group in self.base.iterdir():
                if group.is_dir():
                    self.remove(group)
        with contextlib.suppress(OSError):
            self.base.rmdir()
