"""Nextflow's resource dialect, exactly as its ``MemoryUnit`` and ``Duration`` read it.

Rules taken from nextflow ``modules/nf-commons/src/main/nextflow/util/MemoryUnit.groovy``,
``Duration.groovy`` and ``processor/TaskConfig.groovy`` (which trims a directive's
string before parsing it and reads a bare number as bytes or milliseconds).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from typing import Any

from ..errors import ResourceError
from ..models import Accelerator, ResourceLimits, ResourceRequest, ResourceResponse
from ..units import MIB, ceil_div, format_seconds
from ._values import short_digits

__all__ = [
    "config_directives",
    "format_duration",
    "format_memory",
    "parse_duration",
    "parse_memory",
    "request_from_directives",
    "seconds_from_millis",
]

_LONG_MAX = 2**63 - 1
_MEMORY_UNITS = ("B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB")
# Java's \s and \S are ASCII-only; re.ASCII gives Python the same classes.
_MEMORY = re.compile(r"([0-9.]+)\s*(\S)?B?", re.ASCII)
_DURATION = re.compile(r"(\d+\.?\d*)\s*([a-zA-Z]+)", re.ASCII)
_LEGACY = re.compile(r"(\d{1,2}):(\d{1,2}):(\d{1,2})", re.ASCII)
_DURATION_MS = {
    **dict.fromkeys(("ms", "milli", "millis"), 1),
    **dict.fromkeys(("s", "sec", "second", "seconds"), 1_000),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}
MEMORY_FORMS = (
    "a number and a unit B, KB, MB, GB, TB, PB, EB or ZB (1 KB = 1024 B), e.g. '4 GB', '1.5GB' "
    "or '512M'; the unit letter is case-insensitive but a trailing 'b' is not ('4 gb' and "
    "'4 GiB' are invalid); a bare integer is bytes"
)
DURATION_FORMS = (
    "one or more '<number><unit>' parts with units ms, s, m, h, d (or milli(s), sec, second(s), "
    "min, minute(s), hour(s), day(s); case-sensitive), e.g. '1h 30m' or '2d 3h', or 'hh:mm:ss'; "
    "a bare integer is milliseconds"
)


def _java_trim(text: str) -> str:
    # String.trim() strips every char <= U+0020, not Unicode whitespace.
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _java_round(value: float) -> int:
    # Math.round(double): half up, saturating at Long.MIN/MAX_VALUE.
    if math.isnan(value):
        return 0
    if value >= _LONG_MAX:
        return _LONG_MAX
    floor = math.floor(value)
    return int(floor) + (1 if value - floor >= 0.5 else 0)


def _float32(text: str) -> float:
    # Duration parses each number with String.toFloat(): single precision.
    return float(struct.unpack("f", struct.pack("f", float(text)))[0])


def parse_memory(value: str | int, field: str = "memory") -> int:
    """Bytes of a Nextflow memory value (``'4 GB'``, ``'1.5GB'``, or an integer of bytes)."""
    if isinstance(value, bool):
        raise ResourceError(field, value, MEMORY_FORMS)
    if isinstance(value, int):
        if not 0 <= value <= _LONG_MAX:
            raise ResourceError(field, value, "a non-negative number of bytes, at most 2^63-1")
        return value
    if not isinstance(value, str):
        raise ResourceError(field, value, MEMORY_FORMS)
    short_digits(field, value, MEMORY_FORMS)
    match = _MEMORY.fullmatch(_java_trim(value))
    if match is None:
        raise ResourceError(field, value, MEMORY_FORMS)
    number, unit = match.group(1), (match.group(2) or "").upper()
    if unit in ("", "B"):
        # Long.parseLong: digits only, and within a signed 64-bit long.
        if not number.isdigit() or int(number) > _LONG_MAX:
            raise ResourceError(
                field,
                value,
                f"a whole number of bytes (at most 2^63-1) without a unit, or {MEMORY_FORMS}",
            )
        return int(number)
    power = _MEMORY_UNITS.index(unit + "B") if unit + "B" in _MEMORY_UNITS else -1
    if power < 0:
        raise ResourceError(field, value, MEMORY_FORMS)
    try:
        amount = float(number)
    except ValueError:
        raise ResourceError(field, value, MEMORY_FORMS) from None
    return _java_round(amount * float(1024**power))


def format_memory(size: int) -> str:
    """The exact Nextflow memory string for a number of bytes, in the largest whole unit."""
    if size < 0:
        raise ResourceError("memory", size, "a non-negative number of bytes")
    power = 0
    while power + 1 < len(_MEMORY_UNITS) and size and size % 1024 ** (power + 1) == 0:
        power += 1
    return f"{size // 1024**power} {_MEMORY_UNITS[power]}"


def _duration_ms(text: str) -> int | None:
    total = 0
    rest = text
    first = True
    while True:
        match = _DURATION.match(rest)
        if match is None:
            if first or rest:
                break
            return total
        factor = _DURATION_MS.get(match.group(2))
        if factor is None:
            return None  # IllegalStateException: no fallback to hh:mm:ss
        total += _java_round(_float32(match.group(1)) * factor)
        rest = _java_trim(rest[match.end() :])
        first = False
    legacy = _LEGACY.fullmatch(text)
    if legacy is None:
        return None
    hours, minutes, seconds = (int(g) for g in legacy.groups())
    return hours * 3_600_000 + minutes * 60_000 + seconds * 1_000


def parse_duration_ms(value: str | int, field: str = "time") -> int:
    """Milliseconds of a Nextflow duration (``'1h 30m'``, ``'01:30:00'``, or integer ms)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ResourceError(field, value, DURATION_FORMS)
    if isinstance(value, int):
        if value < 0:
            raise ResourceError(field, value, "a non-negative number of milliseconds")
        return value
    short_digits(field, value, DURATION_FORMS)
    millis = _duration_ms(_java_trim(value))
    if millis is None:
        raise ResourceError(field, value, DURATION_FORMS)
    return millis


