"""Reading the YAML documents users write (platforms, catalogues): safe, strict, and with
every fault a ResourceError that names the file or the flag.

Every file a user names is read through :func:`read_bounded`: at most a limit of bytes
(a document past it is refused, naming the file), so ``--platform /dev/zero`` or a
runaway generated file ends in an error, never in a read that does not end."""

from __future__ import annotations

import re
import sys
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from .errors import ResourceError

__all__ = ["DOCUMENT_LIMIT", "decode_yaml", "line_bounded", "past_limits", "read_bounded",
           "read_document"]  # fmt: skip

# Far past any platform, config or jobs file a person or a generator writes.
DOCUMENT_LIMIT = 16 * 2**20
_CHUNK = 2**16


def read_bounded(path: str | Path, flag: str, expected: str, limit: int = DOCUMENT_LIMIT) -> str:
    """The UTF-8 text of ``path``, read up to ``limit`` bytes; ResourceError naming ``flag``
    for a file that cannot be read, is not text, or is longer (``/dev/zero`` too)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with open(path, "rb") as stream:
            while size <= limit:
                chunk = stream.read(min(_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        if size > limit:
            raise ResourceError(flag, str(path), f"{expected} of at most {limit:,} bytes")
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResourceError(flag, str(path), f"{expected} ({exc})") from None


def line_bounded(stream: Iterable[str], limit: int = 2**20) -> Iterator[str]:
    """``stream``'s lines, each at most ``limit`` characters: a longer one (a file with no
    line ends, ``/dev/zero``) raises ValueError instead of growing without end."""
    read = getattr(stream, "readline", None)
    if read is None:
        yield from stream
        return
    while line := read(limit + 1):
        if len(line) > limit:
            raise ValueError(f"a line longer than {limit:,} characters")
        yield line


class _Loader(yaml.SafeLoader):
    """Safe YAML without base-60 numbers (``168:00:00`` stays a string, not 604800) and
    without duplicate keys (a second ``normal:`` is an error, not a silent override)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                key_node, yaml.ScalarNode
            ):
                continue
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_INT, re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$"), list("-+0123456789"))
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def decode_yaml(text: str, where: str, loader: type[yaml.SafeLoader] = _Loader) -> Any:
    """``text`` decoded by ``loader`` (a SafeLoader: no objects); any fault is a
    ResourceError naming ``where``, including what PyYAML lets through past Python's own
    limits: nesting deeper than the recursion limit (``RecursionError``) and an integer of
    more than ``sys.get_int_max_str_digits()`` digits (``ValueError`` from ``int()``)."""
    try:
        return yaml.load(text, Loader=loader)  # every loader here is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f"{where}: line {mark.line + 1}" if mark is not None else where
        raise ResourceError(at, exc.problem, "valid YAML") from None
    except yaml.YAMLError as exc:
        raise ResourceError(where, str(exc), "valid YAML") from None
    except (RecursionError, ValueError) as exc:
        raise past_limits(where, exc, "lists or mappings", "valid YAML") from None


def past_limits(
    where: str, exc: RecursionError | ValueError, nesting: str, expected: str
) -> ResourceError:
    """The error for a document a decoder gave up on past Python's own limits: nested
    deeper than the recursion limit (``nesting``: what its parts are called; ``expected``:
    what it should have been), or an integer of more than
    ``sys.get_int_max_str_digits()`` digits (the only ``ValueError`` the decoders let
    through, from ``int()``)."""
    if isinstance(exc, RecursionError):
        return ResourceError(where, f"{nesting} nested too deep to read", expected)
    return ResourceError(
        where, f"a number too long to read ({str(exc).split(':')[0]})",
        f"numbers of at most {sys.get_int_max_str_digits()} digits",
    )  # fmt: skip


def read_document(path: str | Path, flag: str = "--platform") -> Any:
    """A decoded YAML (or JSON) file; any fault is a ResourceError naming ``flag`` or the file.

    Duplicate keys are refused and ``168:00:00`` stays a string (see ``_Loader``).
    """
    return decode_yaml(read_bounded(path, flag, "a readable YAML file"), str(path))
