"""The fault-injection suite: the real components of tests/integration, faults on top.

The cluster fixture is the integration suite's own (imported, not copied), so both
suites start Slurm the same way; the ECS tests use its moto emulator the same way, and
the PostgreSQL one the server of ``tests/postgres.py``. Each test adds a row to the fault
table printed at the end of the run: fault, times injected, jobs submitted (what the
scheduler accepted), run (side effects counted), lost, run twice, and the command that
reproduces it.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from attrs import define, field

from ..integration.conftest import SlurmCluster, slurm, unavailable, wait

__all__ = [
    "FaultRow",
    "FaultTable",
    "Outage",
    "SlurmCluster",
    "killed_and_run_again",
    "slurm",
    "unavailable",
    "wait",
]


@define
class FaultRow:
    """One row of the fault table."""

    fault: str
    injected: int
    jobs: int
    submitted: int
    ran: int
    lost: int
    twice: int
    command: str


@define
class FaultTable:
    """The rows the tests of this run added."""

    rows: list[FaultRow] = field(factory=list)

    def markdown(self) -> str:
        """The table as Markdown, for the closing note."""
        lines = [
            "| fault | injected | jobs | submitted | run | lost | run twice | reproduce |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.fault} | {r.injected} | {r.jobs} | {r.submitted} | {r.ran} | {r.lost} "
                f"| {r.twice} | `{r.command}` |"
            )
        return "\n".join(lines)


class Outage:
    """A component stopped for ``seconds`` and started again, by a thread of its own,
    once ``ready()`` holds (polled every ``poll`` s, given up after ``within`` s).

    ``window`` is the wall-clock (stopped, started again) of the outage, ``None`` if it
    never happened; ``failures`` what the thread raised (for the test to report, not lost
    in the thread).
    """

    def __init__(
        self,
        ready: Callable[[], bool],
        stop: Callable[[], object],
        start: Callable[[], object],
        seconds: float,
        *,
        within: float,
        poll: float,
    ) -> None:
        self.window: tuple[float, float] | None = None
        self.failures: list[BaseException] = []
        self._steps = (ready, stop, start, seconds, within, poll)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        ready, stop, start, seconds, within, poll = self._steps
        try:
            deadline = time.monotonic() + within
            while not ready():
                if time.monotonic() > deadline:
                    return
                time.sleep(poll)
            down = time.time()
            stop()
            time.sleep(seconds)
            start()
            self.window = (down, time.time())
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.failures.append(exc)

    def begin(self) -> Outage:
        """Start watching for ``ready``."""
        self._thread.start()
        return self

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the outage to be over (or given up)."""
        self._thread.join(timeout)


def killed_and_run_again(
    argv: list[str],
    workdir: Path,
    logs: Path,
    *,
    started: Callable[[], int],
    at_once: int,
    patience: float,
    settle: float,
) -> tuple[int, int, str]:
    """A Snakemake run killed (``kill -9``) mid-run, ``--unlock``, and the same command again.

    ``argv`` runs in ``workdir`` (its log: ``logs/first.log``) until ``started()`` jobs,
    held at the gate, reach ``at_once``; once killed and unlocked, it runs again
    (``logs/again.log``), and the gate (``workdir/gate``) opens ``settle`` s after that run
    hands its first jobs to the executor. Each wait gives up after ``patience`` s.
    Returns the second run's exit code, how many jobs had started when the first was
    killed, and the second run's log.
    """
    first_log = (logs / "first.log").open("w")
    first = subprocess.Popen(argv, cwd=workdir, stdout=first_log, stderr=subprocess.STDOUT)
    again: subprocess.Popen[bytes] | None = None
    try:
        # killed once as many jobs run as it may run at once (all held at the gate)
        deadline = time.monotonic() + patience
        while first.poll() is None and started() < at_once:
            assert time.monotonic() < deadline, (logs / "first.log").read_text()[-3000:]
            time.sleep(0.05)
        first.kill()
        first.wait()
        first_log.close()
        count = started()
        unlock = subprocess.run([*argv, "--unlock"], cwd=workdir, capture_output=True,
                                text=True, timeout=300, check=False)  # fmt: skip
        assert unlock.returncode == 0, unlock.stderr[-3000:]
        with (logs / "again.log").open("w+") as again_log:
            again = subprocess.Popen(argv, cwd=workdir, stdout=again_log,
                                     stderr=subprocess.STDOUT)  # fmt: skip
            # the gate opens once the second run hands its first jobs to the executor
            while "Execute" not in (logs / "again.log").read_text() and again.poll() is None:
                assert time.monotonic() < deadline + patience, "the second run did not start"
                time.sleep(0.1)
            time.sleep(settle)
            (workdir / "gate").touch()
            code = again.wait(timeout=patience)
    finally:
        for process in (first, again):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        first_log.close()
    return code, count, (logs / "again.log").read_text()


_KEY = pytest.StashKey[FaultTable]()


@pytest.fixture(scope="session")
def fault_table(request: pytest.FixtureRequest) -> FaultTable:
    """Where each test records what it injected and what came of it."""
    return request.config.stash.setdefault(_KEY, FaultTable())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the fault table after the run."""
    table = terminalreporter.config.stash.get(_KEY, None)
    if table is not None and table.rows:
        terminalreporter.write_sep("=", "fault table")
        terminalreporter.write_line(table.markdown())
