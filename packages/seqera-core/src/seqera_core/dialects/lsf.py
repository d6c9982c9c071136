"""IBM Spectrum LSF native forms: ``bsub -n``, ``-R``, ``-M``, ``-W`` (IBM LSF 10.1 docs).

Memory limits (``bsub -M``) and reservations (``-R "rusage[mem=...]"``) are numbers in
the site's ``LSF_UNIT_FOR_LIMITS`` (``lsf.conf``: KB, MB, GB, TB, PB or EB; "The default
unit is KB", IBM LSF configuration reference, ``lsf.conf``, LSF_UNIT_FOR_LIMITS), always
rounded up so a job never gets less than it asked for. ``lsf.conf`` lives in
``$LSF_ENVDIR`` ("If LSF_ENVDIR is not defined, LSF searches for lsf.conf in /etc").

``-M`` is a per-process limit unless ``LSB_JOB_MEMLIMIT=Y`` in ``lsf.conf`` makes it a
per-job one (the sum of the job's processes; IBM, ``lsf.conf``, LSB_JOB_MEMLIMIT). Either
way the value is the task's whole memory: per process, no single process can be refused
what the task asked for, but the processes together are not capped (``explain`` says so).
``rusage[mem=]`` is reserved per host unless ``RESOURCE_RESERVE_PER_TASK=Y``
(``lsb.params``): with ``span[hosts=1]`` one host holds the job, so the whole memory is
reserved there; the ``reserve_per_task`` setting divides it by the task count instead.

``-W`` is ``[hour:]minute`` (IBM, ``bsub -W``): written in whole minutes, rounded up.
``-n N`` with ``-R "span[hosts=1]"`` keeps a task's slots on one host; an MPI rule's
``lsf.span`` (``ptile=4``...) replaces it, as snakemake-executor-plugin-lsf's ``get_span``
does. Memory per CPU is that times ``N`` for the whole job (that plugin's
``mem_mb_per_cpu``). GPUs: ``-gpu "num=N[:gmodel=TYPE]"`` (LSF 10.1.0.3+, ``bsub -gpu``).
``lsf.extra`` (Snakemake's ``lsf_extra``) is bsub options split as a shell would, never
one of those the backend sets itself.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from ..errors import ResourceError
from ..models import ResourceRequest, Submission
from ..units import ceil_div
from ._extra import split_extra

__all__ = [
    "UNITS",
    "LsfSettings",
    "check_span",
    "extra_options",
    "format_limit",
    "read_lsf_conf",
    "site_settings",
    "submission",
]

# LSF_UNIT_FOR_LIMITS values and their bytes (IBM: binary multiples, 1 KB = 1024 bytes).
UNITS: Mapping[str, int] = {
    unit: 1024 ** (power + 1) for power, unit in enumerate(("KB", "MB", "GB", "TB", "PB", "EB"))
}
# IBM LSF 10.1, "span string": hosts=1 (or -1), ptile=N (or '!' and host types), block=N,
# stripe[=N]
_SPAN = re.compile(r"hosts=-?1|ptile=[A-Za-z0-9_!',:]+|block=\d+|stripe(=\d+)?", re.ASCII)
_PASS = re.compile(r"[A-Za-z0-9_.:/@+-]+", re.ASCII)
# what the backend sets itself (backends/batch/lsf.py): names, description, outputs, cwd
_RESERVED = ("-J", "-Jd", "-o", "-oo", "-e", "-eo", "-cwd")
_CONF_LINE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$", re.ASCII)


@frozen
class LsfSettings:
    """A site's LSF settings: the unit of limits, whether ``-M`` is per job, rusage per task."""

    unit: str = "KB"
    job_memlimit: bool = False
    reserve_per_task: bool = False


