"""One machine-readable line per figure, so that a run can be compared with the last.

Every benchmark appends its figures to a JSON-lines file (``--results FILE``, default
``benchmarks/results.jsonl``), one object per figure::

    {"benchmark": "plan", "figure": "wall", "value": 1.42, "unit": "s",
     "params": {"jobs": 100000, "variant": "lookahead"}, "run": "2026-11-24T01:50:00Z",
     "machine": {"nproc": 2, "cpu": "Intel(R) Xeon(R) Processor", "load1": 3.1, ...}}

``params`` say which case the figure belongs to; ``run`` is the same for every line of
one run; ``machine`` includes the one-minute load average when the run started, since
a machine shared with other work gives slower, noisier figures.

``uv run python benchmarks/_emit.py [FILE]`` compares, for every figure in the file,
its latest value with the one measured before it: both values, their runs and loads,
and their ratio.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["Emitter", "add_argument", "compare", "machine"]

DEFAULT = Path(__file__).parent / "results.jsonl"


def machine() -> dict[str, Any]:
    """Where the figures were measured: cores, CPU model, load, Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "load1": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def add_argument(parser: argparse.ArgumentParser) -> None:
    """``--results FILE``: where the benchmark appends its figures."""
    parser.add_argument(
        "--results",
        type=Path,
        default=DEFAULT,
        metavar="FILE",
        help=f"append one JSON line per figure here (default {DEFAULT.name} beside the script)",
    )


class Emitter:
    """Appends a benchmark's figures to a JSON-lines file, one line each."""

    def __init__(self, benchmark: str, path: Path | None = None) -> None:
        self.benchmark, self.path = benchmark, path or DEFAULT
        now = datetime.datetime.now(datetime.UTC)
        self.run = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.machine = machine()
        self.count = 0

    def figure(self, figure: str, value: float | int, unit: str, **params: Any) -> None:
        """Write one figure: its name, value and unit, and the case it measures."""
        line = {
            "benchmark": self.benchmark,
            "figure": figure,
            "value": value,
            "unit": unit,
            "params": params,
            "run": self.run,
            "machine": self.machine,
        }
        with self.path.open("a") as stream:
            stream.write(json.dumps(line, sort_keys=True) + "\n")
        self.count += 1

    def close(self) -> None:
        """Say where the figures went."""
        print(f"{self.count} figures appended to {self.path}", file=sys.stderr)


def compare(lines: Sequence[dict[str, Any]]) -> list[str]:
    """One row per figure (benchmark, figure and params): its latest value beside the one
    measured before it, and their ratio."""
    history: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for line in lines:
        case = json.dumps(line["params"], sort_keys=True)
        history.setdefault((line["benchmark"], line["figure"], case), []).append(line)
    rows = []
    for (benchmark, figure, case), seen in history.items():
        last = seen[-1]
        before = seen[-2] if len(seen) > 1 else None
        old = before["value"] if before else None
        ratio = f"{last['value'] / old:.3f}" if old else "-"
        when = f"{before['run']}, load {before['machine']['load1']}" if before else "-"
        rows.append(
            f"{benchmark} {figure} {case}: {last['value']} {last['unit']} "
            f"({last['run']}, load {last['machine']['load1']}); before: "
            f"{old if old is not None else '-'} ({when}); ratio {ratio}"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison of the latest runs in a results file."""
    parser = argparse.ArgumentParser(description="compare the latest benchmark runs")
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    args = parser.parse_args(argv)
    lines = [json.loads(text) for text in args.file.read_text().splitlines() if text.strip()]
    for row in compare(lines):
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
