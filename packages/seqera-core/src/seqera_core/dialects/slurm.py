"""Slurm's native forms: ``--mem``, ``--time``, ``--cpus-per-task``, ``--gres`` (``man sbatch``).

``--mem`` takes an integer with an optional K, M, G or T suffix (default M), all
binary (M = MiB). ``--time`` takes minutes, ``MM:SS``, ``HH:MM:SS``, ``D-HH``,
``D-HH:MM`` or ``D-HH:MM:SS``; Slurm itself rounds a limit up to whole minutes.
"""

from __future__ import annotations

import math
import re
import shlex

from ..errors import ResourceError
from ..models import ResourceRequest, Submission
from ..units import GIB, KIB, MIB, TIB, ceil_div
from ._values import short_digits

__all__ = [
    "check_request",
    "extra_options",
    "format_memory",
    "format_time",
    "parse_memory",
    "parse_time",
    "submission",
]

_MEMORY = re.compile(r"(\d+)([KMGT]?)", re.ASCII | re.IGNORECASE)
_FACTORS = {"": MIB, "K": KIB, "M": MIB, "G": GIB, "T": TIB}
_TIME = re.compile(
    r"(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?)"
    r"|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?",
    re.ASCII,
)
_OPTION = re.compile(r"[a-z][a-z0-9-]*", re.ASCII)
MEMORY_FORMS = "an integer with an optional K, M, G or T suffix (binary; default M), e.g. 3072M"
TIME_FORMS = (
    "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (or UNLIMITED), e.g. 90 or 1-12:00:00"
)


def format_memory(size: int) -> str:
    """``--mem`` value covering ``size`` bytes, in whole MiB rounded up (3 GiB -> ``3072M``)."""
    return f"{ceil_div(size, MIB)}M"


def parse_memory(value: str, field: str = "--mem") -> int:
    """Bytes of a ``--mem`` value."""
    match = _MEMORY.fullmatch(value.strip())
    if match is None:
        raise ResourceError(field, value, MEMORY_FORMS)
    return int(match.group(1)) * _FACTORS[match.group(2).upper()]


def format_time(seconds: int) -> str:
    """``--time`` in whole minutes, rounded up (Slurm's own resolution)."""
    return str(ceil_div(seconds, 60))


def parse_time(value: str, field: str = "--time") -> int | None:
    """Seconds of a ``--time`` value; ``None`` for UNLIMITED/INFINITE."""
    short_digits(field, value, TIME_FORMS)
    text = value.strip()
    if text.upper() in ("UNLIMITED", "INFINITE", "-1"):
        return None
    match = _TIME.fullmatch(text)
    if match is None:
        raise ResourceError(field, value, TIME_FORMS)
    g = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    if "days" in g:
        return g["days"] * 86400 + g["dh"] * 3600 + g.get("dm", 0) * 60 + g.get("ds", 0)
    if "c" in g:
        return g["a"] * 3600 + g["b"] * 60 + g["c"]
    if "b" in g:
        return g["a"] * 60 + g["b"]
    return g["a"] * 60


# Options the backend sets on every job (man sbatch): one in slurm_extra would win over
# the backend's (the later option wins), moving the job's outputs, dropping its
# submission key from the comment or breaking the reading of sbatch's reply.
_RESERVED = {
    "--job-name": "-J",
    "--output": "-o",
    "--error": "-e",
    "--chdir": "-D",
    "--comment": None,
    "--parsable": None,
    "--array": "-a",
    "--wrap": None,
}


def _reserved(arg: str) -> str | None:
    for long, short in _RESERVED.items():
        if arg == long or arg.startswith(f"{long}="):
            return long
        if short and arg.startswith(short):
            return short
    return None


def extra_options(value: str) -> list[str]:
    """``slurm_extra`` split into sbatch options as a shell would split it, and checked.

    Raises:
        ResourceError: unbalanced quotes (``shlex.split``'s "No closing quotation"), or
            an option the backend sets itself (``--job-name``, ``--output``, ``--error``,
            ``--chdir``, ``--comment``, ``--parsable``, ``--array``, ``--wrap``).
    """
    try:
        args = shlex.split(value)
    except ValueError as exc:
        raise ResourceError(
            "slurm_extra", value, f"sbatch options a shell can split ({str(exc).lower()})"
        ) from None
    for arg in args:
        if reserved := _reserved(arg):
            raise ResourceError(
                "slurm_extra", value, f"sbatch options other than {reserved}, which seqera sets"
            )
    return args


