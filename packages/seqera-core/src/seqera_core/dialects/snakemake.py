"""Snakemake's resource dialect: ``mem_mb``, ``mem_mib``, ``mem``, ``disk*``, ``runtime``, threads.

Rules from snakemake ``resources.py`` (``parse_human_friendly``, ``standardize_size``)
and ``common/__init__.py`` (``mb_to_mib``): ``mem_mb`` counts 10^6 bytes, ``mem_mib``
2^20 bytes, ``mem``/``disk`` strings go through humanfriendly's ``parse_size``
(``4GB`` decimal, ``4GiB`` binary), ``runtime`` is minutes or a timespan string.
GPU and scheduler keys are read as snakemake-executor-plugin-slurm reads them, and the
Grid Engine ones as snakemake-executor-plugin-sge does (``submit_string.py``): ``sge_queue``
and ``sge_project`` are the queue and project (where no ``slurm_partition`` or
``slurm_account`` names one), ``sge_pe`` the parallel environment, ``sge_extra`` qsub options.

The LSF ones as snakemake-executor-plugin-lsf 0.3 reads them (``__init__.py``, ``run_job``,
``get_span``; ``docs/further.md``): ``lsf_queue`` and ``lsf_project`` are the queue (``-q``)
and project (``-P``) where no Slurm or Grid Engine name is given, ``lsf_extra`` bsub
options, ``time_min`` whole minutes of run time after ``runtime`` and ``walltime``; for a
rule with ``mpi`` only, ``span`` (an LSF span string), else ``ptile``, else
``cpus_per_node`` (``ptile=N``) replace ``span[hosts=1]``. Without ``mpi`` that plugin
ignores those three, and so they are named among the resources nothing reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import humanfriendly

from ..errors import ResourceError
from ..models import Accelerator, ResourceRequest, Translation
from ..units import MB, MIB, ceil_scale, format_bytes
from ._values import at_most_largest, number, short_digits
from .lsf import check_span

__all__ = [
    "READ_KEYS",
    "RUNNER_MEMORY",
    "default_memory",
    "format_mem_mb",
    "format_runtime",
    "job_memory",
    "parse_runtime_seconds",
    "parse_size_bytes",
    "request_from_resources",
    "runtime_minutes",
    "size_mb",
]

SIZE_FORMS = (
    "an integer of megabytes, or a size string such as '4GB' (decimal, 10^9 bytes) or "
    "'4GiB' (binary, 2^30 bytes)"
)
RUNTIME_FORMS = "an integer of minutes, or a timespan string such as '90m', '1.5h' or '2d'"
# Keys this dialect turns into the common request; anything else is the user's own resource.
READ_KEYS = frozenset(
    {
        "mem", "mem_mb", "mem_mib", "disk", "disk_mb", "disk_mib", "runtime", "walltime",
        "threads", "_cores", "_nodes", "gpu", "gpus", "gpu_model", "nvidia_gpu",
        "slurm_partition", "slurm_account", "slurm_extra", "constraint", "qos",
        "sge_queue", "sge_project", "sge_pe", "sge_extra", "tmpdir", "machine_type", "squash_key",
        # multi-task and Slurm keys of snakemake-executor-plugin-slurm (docs/further.md)
        "mpi", "tasks", "tasks_per_node", "nodes", "cpus_per_task", "mem_mb_per_cpu",
        "mem_mib_per_cpu", "gres", "cpus_per_gpu", "tasks_per_gpu", "clusters", "cluster",
        "slurm_cluster", "slurm_requeue", "reservation", "slurm_reservation",
        # snakemake-executor-plugin-lsf's own (placement: see _LSF_SPAN)
        "lsf_queue", "lsf_project", "lsf_extra", "time_min",
    }
)  # fmt: skip
# Read for an MPI rule only, the first one given (snakemake-executor-plugin-lsf get_span).
_LSF_SPAN = ("span", "ptile", "cpus_per_node")
# resource -> sbatch option (the request's extra "slurm.<option>"), as the Slurm plugin
# writes them (submit_string.py); a false-like slurm_requeue sends nothing.
_PASSED = (
    ("slurm_extra", "extra"), ("constraint", "constraint"), ("qos", "qos"), ("gres", "gres"),
    ("reservation", "reservation"), ("slurm_reservation", "reservation"),
    ("cluster", "clusters"), ("clusters", "clusters"), ("slurm_cluster", "clusters"),
)  # fmt: skip
_FALSE = ("", "0", "false", "no", "none", "off")


def _strip(value: str) -> str:
    return value.strip("'\"")


def parse_size_bytes(value: Any, field: str = "mem") -> int:
    """Bytes of a human-friendly size as Snakemake reads ``mem``/``disk`` (bare integers are MB)."""
    short_digits(field, value, SIZE_FORMS)
    if isinstance(value, str):
        text = _strip(value.strip())
        if text.isdecimal():
            return at_most_largest(field, value, int(text) * MB, "a size in bytes")
        try:
            size: int = humanfriendly.parse_size(text)
        except humanfriendly.InvalidSize:
            raise ResourceError(field, value, SIZE_FORMS) from None
        if size < 0:
            raise ResourceError(field, value, SIZE_FORMS)
        return at_most_largest(field, value, int(size), "a size in bytes")
    return at_most_largest(field, value, ceil_scale(number(field, value, SIZE_FORMS), MB),
                           "a size in bytes")  # fmt: skip


def size_mb(value: Any, field: str = "mem") -> int:
    """The ``mem_mb`` Snakemake derives from ``mem`` (``max(ceil(bytes / 1e6), 1)``)."""
    short_digits(field, value, SIZE_FORMS)
    if isinstance(value, str) and _strip(value.strip()).isdecimal():
        return int(_strip(value.strip()))
    return max(math.ceil(parse_size_bytes(value, field) / MB), 1)


def format_mem_mb(size: int) -> int:
    """``mem_mb`` covering ``size`` bytes, rounded up."""
    return -(-size // MB)


def parse_runtime_seconds(value: Any, field: str = "runtime") -> int:
    """Seconds of a ``runtime`` (an integer is minutes; strings are humanfriendly timespans)."""
    short_digits(field, value, RUNTIME_FORMS)
    if isinstance(value, str):
        text = _strip(value.strip())
        if text.isdecimal():
            return at_most_largest(field, value, int(text) * 60, "a duration in seconds")
        try:
            seconds: float = humanfriendly.parse_timespan(text)
        except (humanfriendly.InvalidTimespan, ValueError):  # ValueError: "²" and the like
            raise ResourceError(field, value, RUNTIME_FORMS) from None
        if seconds < 0 or not math.isfinite(seconds):
            raise ResourceError(field, value, RUNTIME_FORMS)
        return at_most_largest(field, value, math.ceil(seconds), "a duration in seconds")
    return at_most_largest(field, value, ceil_scale(number(field, value, RUNTIME_FORMS), 60),
                           "a duration in seconds")  # fmt: skip


def runtime_minutes(value: Any, field: str = "runtime") -> int:
    """The minutes Snakemake itself stores for a ``runtime`` (it truncates, minimum 1)."""
    short_digits(field, value, RUNTIME_FORMS)
    if isinstance(value, str):
        text = _strip(value.strip())
        if text.isdecimal():
            return int(text)
        try:
            return max(int(round(humanfriendly.parse_timespan(text)) / 60), 1)
        except (humanfriendly.InvalidTimespan, ValueError):  # ValueError: "²" and the like
            raise ResourceError(field, value, RUNTIME_FORMS) from None
    return int(number(field, value, RUNTIME_FORMS))


def format_runtime(seconds: int) -> int:
    """``runtime`` minutes covering ``seconds``, rounded up."""
    return -(-seconds // 60)


def _suffixed(resources: Mapping[str, Any], base: str) -> int | None:
    """Bytes for ``<base>``, ``<base>_mb`` or ``<base>_mib``: the largest given, so none is cut."""
    found = []
    if resources.get(base) is not None:
        found.append(parse_size_bytes(resources[base], base))
    for suffix, factor in (("_mb", MB), ("_mib", MIB)):
        name = base + suffix
        value = resources.get(name)
        if value is None:
            continue
        unit = "megabytes (10^6 bytes)" if suffix == "_mb" else "mebibytes (2^20 bytes)"
        hint = f"a number of {unit}; write {base}='{value}' for a size with a unit"
        found.append(ceil_scale(number(name, value, hint), factor))
    return max(found) if found else None


def _count(resources: Mapping[str, Any], key: str, minimum: int = 1) -> int | None:
    """A whole-number resource (``tasks``, ``nodes``...); None when absent, 0 or less
    also None where ``minimum`` is 0 (the plugin skips ``cpus_per_gpu <= 0``)."""
    value = resources.get(key)
    if value is None:
        return None
    count = number(key, value, f"a whole number >= {max(minimum, 1)}", integer=True)
    if minimum == 0 and count <= 0:
        return None
    if count < minimum:
        raise ResourceError(key, value, f"a whole number >= {minimum}")
    return int(count)


def _per_cpu(resources: Mapping[str, Any]) -> int | None:
    found = []
    for key, factor in (("mem_mb_per_cpu", MB), ("mem_mib_per_cpu", MIB)):
        if resources.get(key) is not None:
            value = number(key, resources[key], "a number of megabytes per CPU")
            if value <= 0:
                raise ResourceError(key, resources[key], "a number of megabytes per CPU > 0")
            found.append(ceil_scale(value, factor))
    return max(found) if found else None


def _passed(resources: Mapping[str, Any]) -> dict[str, str]:
    extra = {}
    for key, option in _PASSED:
        if resources.get(key):
            extra[f"slurm.{option}"] = str(resources[key])
    requeue = resources.get("slurm_requeue")
    if requeue is not None and str(requeue).strip().lower() not in _FALSE:
        extra["slurm.requeue"] = ""
    return extra


def request_from_resources(
    resources: Mapping[str, Any],
    *,
    threads: int | None = None,
    rule: str | None = None,
    attempt: int = 1,
) -> Translation:
    """The common request for a Snakemake job's ``resources`` (and ``threads``)."""
    get = resources.get
    cores = threads if threads is not None else get("threads", get("_cores"))
    cpus = None if cores is None else number("threads", cores, "a whole number of threads >= 1")
    if cpus is not None and cpus < 1:
        raise ResourceError("threads", cores, "a whole number of threads >= 1")
    memory = _suffixed(resources, "mem")
    disk = _suffixed(resources, "disk")
    runtime = get("runtime", get("walltime"))
    time = None if runtime is None else parse_runtime_seconds(runtime)
    if time is None and get("time_min") is not None:
        # the LSF plugin's time_min: a whole number of minutes (it refuses anything else)
        minutes = number("time_min", get("time_min"), "a whole number of minutes", integer=True)
        time = at_most_largest("time_min", get("time_min"), int(minutes) * 60, "a duration")
    gpus = get("gpu", get("gpus", get("nvidia_gpu")))
    accelerator = None
    if gpus is not None:
        count = number("gpu", gpus, "a whole number of GPUs", integer=True)
        model = get("gpu_model")
        accelerator = (
            Accelerator(int(count), None if model is None else str(model)) if count else None
        )
    extra = _passed(resources)
    for key, name in (("sge_pe", "sge.pe"), ("sge_extra", "sge.extra"), ("lsf_extra", "lsf.extra")):
        if get(key):
            extra[name] = str(get(key))
    if get("mpi") and (span := _lsf_span(resources)):
        extra["lsf.span"] = span
    if accelerator is not None or "gpu" in str(get("gres", "")):
        # --cpus-per-gpu and --ntasks-per-gpu only for a GPU job, and only when > 0
        # (further.md, "CPU Allocation per GPU")
        for key, option in (("cpus_per_gpu", "cpus-per-gpu"), ("tasks_per_gpu", "ntasks-per-gpu")):
            per_gpu = _count(resources, key, minimum=0)
            if per_gpu:
                extra[f"slurm.{option}"] = str(per_gpu)
    if get("cpus_per_task") is not None:
        # the Slurm plugin's --cpus-per-task: cpus_per_task when given, else threads
        cpus = _count(resources, "cpus_per_task")
    per_cpu = _per_cpu(resources)
    if get("mpi") and not (get("tasks") or get("tasks_per_node")):
        raise ResourceError(
            "mpi", get("mpi"), "an MPI launcher for a rule that also sets tasks or tasks_per_node"
        )
    request = ResourceRequest(
        cpus=cpus,
        memory=memory or None,
        disk=disk or None,
        time=time or None,
        accelerator=accelerator,
        machine_type=get("machine_type"),
        queue=get("slurm_partition") or get("sge_queue") or get("lsf_queue"),
        account=get("slurm_account") or get("sge_project") or get("lsf_project"),
        process=rule,
        attempt=attempt,
        extra=extra,
        # keeps unrelated jobs out of one squashed allocation (seqera_core.squash)
        labels={"squash_key": str(get("squash_key"))} if get("squash_key") else {},
        nodes=_count(resources, "nodes"),
        tasks=_count(resources, "tasks"),
        tasks_per_node=_count(resources, "tasks_per_node"),
        memory_per_cpu=per_cpu,
        mpi=str(get("mpi")) if get("mpi") else None,
    )
    read = READ_KEYS | set(_LSF_SPAN) if get("mpi") else READ_KEYS
    ignored = tuple(sorted(k for k in resources if k not in read))
    return Translation(request, ignored)


