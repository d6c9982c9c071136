"""The resolver chain: priority, discovery, fallback on failure, caps."""

from __future__ import annotations

import logging
import sys
import threading
import time
from importlib.metadata import entry_points
from pathlib import Path

import attrs
import pytest

from seqera_core import ResourceLimits, ResourceRequest, ResourceResponse
from seqera_core.history import open_history
from seqera_core.resolvers import (
    ENTRY_POINT_GROUP,
    DefaultResolver,
    MaximumResolver,
    PredictiveResolver,
    Resolution,
    Resolver,
    discover,
    resolve,
)
from tests.conftest import require

GIB = 2**30
DEFAULTS = ResourceResponse(cpus=1, memory=GIB, disk=10 * GIB, time=3600)
REQUEST = ResourceRequest(cpus=2, memory=4 * GIB, process="ALIGN", task_index=3, attempt=2)
TASK = "ALIGN #3 (attempt 2)"


class Fixed(Resolver):
    def __init__(self, name: str, priority: int, answer: object) -> None:
        self.name, self.priority, self.answer = name, priority, answer
        self.calls = 0

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer  # type: ignore[return-value]


class Hanging(Resolver):
    name = "hanging"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def resolve(self, request: ResourceRequest) -> None:
        self.calls += 1
        self.release.wait(10)


def _response(**values: object) -> ResourceResponse:
    """A response whose values never met the model's validators."""
    answer = ResourceResponse.__new__(ResourceResponse)
    for name, value in values.items():
        object.__setattr__(answer, name, value)
    return answer


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_lowest_priority_wins_and_declared_is_kept() -> None:
    low = Fixed("low", -10, ResourceResponse(cpus=4, memory=GIB, disk=GIB, time=60))
    high = Fixed("high", 5, ResourceResponse(cpus=8, memory=GIB, disk=GIB, time=60))
    result = resolve(REQUEST, [high, DefaultResolver(), low], defaults=DEFAULTS)
    assert result == Resolution(REQUEST, low.answer, "low", ())  # type: ignore[arg-type]
    assert result.declared is REQUEST and high.calls == 0
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.resolver = "other"  # type: ignore[misc]


def test_no_opinion_falls_through_to_the_next_then_declared_plus_defaults() -> None:
    later = Fixed("later", 1, ResourceResponse(cpus=3, memory=GIB, disk=GIB, time=60))
    assert resolve(REQUEST, [Fixed("none", 0, None), later], defaults=DEFAULTS).resolver == "later"
    result = resolve(REQUEST, [Fixed("none", 0, None), DefaultResolver()], defaults=DEFAULTS)
    assert result.resolver == "declared" and result.notes == ()
    assert result.effective == ResourceResponse(cpus=2, memory=4 * GIB, disk=10 * GIB, time=3600)
    assert resolve(REQUEST, [], defaults=DEFAULTS).effective == result.effective


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (RuntimeError("boom"), "failed (RuntimeError: boom)"),
        (SystemExit(3), "failed (SystemExit: 3)"),
        ("lots of memory", "malformed"),
        ({"cpus": 1}, "malformed"),
        (_response(cpus=-1, memory=1, disk=1, time=1), "malformed"),
        (_response(cpus=1, memory=1.5, disk=1, time=1), "malformed"),
        (_response(cpus=float("nan"), memory=1, disk=1, time=1), "malformed"),
        (_response(cpus=1), "malformed"),  # memory, disk and time never set
    ],
)
def test_failure_or_garbage_warns_once_and_uses_declared(
    caplog: pytest.LogCaptureFixture, answer: object, why: str
) -> None:
    other = Fixed("other", 5, ResourceResponse(cpus=9, memory=GIB, disk=GIB, time=60))
    result = resolve(REQUEST, [Fixed("bad", 0, answer), other], defaults=DEFAULTS)
    assert result.resolver == "declared" and result.effective.memory == 4 * GIB
    assert other.calls == 0  # the declared values, not another resolver's guess
    (warning,) = _warnings(caplog)
    assert warning.startswith("resolver bad ") and TASK in warning and why in warning
    assert result.notes == (warning.split(f" for {TASK}")[0] + "; declared values used",)


