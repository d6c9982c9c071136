"""Grid Engine's native forms: ``qsub -pe <pe> N -l h_rt=..,<memory>=..`` (``man sge_types``).

Sizes (``memory_specifier``): a number with an optional multiplier, ``k``/``m``/``g``
= 10^3/10^6/10^9 and ``K``/``M``/``G`` = 2^10/2^20/2^30 (case matters, unlike PBS).
Times (``time_specifier``): seconds, or ``[[hours:]minutes:]seconds``.

Memory is requested as the site's resource (``h_vmem`` by default; ``h_rss``,
``mem_free`` or Univa/Altair's ``m_mem_free`` where the site enforces those) and, like
every consumable ``-l`` request of a parallel job, it counts PER SLOT: with ``-pe smp 4
-l h_vmem=2G`` the job may use 8G (``man complex``, consumable ``YES``; sge_execd sets
the limit to the slot value times the slots it granted). So the job's memory is divided
by its slots, rounded up to whole MiB: a task never receives less than it asked for.
Cpus are slots of a parallel environment (its name a setting, ``smp`` by default, or the
job's ``sge_pe``), asked for only when more than one is wanted or a PE is named.

Son of Grid Engine 8.1, Open Grid Scheduler 2011.11 and Univa/Altair Grid Engine take
these same options; where they differ: UGE's ``m_mem_free`` is also per slot unless the
site made it ``consumable JOB``, and UGE can enforce memory by cgroups instead of
setrlimit (``cgroups_params``). GPUs have no standard resource in any of them: a site
defines one (``gpu`` by default here, UGE's RSMAP resources likewise) and should make it
``consumable JOB``, since a per-slot one multiplies by the slots.

The Snakemake resource names are those of snakemake-executor-plugin-sge
(``submit_string.py``): ``sge_queue`` (``-q``), ``sge_project`` (``-P``), ``sge_pe``
and ``sge_extra`` (qsub options as a shell would split them).
"""

from __future__ import annotations

import math
import re

from attrs import frozen

from ..errors import ResourceError
from ..models import ResourceRequest, Submission
from ..units import MIB, ceil_div
from ._extra import split_extra

__all__ = [
    "SgeSettings",
    "extra_options",
    "format_time",
    "parse_size",
    "parse_time",
    "slots",
    "submission",
]

_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)", re.ASCII)
_POWERS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
           "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}  # fmt: skip
_TIME = re.compile(r"(?:(?:(\d+):)?(\d+):)?(\d+)", re.ASCII)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*", re.ASCII)
SIZE_FORMS = "a number with an optional K, M, G (binary) or k, m, g (decimal), e.g. 4096M"
TIME_FORMS = "seconds, or [[hours:]minutes:]seconds, e.g. 1:30:00"
# Options the backend sets on every job: one in sge_extra would move the job's outputs,
# drop its submission key, or break the reading of qsub's reply (man qsub).
_RESERVED = ("-o", "-e", "-j", "-wd", "-cwd", "-terse", "-N", "-ac", "-sc", "-dc", "-t",
             "-sync", "-b", "-pe")  # fmt: skip


@frozen
class SgeSettings:
    """What differs between sites: the memory and GPU resources, and the parallel environment.

    Args:
        memory: the complex memory is requested as (``h_vmem``, ``h_rss``, ``mem_free``,
            ``m_mem_free`` or a site's own); per slot.
        pe: the parallel environment multi-slot jobs ask for (``qconf -spl`` lists them).
        gpu: the site's GPU complex.
    """

    memory: str = "h_vmem"
    pe: str = "smp"
    gpu: str = "gpu"

    def __attrs_post_init__(self) -> None:
        for name in ("memory", "pe", "gpu"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _NAME.fullmatch(value):
                raise ResourceError(f"sge.{name}", value, "a Grid Engine resource or PE name")


def parse_size(value: str, field: str = "h_vmem") -> int:
    """Bytes of a Grid Engine memory value (``2G``, ``500m``, ``1.5G``), rounded up."""
    found = _SIZE.fullmatch(value.strip())
    if found is None:
        raise ResourceError(field, value, SIZE_FORMS)
    return math.ceil(float(found[1]) * _POWERS[found[2]])


def format_time(seconds: int) -> str:
    """``H:MM:SS`` for whole seconds (hours unbounded)."""
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def parse_time(value: str, field: str = "h_rt") -> int:
    """Whole seconds of a Grid Engine time value."""
    found = _TIME.fullmatch(value.strip())
    if found is None:
        raise ResourceError(field, value, TIME_FORMS)
    hours, minutes, seconds = found.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds)


def slots(request: ResourceRequest) -> int:
    """The slots a request asks for: its cpus rounded up, at least one."""
    return max(1, math.ceil(request.cpus or 1))


def extra_options(value: str) -> list[str]:
    """``sge_extra`` split into qsub options as a shell would split it, and checked."""
    return split_extra(value, "sge_extra", "qsub", _RESERVED)


def _pass_through(request: ResourceRequest) -> list[str]:
    args = []
    for key, value in sorted(request.extra.items()):
        if not key.startswith("sge.") or key == "sge.pe":
            continue
        name = key.removeprefix("sge.")
        if name == "extra":
            args += extra_options(value)
        elif _NAME.fullmatch(name) and "," not in value and value.strip():
            args += ["-l", f"{name}={value}"]  # a site resource: sge.<complex>=<value>
        else:
            raise ResourceError(key, value, "sge.<complex>=<value> without ','")
    return args


def submission(request: ResourceRequest, **settings: str) -> Submission:
    """The qsub options for a request; ``settings`` are :class:`SgeSettings`' fields.

    Raises:
        ResourceError: a setting that is not a resource name, or a bad ``sge.*`` extra.
    """
    site = SgeSettings(**settings)
    notes: list[str] = []
    native: dict[str, object] = {}
    args: list[str] = []
    count = slots(request)
    pe = request.extra.get("sge.pe") or site.pe
    if count > 1 or "sge.pe" in request.extra:
        native["pe"] = f"{pe} {count}"
        args += ["-pe", pe, str(count)]
    resources = []
    if request.time is not None:
        native["h_rt"] = format_time(request.time)
        resources.append(f"h_rt={native['h_rt']}")
    if request.memory is not None:
        # per slot, in whole MiB rounded up (M is 2^20 in Grid Engine)
        native[site.memory] = f"{ceil_div(ceil_div(request.memory, MIB), count)}M"
        resources.append(f"{site.memory}={native[site.memory]}")
        if count > 1:
            notes.append(f"{site.memory} counts per slot: {native[site.memory]} x {count} slots")
    if request.accelerator is not None:
        native[site.gpu] = request.accelerator.count
        resources.append(f"{site.gpu}={request.accelerator.count}")
        if request.accelerator.type:
            notes.append(
                f"Grid Engine has no standard GPU type resource: '{request.accelerator.type}' "
                "needs a site resource, e.g. extra sge.<complex>"
            )
    if resources:
        args += ["-l", ",".join(resources)]
    if request.disk is not None:
        notes.append("Grid Engine has no standard disk resource; disk is not requested")
    if request.queue:
        args += ["-q", request.queue]
    if request.account:
        args += ["-P", request.account]  # the project: what share trees and quotas use
    args += _pass_through(request)
    return Submission("sge", tuple(args), native, tuple(notes))
