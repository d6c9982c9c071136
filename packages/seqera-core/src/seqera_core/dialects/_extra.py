"""A rule's extra scheduler options (``sge_extra``, ``lsf_extra``), split and checked once."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..errors import ResourceError

__all__ = ["split_extra"]


def split_extra(value: str, field: str, command: str, reserved: Sequence[str]) -> list[str]:
    """``value`` split into ``command`` options as a shell would split it, and checked.

    Raises:
        ResourceError: unbalanced quotes, or an option the backend sets itself.
    """
    try:
        args = shlex.split(value)
    except ValueError as exc:
        raise ResourceError(
            field, value, f"{command} options a shell can split ({str(exc).lower()})"
        ) from None
    for arg in args:
        if arg in reserved:
            raise ResourceError(field, value, f"{command} options other than "
                                f"{', '.join(reserved)}, which seqera sets")  # fmt: skip
    return args
