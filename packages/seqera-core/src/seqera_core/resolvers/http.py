"""A resolver that asks a resource-optimisation API over HTTP.

The contract is ``shared/openapi/seqera-sidecar.yaml``: ``POST {endpoint}/v1/resources/resolve``
takes one wire request and answers a wire response (204: no opinion), and
``POST {endpoint}/v1/resources/resolve/batch`` takes ``{"requests": [...]}`` (at most 100)
and answers ``{"responses": [... | null]}`` in the same order. Needs the ``http`` extra (httpx).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Self

from .. import wire
from ..bounds import MAXIMA
from ..errors import SeqeraError, UsageError, WireError
from ..models import ResourceRequest, ResourceResponse
from ..platforms import cap
from ..redaction import redacted
from .base import Resolver

if TYPE_CHECKING:
    import httpx

__all__ = ["BATCH_LIMIT", "HttpResolver"]

BATCH_LIMIT = 100
RESOLVE_PATH = "/v1/resources/resolve"
BATCH_PATH = "/v1/resources/resolve/batch"
_MAX_BACKOFF = 10.0


def _cache_key(request: ResourceRequest) -> Hashable:
    # What the answer may depend on: the process, what was declared, and the attempt
    # (a retry after an out-of-memory failure must not get the first attempt's answer).
    return (
        request.process,
        request.cpus,
        request.memory,
        request.disk,
        request.time,
        request.accelerator,
        request.machine_type,
        request.resource_limits,
        request.attempt,
    )


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise WireError([f"$: the answer is not JSON ({exc})"]) from None


class HttpResolver(Resolver):
    """Resolves through an HTTP API: bearer token, retries on 5xx and connection errors, cache.

    ``timeout`` bounds each HTTP call; the resolver chain's own timeout bounds the whole.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.2,
        priority: int = 0,
        name: str = "http",
        cache_size: int = 10_000,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        try:
            import httpx  # the `http` extra: only users of this resolver need it
        except ImportError:
            raise UsageError("the HTTP resolver needs httpx: install seqera-core[http]") from None
        if not endpoint.startswith(("http://", "https://")):
            shown = redacted(endpoint)
            raise UsageError(f"resolver endpoint {shown!r} is not an http(s) URL")
        if not timeout > 0 or retries < 0 or backoff < 0 or cache_size < 0:
            raise UsageError("resolver timeout must be > 0; retries, backoff, cache_size >= 0")
        self.endpoint = endpoint.rstrip("/")
        self.name = name
        self.priority = priority
        self.retries = retries
        self.backoff = backoff
        self.cache_size = cache_size
        self._sleep = sleep
        self._cache: collections.OrderedDict[Hashable, ResourceResponse | None] = (
            collections.OrderedDict()
        )
        # The chain calls resolve() from worker threads; httpx.Client is thread-safe.
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def __repr__(self) -> str:
        shown = redacted(self.endpoint)
        return f"HttpResolver({shown!r}, name={self.name!r}, priority={self.priority})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _lookup(self, key: Hashable) -> tuple[bool, ResourceResponse | None]:
        with self._lock:
            if key not in self._cache:
                return False, None
            self._cache.move_to_end(key)
            return True, self._cache[key]

    def _remember(self, key: Hashable, answer: ResourceResponse | None) -> None:
        with self._lock:
            self._cache[key] = answer
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _post(self, path: str, body: Any) -> httpx.Response:
        import httpx

        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._client.post(self.endpoint + path, json=body)
            except (httpx.NetworkError, httpx.RemoteProtocolError):
                # Refused, reset or cut off: worth another try. A timeout is not retried,
                # the server is there but slow and the chain's deadline is near.
                if last:
                    raise
            else:
                if response.status_code < 500 or last:
                    return response
            self._sleep(min(self.backoff * 2**attempt, _MAX_BACKOFF))
        raise AssertionError("unreachable")

    def _error(self, response: httpx.Response) -> SeqeraError:
        detail = response.text[:200].strip()
        return SeqeraError(
            f"{redacted(str(response.request.url))} answered HTTP {response.status_code}"
            + (f": {detail}" if detail else "")
        )

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """The API's answer for one task, cached per process, declared values and attempt."""
        key = _cache_key(request)
        hit, answer = self._lookup(key)
        if hit:
            return answer
        response = self._post(RESOLVE_PATH, wire.unstructure(request))
        if response.status_code == 204:
            answer = None
        elif response.status_code == 200:
            answer = _answer(_json(response))
        else:
            raise self._error(response)
        self._remember(key, answer)
        return answer

    def resolve_many(self, requests: Sequence[ResourceRequest]) -> list[ResourceResponse | None]:
        """Answers in the order of ``requests``: cached ones locally, the rest in batches of 100.

        Raises SeqeraError (WireError for a malformed answer) when a batch call fails; the
        answers of earlier batches are cached by then.
        """
        keys = [_cache_key(r) for r in requests]
        answers: dict[Hashable, ResourceResponse | None] = {}
        missing: dict[Hashable, ResourceRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key in answers or key in missing:
                continue
            hit, answer = self._lookup(key)
            if hit:
                answers[key] = answer
            else:
                missing[key] = request
        pending = list(missing.items())
        for start in range(0, len(pending), BATCH_LIMIT):
            chunk = pending[start : start + BATCH_LIMIT]
            body = {"requests": [wire.unstructure(r) for _, r in chunk]}
            response = self._post(BATCH_PATH, body)
            if response.status_code != 200:
                raise self._error(response)
            for (key, _), answer in zip(chunk, _batch(_json(response), len(chunk)), strict=True):
                self._remember(key, answer)
                answers[key] = answer
        return [answers[key] for key in keys]


def _answer(document: Any) -> ResourceResponse:
    """A service's answer, its numbers past the contract's maxima capped to them as a
    declared value's are (a 309-digit ``time_seconds`` never reaches a scheduler)."""
    answer = wire.structure(document, ResourceResponse, bounded=False)
    return cap(answer, MAXIMA, "contract maximum")[0]


def _batch(document: Any, expected: int) -> list[ResourceResponse | None]:
    items = document.get("responses") if isinstance(document, dict) else None
    if not isinstance(items, list) or len(items) != expected:
        raise WireError([f"$.responses: expected a list of {expected} answers or nulls"])
    answers: list[ResourceResponse | None] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            answers.append(None if item is None else _answer(item))
        except WireError as exc:
            problems.extend(f"$.responses[{index}]: {p}" for p in exc.problems)
    if problems:
        raise WireError(problems)
    return answers
