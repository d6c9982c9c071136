"""What /proc and the kernel say about this machine and its processes: the cores and
memory there are to share, and what each job's processes hold.

``scan_sessions`` reads every process once per sample: the summed resident sizes per
session (shared pages counted once per process, an over-estimate), the highest
single-process high-water mark (``VmHWM``, exact) and the CPU time the session has used
(``utime + stime + cutime + cstime`` of ``/proc/PID/stat``, man 5 proc: each process's own
and that of the children it has waited for, so an exited child counts once, in its
parent). Without procfs it measures nothing and ``wait4``'s rusage alone counts.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable

__all__ = ["machine_cpus", "machine_memory", "own_peak_rss", "scan_sessions"]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/PID/stat's times


def machine_cpus() -> float:
    # The affinity mask respects taskset and container cpusets; cpu_count() does not.
    if hasattr(os, "sched_getaffinity"):
        return float(len(os.sched_getaffinity(0)))
    return float(os.cpu_count() or 1)


def machine_memory() -> int:
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def own_peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def scan_sessions(sessions: Iterable[int]) -> dict[int, tuple[int, int, float]]:
    """Per session id: the summed resident bytes, the highest single-process high-water
    mark, and the CPU seconds its live processes and their waited-for children used."""
    usage: dict[int, tuple[int, int, float]] = dict.fromkeys(sessions, (0, 0, 0.0))
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return usage  # no procfs: wait4 alone measures
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue  # exited since listdir
        # The command name is in parentheses and may hold spaces; fields follow the last ')'.
        fields = stat[stat.rindex(b")") + 2 :].split()
        session = int(fields[3])
        if session not in usage:
            continue
        total, highest, cpu = usage[session]
        # fields 14-17 of man 5 proc: utime, stime, cutime, cstime (clock ticks)
        ticks = sum(int(value) for value in fields[11:15])
        usage[session] = (
            total + int(fields[21]) * _PAGE_SIZE,
            max(highest, _high_water(pid)),
            cpu + ticks / _TICKS,
        )
    return usage


def _high_water(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as file:
            for line in file:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024  # always kB
    except (OSError, ValueError, IndexError):
        pass
    return 0
