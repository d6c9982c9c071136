"""The report of one run over a large history, beside that run's history alone (issue 31).

``uv run python benchmarks/report_one_run.py --history BIG.db --alone ONE.db [--run ID]
[--repeat 5] [--against OTHER/packages/seqera-core/src]``

``seqera report --run ID --json`` as fresh processes, medians of ``--repeat`` of the CPU
seconds each used (user + system, ``getrusage`` of the child) and of their wall seconds,
over ``--history`` (``history_scale.py`` builds one of 10,000,000 rows under ``--work``)
and over ``--alone`` (a history of that run only: the cost a report has whatever the
history holds). With ``--against``, the same commands with that seqera-core source tree
first on ``PYTHONPATH`` (another checkout, main's say), each run in turn with this one's
so both see the same load, and the two JSON documents compared (``generated`` aside):
a speed-up that changes the report is no speed-up. The one-minute load average is
printed at the start and the end: on a shared machine CPU seconds are the steadier
figure, and both grow with the load.

The histories are opened as the report opens them; copy a history that others use
before pointing this at it (opening a file written by an older release upgrades it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _emit import Emitter, add_argument  # noqa: E402

__all__ = ["main"]

_SEQERA = Path(sys.executable).parent / "seqera"


def _children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _report(history: Path, run_id: str, src: str | None, output: Path) -> tuple[float, float]:
    """CPU and wall seconds of one ``seqera report --json`` (``src`` first on the path)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if src is not None:
        env["PYTHONPATH"] = src
    argv = [str(_SEQERA), "report", "--history", str(history), "--run", run_id, "--json",
            "-o", str(output)]  # fmt: skip
    cpu, started = _children(), time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr.decode()[-3000:]}")
    return _children() - cpu, wall


def _document(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    found.pop("generated", None)
    return found


def _load() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, required=True, help="the large history")
    parser.add_argument("--alone", type=Path, required=True, help="the run's history alone")
    parser.add_argument("--run", default="replay-00000-chipseq")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", help="another seqera-core source tree (its src/)")
    add_argument(parser)
    args = parser.parse_args(argv)
    for path in (args.history, args.alone):
        if not path.is_file():
            parser.error(f"--history/--alone: {path} is not a file")
    trees: list[tuple[str, str | None]] = [("this", None)]
    if args.against:
        trees.insert(0, ("against", str(Path(args.against).resolve())))
    emit = Emitter("report_one_run", args.results)
    print(f"load average at the start: {_load():.2f}")
    lines = [
        "| history | code | CPU s (median) | wall s (median) | runs |",
        "|---|---|---|---|---|",
    ]
    different = False
    with tempfile.TemporaryDirectory() as work:
        for label, history in (("large", args.history), ("that run alone", args.alone)):
            taken: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
            for i in range(args.repeat):
                for name, src in trees:  # in turn: each pair sees about the same load
                    out = Path(work) / f"{name}-{label}-{i}.json"
                    taken[name].append(_report(history, args.run, src, out))
            if args.against:
                same = all(_document(Path(work) / f"against-{label}-{i}.json")
                           == _document(Path(work) / f"this-{label}-{i}.json")
                           for i in range(args.repeat))  # fmt: skip
                print(f"{label}: JSON {'the same' if same else 'DIFFERENT'} (generated aside)")
                different |= not same
            for name, _ in trees:
                cpu = statistics.median(c for c, _ in taken[name])
                wall = statistics.median(w for _, w in taken[name])
                lines.append(f"| {label} | {name} | {cpu:.2f} | {wall:.2f} | {args.repeat} |")
                for figure, value in (("cpu", cpu), ("wall", wall)):
                    emit.figure(figure, round(value, 3), "s", history=label, code=name,
                                run=args.run)  # fmt: skip
    print("\n".join(lines))
    print(f"load average at the end: {_load():.2f}")
    emit.close()
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
