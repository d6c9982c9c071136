"""seqera's own human units, for its command line and platform files.

Sizes carry an explicit, case-sensitive unit (``4GB`` is 10^9 bytes, ``4GiB`` 2^30);
durations are ``1h30m`` parts (read by Nextflow's parser) or a ``[D-]HH:MM:SS`` clock
(read by Slurm's). Anything ambiguous (``4G``, ``4gb``, a bare number) is refused.
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..errors import ResourceError
from ..units import GB, GIB, KB, KIB, MB, MIB, TIB, ceil_scale
from . import nextflow, slurm
from ._values import at_most_largest, short_digits

__all__ = ["DURATION_FORMS", "SIZE_FORMS", "parse_duration", "parse_size"]

_SIZE_UNITS = {
    "B": 1, "kB": KB, "KB": KB, "MB": MB, "GB": GB, "TB": 1000 * GB,
    "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": TIB,
}  # fmt: skip
_SIZE = re.compile(r"(\d+(?:\.\d+)?) ?([A-Za-z]+)", re.ASCII)
_COMPOUND = re.compile(r"(?:\d+(?:\.\d+)?[dhms])+", re.ASCII)
_CLOCK = re.compile(r"(?:\d+-)?\d+:\d\d:\d\d", re.ASCII)
SIZE_FORMS = (
    "a number and a case-sensitive unit: B, kB (or KB), MB, GB, TB in powers of 1000, or "
    "KiB, MiB, GiB, TiB in powers of 1024, e.g. 4GB, 4GiB, 512MB, 1.5GiB; a bare number, "
    "a one-letter unit (4G) or a lowercase unit (4gb) is ambiguous and refused"
)
DURATION_FORMS = (
    "parts <number><unit> in the order d, h, m, s (case-sensitive; m is minutes), e.g. 1h, "
    "90m, 1h30m, 1.5h, or a clock [D-]HH:MM:SS, e.g. 01:30:00 or 2-00:00:00; a bare number "
    "is ambiguous and refused"
)


def parse_size(text: str, flag: str = "--memory") -> int:
    """Bytes of a size such as ``4GB`` (10^9) or ``4GiB`` (2^30), rounded up to a whole byte."""
    short_digits(flag, text, SIZE_FORMS)
    match = _SIZE.fullmatch(text.strip())
    if match is None or match.group(2) not in _SIZE_UNITS:
        raise ResourceError(flag, text, SIZE_FORMS)
    size = ceil_scale(Fraction(match.group(1)), _SIZE_UNITS[match.group(2)])
    if size <= 0:
        raise ResourceError(flag, text, f"a size greater than 0: {SIZE_FORMS}")
    return at_most_largest(flag, text, size, "a size in bytes")


def parse_duration(text: str, flag: str = "--time") -> int:
    """Whole seconds of ``1h30m`` (Nextflow's parser) or ``[D-]HH:MM:SS`` (Slurm's), rounded up."""
    short_digits(flag, text, DURATION_FORMS)
    value = text.strip()
    seconds: int | None = None
    if _COMPOUND.fullmatch(value) and _in_order(value):
        seconds = nextflow.parse_duration(value, flag)
    elif _CLOCK.fullmatch(value):
        seconds = slurm.parse_time(value, flag)
    if seconds is None:
        raise ResourceError(flag, text, DURATION_FORMS)
    if seconds <= 0:
        raise ResourceError(flag, text, f"a duration greater than 0: {DURATION_FORMS}")
    return at_most_largest(flag, text, seconds, "a duration in seconds")


def _in_order(text: str) -> bool:
    units = re.sub(r"[\d.]", "", text)
    # Each unit at most once, largest first: "30m1h" or "1h1h" is a typo, not a duration.
    return units == "".join(u for u in "dhms" if u in units) and len(set(units)) == len(units)
