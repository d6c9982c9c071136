"""The JSON wire format of requests and responses (schemas in the repo's ``shared/schemas/``).

Field names carry their unit (``memory_bytes``, ``time_seconds``) so no reader
has to guess. Structuring is strict: no extra keys, no strings for numbers,
no floats truncated into integers, no number past the contract's maximum
(:mod:`seqera_core.bounds`); every fault names the JSON path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .bounds import beyond
from .errors import ResourceError, WireError
from .models import Accelerator, ResourceLimits, ResourceRequest, ResourceResponse

__all__ = ["dumps", "loads", "structure", "unstructure"]

T = TypeVar("T")

# Leaf classes first: a generated hook captures the hooks of its fields when it is made.
_RENAMES: dict[type, dict[str, str]] = {
    Accelerator: {},
    ResourceLimits: {"memory": "memory_bytes", "disk": "disk_bytes", "time": "time_seconds"},
    ResourceResponse: {"memory": "memory_bytes", "disk": "disk_bytes", "time": "time_seconds"},
    ResourceRequest: {
        "memory": "memory_bytes",
        "disk": "disk_bytes",
        "time": "time_seconds",
        "container": "container_image",
        "memory_per_cpu": "memory_per_cpu_bytes",
    },
}


def _strict_int(value: Any, _: type) -> int:
    # JSON Schema counts 4.0 as an integer (a number with no fractional part), and some
    # JSON writers print whole numbers that way; 4.5 and "4" are still refused.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _strict_number(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):  # cattrs would take "false" for True
        raise TypeError(f"expected true or false, got {value!r}")
    return value


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _labels(value: Any, _: type) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"expected an object of strings, got {value!r}")
    return dict(value)


# Every model renames the same attributes, so one map turns attribute paths into wire paths.
_WIRE_NAMES = {k: v for renames in _RENAMES.values() for k, v in renames.items()}


def _wire_path(message: str) -> str:
    text, sep, path = message.rpartition(" @ ")
    parts = [_WIRE_NAMES.get(part, part) for part in path.split(".")]
    return f"{text}{sep}{'.'.join(parts)}"


def _describe(exc: BaseException, _: Any) -> str:
    if isinstance(exc, ResourceError):
        name = _WIRE_NAMES.get(exc.field, exc.field)
        return f"{name}: {exc.value!r} is not valid; expected {exc.expected}"
    if isinstance(exc, KeyError):
        return f"required field missing: {exc.args[0]}"
    return str(exc) if isinstance(exc, TypeError) else f"invalid value ({exc})"


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_number)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook_func(lambda t: t == Mapping[str, str], _labels)
    for cls, renames in _RENAMES.items():
        fields: dict[str, Any] = {
            a.name: override(rename=renames.get(a.name)) for a in attrs.fields(cls)
        }
        converter.register_structure_hook(
            cls, make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True, **fields)
        )
        unfields: dict[str, Any] = {
            a.name: override(rename=renames.get(a.name), omit_if_default=a.default is None)
            for a in attrs.fields(cls)
        }
        converter.register_unstructure_hook(
            cls, make_dict_unstructure_fn(cls, converter, **unfields)
        )
    return converter


_CONVERTER = _make_converter()


def unstructure(obj: ResourceRequest | ResourceResponse) -> dict[str, Any]:
    """A JSON-ready dict for a request or response (``None`` values left out)."""
    result: dict[str, Any] = _CONVERTER.unstructure(obj)
    if isinstance(obj, ResourceRequest):
        for key in ("labels", "extra", "self_sizing"):
            if not result.get(key):
                result.pop(key, None)
    return result


def structure(document: Any, cls: type[T], *, bounded: bool = True) -> T:
    """A request or response from a decoded JSON document; raises WireError naming each field.

    ``bounded=False`` lets numbers past the contract's maxima through, for a caller that
    caps them itself (a resolver's answer is capped like a declared value)."""
    try:
        structured = _CONVERTER.structure(document, cls)
    except cattrs.BaseValidationError as exc:
        messages = cattrs.transform_error(exc, path="$", format_exception=_describe)
        raise WireError([_wire_path(m) for m in messages]) from None
    except ResourceError as exc:
        raise WireError([f"@ $: {_describe(exc, None)}"]) from None
    except (TypeError, AttributeError) as exc:
        raise WireError([f"$: expected a JSON object for {cls.__name__}: {exc}"]) from None
    if bounded and isinstance(structured, ResourceRequest | ResourceResponse):
        problems = beyond(structured)
        if problems:
            raise WireError(problems)
    return structured


def dumps(obj: ResourceRequest | ResourceResponse) -> str:
    """JSON text for a request or response."""
    return json.dumps(unstructure(obj), sort_keys=True)


def loads(text: str | bytes, cls: type[T]) -> T:
    """A request or response from JSON text."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WireError([f"$: not JSON: {exc}"]) from None
    return structure(document, cls)