def _lsf_span(resources: Mapping[str, Any]) -> str | None:
    """The span string of an MPI rule's ``span``, ``ptile`` or ``cpus_per_node``."""
    span = resources.get("span")
    if span:
        return check_span(span, "span")
    for key in ("ptile", "cpus_per_node"):
        if resources.get(key):
            return f"ptile={_count(resources, key)}"
    return None


# Every job runs Snakemake itself around its command (about 140 MB resident, measured
# with snakemake 9.27): less than this is killed by any scheduler that enforces memory.
RUNNER_MEMORY = 256 * MIB


def default_memory(total_input: int | None) -> int:
    """Snakemake's ``--default-resources`` memory: ``min(max(2*input.size_mb, 1000), 8000)`` MB
    (``snakemake/resources.py``, ``DefaultResources.defaults["mem_mb"]``)."""
    input_mb = (total_input or 0) / MB
    return int(min(max(2 * input_mb, 1000), 8000) * MB)


def job_memory(memory: int | None, total_input: int | None) -> tuple[int, str | None]:
    """The memory a job of a remote executor runs in, and a warning when it was raised.

    A rule that declares none gets Snakemake's default (:func:`default_memory`) so
    ``--default-resources`` is not needed for a sensible request; one that declares less
    than :data:`RUNNER_MEMORY` gets that much, since the job runs Snakemake itself.
    """
    if memory is None:
        return default_memory(total_input), None
    if memory < RUNNER_MEMORY:
        return RUNNER_MEMORY, (
            f"memory raised from {format_bytes(memory)} to {format_bytes(RUNNER_MEMORY)}, "
            "the least a Snakemake job runs in"
        )
    return memory, None
