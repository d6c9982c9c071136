"""AWS API calls as both backends make them: each counted once, a failure raised as the
backend's own error naming the operation, lists cut to the APIs' limits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import botocore.exceptions

__all__ = ["call", "chunks", "counted", "error_code"]


def counted(calls: Counter[str], *clients: Any) -> None:
    """Count every API call ``clients`` make in ``calls``, by operation: once per call
    (botocore's retries of it are not counted again)."""

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    for client in clients:
        client.meta.events.register("before-call", count)


def call(error: type[Exception], method: Any, **params: Any) -> Any:
    """``method(**params)``, its refusal or lack of an answer (after botocore's retries)
    raised as ``error``: ``<operation> failed: <why>``."""
    try:
        return method(**params)
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as exc:
        raise error(f"{method.__name__} failed: {exc}") from exc


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in slices of at most ``size`` (the AWS calls' list limits)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def error_code(exc: botocore.exceptions.ClientError) -> str:
    """The AWS error code of a refused call (``ResourceNotFoundException``, ...)."""
    return str(exc.response.get("Error", {}).get("Code", ""))