def test_a_hanging_resolver_is_bounded_and_holds_one_daemon_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hanging = Hanging()
    try:
        started = time.monotonic()
        result = resolve(REQUEST, [hanging], defaults=DEFAULTS, timeout=0.2)
        assert time.monotonic() - started < 1
        assert result.resolver == "declared" and result.effective.memory == 4 * GIB
        (warning,) = _warnings(caplog)
        assert warning.startswith("resolver hanging timed out after 0.2 s") and TASK in warning
        threads = [t for t in threading.enumerate() if t.name == "seqera-resolver-hanging"]
        assert len(threads) == 1 and threads[0].daemon  # never keeps the process alive
        caplog.clear()
        # While the abandoned call runs, the resolver is skipped: no second thread.
        again = resolve(REQUEST, [hanging], defaults=DEFAULTS, timeout=0.2)
        assert again.resolver == "declared" and hanging.calls == 1
        (warning,) = _warnings(caplog)
        assert "resolver hanging was skipped" in warning and TASK in warning
    finally:
        hanging.release.set()
    threads[0].join(2)
    resolve(REQUEST, [hanging], defaults=DEFAULTS, timeout=0.2)
    assert hanging.calls == 2  # asked again once the earlier call returned


def test_caps_by_resource_limits_then_queue() -> None:
    big = Fixed("big", 0, ResourceResponse(cpus=64, memory=64 * GIB, disk=GIB, time=10**6))
    request = ResourceRequest(memory=GIB, resource_limits=ResourceLimits(memory=32 * GIB))
    result = resolve(
        request, [big], defaults=DEFAULTS, caps=ResourceLimits(cpus=16, memory=16 * GIB)
    )
    assert (result.effective.cpus, result.effective.memory) == (16, 16 * GIB)
    assert result.declared is request and result.resolver == "big"
    assert result.notes == (
        "memory 64 GiB capped to the resource limit 32 GiB",
        "cpus 64 capped to the queue limit 16",
        "memory 32 GiB capped to the queue limit 16 GiB",
    )


def test_defaults_are_capped_too() -> None:
    request = ResourceRequest(resource_limits=ResourceLimits(time=600))
    result = resolve(request, [], defaults=DEFAULTS)
    assert result.effective.time == 600 and result.resolver == "declared"
    assert result.notes == ("time 1h capped to the resource limit 10m",)


def test_the_default_resolver_is_registered_by_seqera_core() -> None:
    (entry,) = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == "default"]
    assert entry.load() is DefaultResolver
    assert DefaultResolver().resolve(REQUEST) is None
    assert DefaultResolver().enabled()


def test_discovery_from_an_installed_plugin(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    require("seqera_test_resolver", "the test plugin package is installed by the core session")
    assert [r.name for r in discover()] == ["default"]  # the plugin's enabled() says no
    monkeypatch.setenv("SEQERA_TEST_RESOLVER", "1")
    caplog.clear()
    found = discover()
    # the disabled one is left out, the broken one skipped with a warning, default last
    assert [r.name for r in found] == ["doubling", "default"]
    (warning,) = _warnings(caplog)
    assert "'broken'" in warning and "skipped" in warning
    result = resolve(REQUEST, found, defaults=DEFAULTS)
    assert result.resolver == "doubling" and result.effective.memory == 8 * GIB
    assert result.declared.memory == 4 * GIB
    assert "seqera_test_resolver" in sys.modules


class Where(Fixed):
    """Records the thread it was called on."""

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        self.thread = threading.current_thread()
        return super().resolve(request)


@pytest.mark.parametrize("inline", [True, False])
def test_inline_resolvers_are_called_on_the_callers_thread(
    inline: bool, caplog: pytest.LogCaptureFixture
) -> None:
    answer = ResourceResponse(cpus=1, memory=GIB, disk=GIB, time=60)
    resolver = Where("where", 0, answer)
    resolver.inline = inline
    assert resolve(REQUEST, [resolver], defaults=DEFAULTS).effective == answer
    assert (resolver.thread is threading.current_thread()) is inline
    # an inline resolver's failure is still only a warning, with the declared values
    resolver.answer = RuntimeError("boom")
    resolution = resolve(REQUEST, [resolver], defaults=DEFAULTS)
    assert resolution.resolver == "declared"
    assert any("failed (RuntimeError: boom)" in w for w in _warnings(caplog))


def test_history_resolvers_are_inline_only_over_a_local_history(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h.db")
    assert PredictiveResolver(history).inline and MaximumResolver(history).inline
    assert not Fixed("plain", 0, None).inline  # third-party resolvers keep the timeout