def read_lsf_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``KEY=VALUE`` lines of ``$LSF_ENVDIR/lsf.conf`` (``/etc/lsf.conf`` without it);
    empty when there is none (a submit host without LSF: the documented defaults apply)."""
    environ = os.environ if env is None else env
    path = Path(environ.get("LSF_ENVDIR") or "/etc") / "lsf.conf"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        match = _CONF_LINE.fullmatch(line)
        if match:
            found[match[1]] = match[2].strip("\"'")
    return found


def _flag(field: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("y", "yes", "true", "1"):
        return True
    if text in ("n", "no", "false", "0", ""):
        return False
    raise ResourceError(field, value, "y or n")


def site_settings(
    unit: str | None = None,
    job_memlimit: bool | str | None = None,
    reserve_per_task: bool | str | None = None,
    env: Mapping[str, str] | None = None,
) -> LsfSettings:
    """The site's settings: what is given here, else ``lsf.conf``'s, else IBM's defaults.

    Raises:
        ResourceError: a unit LSF does not know, or a flag that is not y/n.
    """
    conf = read_lsf_conf(env) if unit is None or job_memlimit is None else {}
    chosen = (unit or conf.get("LSF_UNIT_FOR_LIMITS") or "KB").strip().upper()
    if chosen not in UNITS:
        field = "lsf.unit" if unit else "LSF_UNIT_FOR_LIMITS"
        raise ResourceError(field, unit or conf.get("LSF_UNIT_FOR_LIMITS"), ", ".join(UNITS))
    per_job = conf.get("LSB_JOB_MEMLIMIT", "n") if job_memlimit is None else job_memlimit
    return LsfSettings(
        chosen,
        _flag("lsf.job_memlimit", per_job),
        _flag("lsf.reserve_per_task", reserve_per_task or False),
    )


def format_limit(size: int, unit: str) -> int:
    """``size`` bytes as a whole number of ``unit`` (LSF_UNIT_FOR_LIMITS), rounded up."""
    return ceil_div(size, UNITS[unit])


def extra_options(value: str) -> list[str]:
    """``lsf_extra`` split into bsub options as a shell would split it, and checked."""
    return split_extra(value, "lsf_extra", "bsub", _RESERVED)


def _pass_through(request: ResourceRequest) -> list[str]:
    args: list[str] = []
    for key, value in sorted(request.extra.items()):
        if not key.startswith("lsf.") or key == "lsf.span":
            continue
        name = key.removeprefix("lsf.")
        if name in ("project", "group") and _PASS.fullmatch(value):
            args += ["-P" if name == "project" else "-G", value]
        elif name == "resource" and "\n" not in value:
            args += ["-R", value]
        elif name == "extra":
            args += extra_options(value)
        else:
            raise ResourceError(
                key, value, "lsf.project, lsf.group (a name), lsf.resource, lsf.extra or lsf.span"
            )
    return args


def check_span(value: object, field: str = "lsf.span") -> str:
    """An LSF span string as IBM documents it (``hosts=1``, ``ptile=4``, ``block=2``,
    ``stripe``), stripped; else ResourceError naming ``field``."""
    span = str(value).strip()
    if not _SPAN.fullmatch(span):
        raise ResourceError(field, value, "an LSF span string: hosts=1, ptile=N, block=N or "
                            "stripe[=N] (IBM LSF, span string)")  # fmt: skip
    return span


def _span(request: ResourceRequest) -> str:
    return f"span[{check_span(request.extra.get('lsf.span', 'hosts=1'))}]"


def submission(
    request: ResourceRequest,
    unit: str | None = None,
    job_memlimit: bool | str | None = None,
    reserve_per_task: bool | str | None = None,
) -> Submission:
    """``bsub`` options for ``request`` in the site's units (see the module's docstring)."""
    site = site_settings(unit, job_memlimit, reserve_per_task)
    notes: list[str] = []
    native: dict[str, object] = {"unit": site.unit}
    tasks = math.ceil(request.cpus) if request.cpus is not None else 1
    args: list[str] = []
    if request.cpus is not None:
        native["n"] = tasks
        args += ["-n", str(tasks), "-R", _span(request)]
    memory = request.memory
    if request.memory_per_cpu is not None:
        memory = request.memory_per_cpu * tasks
        if request.memory is not None:
            notes.append("memory per CPU replaces the job's memory (-M and rusage from it)")
    if memory is not None:
        limit = format_limit(memory, site.unit)
        reserve = ceil_div(limit, tasks) if site.reserve_per_task else limit
        native["M"], native["rusage_mem"] = limit, reserve
        args += ["-R", f"rusage[mem={reserve}]", "-M", str(limit)]
        if not site.job_memlimit and tasks > 1:
            notes.append(
                "-M is a per-process limit here (LSB_JOB_MEMLIMIT is not y): the job's "
                "processes together are not capped"
            )
    if request.time is not None:
        native["W"] = ceil_div(request.time, 60)
        args += ["-W", str(native["W"])]
    if request.accelerator is not None:
        gpu = f"num={request.accelerator.count}"
        if request.accelerator.type:
            gpu += f":gmodel={request.accelerator.type}"
        native["gpu"] = gpu
        args += ["-gpu", gpu]
    if request.disk is not None:
        notes.append("LSF has no standard per-job disk resource; disk is not requested")
    if request.queue:
        args += ["-q", request.queue]
    if request.account:
        args += ["-P", request.account]
    args += _pass_through(request)
    return Submission("lsf", tuple(args), native, tuple(notes))
