"""The run's SIGINT handler: the first Ctrl-C interrupts, its copies do not (uv run)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from snakemake_executor_plugin_seqera._restart import Interrupts


@pytest.fixture
def restored() -> Iterator[None]:
    before = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGHUP)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


def test_the_first_sigint_interrupts_and_its_copies_do_not(restored: None) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    now = [100.0]
    interrupts = Interrupts(clock=lambda: now[0])
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    now[0] += 0.5
    signal.raise_signal(signal.SIGINT)  # uv's forwarded copy: ignored
    now[0] += 5
    with pytest.raises(KeyboardInterrupt):  # long after: a Ctrl-C of its own
        signal.raise_signal(signal.SIGINT)
    now[0] += 5
    interrupts.cancelling = True
    signal.raise_signal(signal.SIGINT)  # while the jobs are being cancelled: ignored
    assert interrupts.exit_status == 130


def test_a_hangup_is_an_interrupt_unless_nohup_ignores_it(restored: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    interrupts = Interrupts()
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGHUP)
    assert interrupts.exit_status == 129
    interrupts.restore()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup snakemake ...
    Interrupts()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_python_s_own_handler_comes_back_and_a_custom_one_is_left_alone(restored: None) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts = Interrupts()
    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    interrupts.restore()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def own(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGINT, own)
    Interrupts().restore()  # an embedding program's handler: never replaced
    assert signal.getsignal(signal.SIGINT) is own
