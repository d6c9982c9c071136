"""The fault-injection suite: the real components of tests/integration, faults on top.

The cluster fixture is the integration suite's own (imported, not copied), so both
suites start Slurm the same way; the ECS tests use its moto emulator the same way, and
the PostgreSQL one the server of ``tests/postgres.py``. Each test adds a row to the fault
table printed at the end of the run: fault, times injected, jobs submitted (what the
scheduler accepted), run (side effects counted), lost, run twice, and the command that
reproduces it.
"""

from __future__ import annotations

import pytest
from attrs import define, field

from ..integration.conftest import SlurmCluster, slurm, unavailable, wait

__all__ = ["FaultRow", "FaultTable", "SlurmCluster", "slurm", "unavailable", "wait"]


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