def check_request(request: ResourceRequest) -> None:
    """Raise the :class:`ResourceError` :func:`submission` would raise for ``request``."""
    submission(request)


def _extra_args(extra: dict[str, str]) -> list[str]:
    args = []
    for key, value in sorted(extra.items()):
        if not key.startswith("slurm."):
            continue
        name = key.removeprefix("slurm.")
        if name == "extra":
            # slurm_extra is a string of sbatch options, split as the user wrote them.
            args.extend(extra_options(value))
        elif _OPTION.fullmatch(name):
            # an empty value is a flag: slurm.requeue="" is --requeue
            args.append(f"--{name}={value}" if value else f"--{name}")
        else:
            raise ResourceError(key, value, "slurm.<sbatch long option name>, e.g. slurm.qos")
    return args


def _gres(request: ResourceRequest, extra: dict[str, str]) -> str | None:
    """One ``--gres`` for the GPUs and the ``gres`` resource together (Slurm keeps only
    the last ``--gres``): ``gpu:a100:2,tmpspace:10G``."""
    own = extra.pop("slurm.gres", None)
    gpus = None
    if request.accelerator is not None:
        kind = f"{request.accelerator.type}:" if request.accelerator.type else ""
        gpus = f"gpu:{kind}{request.accelerator.count}"
        if own and any(part.split(":")[0] == "gpu" for part in own.split(",")):
            raise ResourceError(
                "gres", own, f"no gpu entry when GPUs are also asked for ({gpus}); set one"
            )
    return ",".join(part for part in (gpus, own) if part) or None


def _tasks(request: ResourceRequest, args: list[str], native: dict[str, object]) -> None:
    for name, option, value in (
        ("nodes", "--nodes", request.nodes),
        ("ntasks", "--ntasks", request.tasks),
        ("ntasks_per_node", "--ntasks-per-node", request.tasks_per_node),
    ):
        if value is not None:
            native[name] = value
            args.append(f"{option}={value}")


def submission(request: ResourceRequest) -> Submission:
    """The sbatch options for a request.

    As snakemake-executor-plugin-slurm writes them (its ``submit_string.py``): CPUs per
    task, or per GPU when ``slurm.cpus-per-gpu`` is given (Slurm takes one of the two);
    ``--mem-per-cpu`` instead of ``--mem`` when memory per CPU is given (sbatch refuses
    both); tasks and nodes only when declared. ``--tmp`` is sent by the backend only where
    the partition's nodes declare that much ``TmpDisk`` (``SlurmBackend``, ``tmp``).
    """
    args: list[str] = []
    notes: list[str] = []
    native: dict[str, object] = {}
    extra = dict(request.extra)
    if request.cpus is not None:
        if "slurm.cpus-per-gpu" in extra:
            notes.append("--cpus-per-gpu replaces --cpus-per-task (Slurm takes one)")
        else:
            native["cpus_per_task"] = math.ceil(request.cpus)
            args.append(f"--cpus-per-task={native['cpus_per_task']}")
    _tasks(request, args, native)
    if request.memory_per_cpu is not None:
        native["mem_per_cpu"] = format_memory(request.memory_per_cpu)
        args.append(f"--mem-per-cpu={native['mem_per_cpu']}")
        if request.memory is not None:
            notes.append("--mem-per-cpu replaces --mem (sbatch takes one)")
    elif request.memory is not None:
        native["mem"] = format_memory(request.memory)
        args.append(f"--mem={native['mem']}")
    if request.time is not None:
        native["time_minutes"] = ceil_div(request.time, 60)
        args.append(f"--time={native['time_minutes']}")
    if request.disk is not None:
        native["tmp"] = format_memory(request.disk)
        args.append(f"--tmp={native['tmp']}")
        notes.append(
            "--tmp goes only where the partition's nodes declare that much TmpDisk "
            "(slurm.tmp: auto); Snakemake's default disk_mb would be refused everywhere else"
        )
    gres = _gres(request, extra)
    if gres:
        native["gres"] = gres
        args.append(f"--gres={gres}")
    if request.queue:
        args.append(f"--partition={request.queue}")
    if request.account:
        args.append(f"--account={request.account}")
    args.extend(_extra_args(extra))
    return Submission("slurm", tuple(args), native, tuple(notes))
