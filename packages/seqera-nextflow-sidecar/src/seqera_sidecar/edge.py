"""The HTTP edge: who may call the sidecar and what they may send it.

Rules, checked before any handler runs:

* ``Host`` must name an allowed host (default: ``127.0.0.1``, ``localhost``, ``[::1]``,
  any port), so a page that rebinds its DNS name to 127.0.0.1 cannot reach the API
  (the same defence as Jupyter's ``allow_remote_access``/``local_hostnames``). Refused: 400.
* With a token, ``Authorization: Bearer <token>`` is compared as bytes in constant time;
  a header that is not ASCII (or not UTF-8) is simply not the token: 401.
* A body must be ``application/json`` (a browser's cross-site "simple request" can only
  send ``text/plain``, form or multipart bodies without a CORS preflight): 415 otherwise.
* A body is read up to ``limit`` bytes and refused beyond it (413) before it is parsed,
  from ``Content-Length`` when given and while streaming when not.
* JSON is parsed strictly: no ``NaN``/``Infinity``, no integer longer than Python's
  4,300-digit limit, no nesting deeper than the decoder's recursion limit: all 400.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request

from seqera_core.errors import WireError

__all__ = ["DEFAULT_BODY_LIMIT", "LOOPBACK_HOSTS", "Refused", "allowed_host", "read_json"]

DEFAULT_BODY_LIMIT = 8 * 2**20
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
_PORT = re.compile(r":[0-9]{1,5}\Z")


class Refused(Exception):
    """A request the edge turns away: its HTTP status, a problem message, a metric kind."""

    def __init__(self, status: int, problem: str, kind: str) -> None:
        self.status, self.problem, self.kind = status, problem, kind
        super().__init__(problem)


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port, lower case."""
    host = header.strip().lower()
    if host.startswith("["):  # an IPv6 literal keeps its brackets
        return host[: host.find("]") + 1] if "]" in host else host
    return _PORT.sub("", host)


def allowed_host(request: Request, hosts: frozenset[str] | None) -> None:
    """Raise Refused unless the request's ``Host`` is one of ``hosts`` (None: any)."""
    if hosts is None:
        return
    header = request.headers.get("host")
    if header is None or host_name(header) not in hosts:
        shown = "none" if header is None else repr(header[:100])
        raise Refused(400, f"Host: {shown} is not a name this sidecar answers to "
                      f"(allowed: {', '.join(sorted(hosts))}; see --allow-host)",
                      "host")  # fmt: skip


def authorized(request: Request, token: bytes | None) -> None:
    """Raise Refused(401) unless the request carries the bearer token (when one is set)."""
    if token is None:
        return
    # Starlette decodes headers as latin-1: encoding back gives the bytes that were sent,
    # whatever they were, and bytes compare in constant time where non-ASCII str cannot.
    given = request.headers.get("authorization", "").encode("latin-1")
    scheme, _, value = given.partition(b" ")
    if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), token):
        raise Refused(401, "a valid bearer token is required", "unauthorized")


def _json_type(header: str | None) -> bool:
    if header is None:
        return False
    media = header.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                           and media.endswith("+json"))  # fmt: skip


async def read_body(request: Request, limit: int) -> bytes:
    """The body, or Refused(413) as soon as it passes ``limit`` bytes."""
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise Refused(413, f"the body ({length} bytes) exceeds the limit of {limit} bytes",
                      "too_large")  # fmt: skip
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"the body exceeds the limit of {limit} bytes", "too_large")
        chunks.append(chunk)
    return b"".join(chunks)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


async def read_json(request: Request, limit: int) -> Any:
    """The JSON body: 415 unless ``application/json``, 413 past ``limit``, 400 if malformed."""
    if not _json_type(request.headers.get("content-type")):
        given = request.headers.get("content-type")
        raise Refused(415, f"Content-Type: {given!r} is not application/json", "media_type")
    body = await read_body(request, limit)
    try:
        return json.loads(body, parse_constant=_no_constant)
    except RecursionError:
        raise WireError(["$: the body is nested too deeply"]) from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, digit limit, NaN
        raise WireError([f"$: the body is not JSON ({str(exc)[:200]})"]) from None


def token_bytes(token: str | None) -> bytes | None:
    """The token as clients send it: UTF-8 bytes."""
    return None if token is None else token.encode("utf-8")


def hosts(extra: Iterable[str] = ()) -> frozenset[str]:
    """Loopback names plus ``extra`` (host names or ``host:port``), as ``Host`` is compared."""
    return LOOPBACK_HOSTS | {host_name(h) for h in extra}