def parse_duration(value: str | int, field: str = "time") -> int:
    """Whole seconds of a Nextflow duration, rounded up from milliseconds."""
    return ceil_div(parse_duration_ms(value, field), 1000)


def format_duration(seconds: int) -> str:
    """The exact Nextflow duration string for whole seconds, e.g. ``'1d 2h 30m'``."""
    if seconds < 0:
        raise ResourceError("time", seconds, "a non-negative number of seconds")
    return format_seconds(seconds)  # its `1d 2h 3m 4s` parts are Nextflow's own units


def _cpus(value: Any, field: str = "cpus") -> int:
    # TaskConfig.getCpus: `value as int`, 0/null means 1, negatives are an error.
    if isinstance(value, str):
        value = value.strip()
        short_digits(field, value, "a whole number of cpus >= 1")
        if not re.fullmatch(r"[0-9]+", value, re.ASCII):
            raise ResourceError(field, value, "a whole number of cpus >= 1")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ResourceError(field, value, "a whole number of cpus >= 1")
    if value > _LONG_MAX:  # Integer overflow in Groovy; no float holds much more
        raise ResourceError(field, value, "a whole number of cpus >= 1, at most 2^63-1")
    if value < 0:
        raise ResourceError(field, value, "a whole number of cpus >= 1 (negative is invalid)")
    return value or 1


