"""A resolver that asks a resource-optimisation API over HTTP (``shared/openapi``).

``POST {endpoint}/v1/resources/resolve`` takes one wire request and answers a wire
response (204: no opinion); ``POST {endpoint}/v1/resources/resolve/batch`` takes
``{"requests": [...]}`` (at most 100) and answers ``{"responses": [... | null]}``.
Needs the ``http`` extra (httpx).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import wire
from ..errors import SeqeraError, WireError
from ..models import ResourceRequest, ResourceResponse
from .base import Resolver

if TYPE_CHECKING:
    import httpx

__all__ = ["BATCH_LIMIT", "HttpResolver"]

BATCH_LIMIT = 100
_RETRIABLE = (500, 502, 503, 504)


def _cache_key(request: ResourceRequest) -> tuple[Any, ...]:
    # What the answer may depend on: the process, what was declared, and the attempt.
    return (
        request.process,
        request.cpus,
        request.memory,
        request.disk,
        request.time,
        request.accelerator,
        request.machine_type,
        request.attempt,
    )


class HttpResolver(Resolver):
    """Resolves through an HTTP API, with retries on 5xx and connection errors, and a cache."""

    name = "http"

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.2,
        priority: int = 0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx  # the `http` extra: only users of this resolver need it

        self.endpoint = endpoint.rstrip("/")
        self.priority = priority
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._cache: dict[tuple[Any, ...], ResourceResponse | None] = {}
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> HttpResolver | None:
        """A resolver from ``SEQERA_RESOLVER_URL``/``_TOKEN``/``_TIMEOUT``, or None if unset."""
        url = environ.get("SEQERA_RESOLVER_URL")
        if not url:
            return None
        timeout = float(environ.get("SEQERA_RESOLVER_TIMEOUT", "5"))
        return cls(url, token=environ.get("SEQERA_RESOLVER_TOKEN") or None, timeout=timeout)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _post(self, path: str, body: Any) -> httpx.Response:
        import httpx

        for attempt in range(self.retries + 1):
            try:
                response = self._client.post(self.endpoint + path, json=body)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
                if attempt == self.retries:
                    raise
            else:
                if response.status_code not in _RETRIABLE or attempt == self.retries:
                    return response
            self._sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """The API's answer for one task (cached per process, declared values and attempt)."""
        key = _cache_key(request)
        if key in self._cache:
            return self._cache[key]
        response = self._post("/v1/resources/resolve", wire.unstructure(request))
        if response.status_code == 204:
            answer = None
        elif response.status_code == 200:
            answer = wire.structure(response.json(), ResourceResponse)
        else:
            raise SeqeraError(f"{self.endpoint} answered HTTP {response.status_code}")
        self._cache[key] = answer
        return answer

    def resolve_many(self, requests: Sequence[ResourceRequest]) -> list[ResourceResponse | None]:
        """Answers for many tasks: cached ones locally, the rest in batches of 100."""
        answers: dict[tuple[Any, ...], ResourceResponse | None] = {}
        missing = []
        for request in requests:
            key = _cache_key(request)
            if key in self._cache:
                answers[key] = self._cache[key]
            elif key not in answers:
                answers[key] = None
                missing.append(request)
        for start in range(0, len(missing), BATCH_LIMIT):
            chunk = missing[start : start + BATCH_LIMIT]
            body = {"requests": [wire.unstructure(r) for r in chunk]}
            response = self._post("/v1/resources/resolve/batch", body)
            if response.status_code != 200:
                raise SeqeraError(f"{self.endpoint} answered HTTP {response.status_code}")
            try:
                items = response.json()["responses"]
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                raise WireError(["$.responses: missing from the batch answer"]) from None
            if not isinstance(items, list) or len(items) != len(chunk):
                raise WireError([f"$.responses: expected {len(chunk)} answers"])
            for request, item in zip(chunk, items, strict=True):
                answer = None if item is None else wire.structure(item, ResourceResponse)
                self._cache[_cache_key(request)] = answer
                answers[_cache_key(request)] = answer
        return [answers[_cache_key(r)] for r in requests]