def _accelerator(value: Any) -> Accelerator:
    # AcceleratorResource: a number, or a map with `request` (or `limit`) and `type`.
    short_digits("accelerator", value, "a count, or a map with request and type")
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip(), re.ASCII):
        value = int(value)  # ASCII digits only: "²".isdigit() is True, int("²") fails
    if isinstance(value, int) and not isinstance(value, bool):
        count, kind = value, None
    elif isinstance(value, Mapping):
        count = value.get("request", value.get("limit"))
        kind = value.get("type")
    else:
        raise ResourceError("accelerator", value, "a count, or a map with request and type")
    short_digits("accelerator", count, "a count of at least 1")
    if isinstance(count, str) and re.fullmatch(r"[0-9]+", count.strip(), re.ASCII):
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= _LONG_MAX:
        raise ResourceError("accelerator", value, "a count of at least 1, at most 2^63-1")
    return Accelerator(count, None if kind is None else str(kind))


def _memory_or_none(value: Any, field: str) -> int | None:
    size = parse_memory(value, field)
    return size or None  # TaskConfig treats a zero MemoryUnit as "not set"


def _limits(value: Mapping[str, Any]) -> ResourceLimits:
    unknown = set(value) - {"cpus", "memory", "disk", "time"}
    if unknown:
        raise ResourceError(
            "resourceLimits", sorted(unknown)[0], "one of the keys cpus, memory, disk, time"
        )
    time = value.get("time")
    return ResourceLimits(
        cpus=_cpus(value["cpus"], "resourceLimits.cpus") if "cpus" in value else None,
        memory=_memory_or_none(value["memory"], "resourceLimits.memory")
        if "memory" in value
        else None,
        disk=_memory_or_none(value["disk"], "resourceLimits.disk") if "disk" in value else None,
        time=parse_duration(time, "resourceLimits.time") or None if time is not None else None,
    )


_DIRECTIVES = (
    "cpus",
    "memory",
    "disk",
    "time",
    "accelerator",
    "machineType",
    "container",
    "queue",
    "clusterOptions",
    "resourceLimits",
    "resourceLabels",
)


def request_from_directives(
    directives: Mapping[str, Any], *, process: str | None = None, attempt: int = 1
) -> ResourceRequest:
    """The common request for a Nextflow process's directives (``cpus``, ``memory``, ...)."""
    unknown = set(directives) - set(_DIRECTIVES)
    if unknown:
        raise ResourceError(
            sorted(unknown)[0], directives[sorted(unknown)[0]], f"a directive of {_DIRECTIVES}"
        )
    get = directives.get
    time = get("time")
    extra = {}
    if get("clusterOptions"):
        extra["cluster_options"] = str(get("clusterOptions"))
    limits = get("resourceLimits")
    return ResourceRequest(
        cpus=_cpus(get("cpus")) if get("cpus") is not None else None,
        memory=_memory_or_none(get("memory"), "memory") if get("memory") is not None else None,
        disk=_memory_or_none(get("disk"), "disk") if get("disk") is not None else None,
        time=(parse_duration(time) or None) if time is not None else None,
        accelerator=_accelerator(get("accelerator")) if get("accelerator") is not None else None,
        machine_type=get("machineType"),
        container=get("container"),
        queue=get("queue"),
        resource_limits=_limits(limits) if limits is not None else None,
        labels=get("resourceLabels") or {},
        extra=extra,
        process=process,
        attempt=attempt,
    )


def seconds_from_millis(millis: float) -> int:
    """Whole seconds of a Nextflow time limit in milliseconds (a trace's or weblog's ``time``
    field), rounded up: a task never gets less time than it declared."""
    return math.ceil(millis / 1000)


def config_directives(response: ResourceResponse) -> dict[str, str]:
    """``cpus``/``memory``/``time`` as a Nextflow config writes them (for ``withName``
    blocks): memory up to whole MB (MiB), time up to whole minutes, so the config stays
    readable and never gives less."""
    memory = ceil_div(response.memory, MIB) * MIB
    time = ceil_div(response.time, 60) * 60
    cpus = ceil_div(int(response.cpus * 1000), 1000)
    return {"cpus": str(cpus), "memory": f"'{format_memory(memory)}'",
            "time": f"'{format_duration(time)}'"}  # fmt: skip
